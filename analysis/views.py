"""The researcher's dashboard of a study (interfaces only): progress, the latest
analysis as tables and figures, and re-running the analysis with live progress.

For the roles of the study: the page and its aggregates for roles that may see the
study (``Capability.SEE``); running the analysis, computing scores and the report's
downloads for those that may run and download analyses (``ANALYSE``); the exports'
links for those that may read rows (``READ_ROWS``). A control is shown only to whom may
use it. Pages render with htmx partials when ``request.htmx`` and work as plain forms
and links without JavaScript (POST/redirect/GET).
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from studies.models import Study
from studies.permissions import Capability, user_may
from studies.selectors import study_progress
from studies.views.common import staff_page

from .computed_scores import automatic_scores_compute_enqueue, scores_compute_notice
from .explanations import EXPLANATIONS, glossary
from .forms import ComputeScoresForm, RunParametersForm
from .models import AnalysisRun
from .plots import PLOTS
from .selectors.judgements import annotator_ids_by_pseudonym, automatic_evaluators_list
from .services import analysis_run_enqueue, tasks_run_in_process
from .tables import nothing_counted, quality_table, report_tables

RUNS_LISTED = 20
ACTIVE = (AnalysisRun.Status.QUEUED, AnalysisRun.Status.RUNNING)


def _runs(study: Study) -> list[AnalysisRun]:
    """The study's latest runs, newest first, without their (large) reports."""
    return list(
        AnalysisRun.objects.filter(study=study)
        .defer("result")
        .order_by("-created_at", "-pk")[:RUNS_LISTED]
    )


def _newest(study: Study) -> AnalysisRun | None:
    return (
        AnalysisRun.objects.filter(study=study)
        .defer("result")
        .order_by("-created_at", "-pk")
        .first()
    )


def _shown_run(study: Study, run_id) -> AnalysisRun | None:
    """The run whose report the page shows: the one asked for, else the newest done."""
    done = AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE).select_related(
        "requested_by"
    )
    if run_id:
        try:
            return done.get(pk=int(run_id))
        except (ValueError, AnalysisRun.DoesNotExist):
            raise Http404("No finished analysis run with this number.") from None
    return done.order_by("-created_at", "-pk").first()


def _status_context(study: Study, run: AnalysisRun | None, *, shown_id=None, follow=False):
    return {
        "study": study,
        "run": run,
        "active": run is not None and run.status in ACTIVE,
        "shown_id": shown_id,
        "follow": follow,
        # In Celery's eager mode (tests that ask for it) a run is computed within the
        # request itself.
        "runs_in_process": tasks_run_in_process(),
        "newer_report": run is not None
        and run.status == AnalysisRun.Status.DONE
        and run.pk != shown_id,
    }


def _form(study: Study, run: AnalysisRun | None) -> RunParametersForm:
    """The re-run form, starting from the parameters of ``run`` (the report shown)."""
    initial = None
    if run is not None:
        initial = {
            key: run.parameters.get(key)
            for key in (
                "excluded_sources",
                "include_expired",
                "bootstrap_resamples",
                "seed",
                "crossed_settings",
            )
            if key in run.parameters
        }
    return RunParametersForm(study=study, initial=initial)


FIGURES = {
    # figure: (caption, the table it follows)
    "agreement": (
        "Agreement on coherent / incoherent with 95% confidence intervals, over the "
        "Landis & Koch bands.",
        "agreement",
    ),
    "label-distribution": (
        "Label distribution per group × stage, human vs synthetic reflections "
        "(Okabe–Ito colour-blind-safe palette).",
        "label-distribution",
    ),
    "annotators": (
        "Per-annotator consistency: same answer on recurring human reflections, and the "
        "coherent share of non-recurring ones per stage.",
        "annotators",
    ),
    "agreement-over-time": (
        "Fleiss' and Randolph's kappa over the judgements submitted up to each day: "
        "lines that flatten mean agreement is settling.",
        "agreement-over-time",
    ),
    "systems": (
        "Coherent share per system (a source in a stage) and group, with 95% bootstrap "
        "intervals: systems whose intervals do not overlap differ clearly; the pairs table "
        "below tests every pair.",
        "systems",
    ),
    "description-codes": (
        "Codes of the descriptions per source (primary coder): a description may carry "
        "several codes, so a bar can pass 100%.",
        "description-codes",
    ),
    "likert": (
        "Likert ratings per dimension: the share of each point per group and system "
        "(light to dark, lowest to highest), or on a slider the mean with its 95% interval "
        "and the median.",
        "likert",
    ),
    "pairwise-wins": (
        "Pairwise preference: per group and stage, how often each system (row) was "
        "preferred to each other (column), ties left out; blue above an even split, orange "
        "below.",
        "pairwise",
    ),
    "pairwise-strengths": (
        "Bradley–Terry strengths per group and stage with 95% bootstrap intervals "
        "resampling contexts: the higher, the more often preferred.",
        "pairwise-strengths",
    ),
    "generation-mee": (
        "Majority most evident error per generation setting: of each value's items whose "
        "majority said incoherent, the share per error named most evident, and with none.",
        "generation-mee",
    ),
    "generation-crossed": (
        "Label distribution per combination of the settings the run crossed.",
        "generation-crossed",
    ),
    "order-positions": (
        "Coherent share by the position an item was seen at in the annotator's shuffled "
        "batch: a steady share means no order effect.",
        "order-positions",
    ),
}


def _report_blocks(
    study: Study, run: AnalysisRun, tables, *, downloads: bool
) -> list[tuple[str, object]]:
    """The report's tables in reading order, each figure after the table it belongs to
    (with its download links when ``downloads``)."""
    report = run.result
    svgs = {name: plot(report) for name, plot in PLOTS.items()}
    after: dict[str, list[dict]] = {}
    for name, (caption, table) in FIGURES.items():
        url = reverse("analysis:plot_svg", args=[study.slug, run.pk, name])
        figure = {
            "slug": name,
            "svg": svgs[name],
            "caption": caption,
            "downloads": downloads,
            "svg_url": url,
            "download_url": f"{url}?download=1",
            "png_name": f"{study.slug}-{run.pk}-{name}.png",
            "more": [("By source (SVG)", f"{url}?by=source")]
            if name == "label-distribution"
            else [],
        }
        after.setdefault(table, []).append(figure)
    blocks: list[tuple[str, object]] = []
    for table in tables:
        blocks.append(("table", table))
        blocks.extend(("figure", figure) for figure in after.get(table.slug, []))
    return blocks


@require_GET
@staff_page(may=Capability.SEE)
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    return _render_dashboard(request, request.study)


def _export_links(study: Study, shown: AnalysisRun | None) -> list[tuple[str, str]]:
    url = reverse("studies:export", args=[study.slug])
    return [
        (f"{url}?format=published", "Published format (one row per reflection and annotator)"),
        (f"{url}?format=published&extended=1", "Published format with group, MEE and empathy"),
        (f"{url}?format=full", "Full audit format (attention checks included)"),
        (_items_url(study, shown), "Item level: one row per item and group, as analysed"),
    ]


def _items_url(study: Study, run: AnalysisRun | None) -> str:
    """The item-level CSV of the judgements ``run``'s report analysed (default
    parameters without a run)."""
    query = [
        ("exclude_source", name)
        for name in (run.parameters if run else {}).get("excluded_sources", [])
    ]
    if run is not None and run.parameters.get("include_expired"):
        query.append(("include_expired", "1"))
    url = reverse("analysis:items_csv", args=[study.slug])
    return f"{url}?{urlencode(query)}" if query else url


def _batches_links(study: Study) -> dict[str, str]:
    """Pseudonym → the admin list of the annotator's batches, where a researcher
    reviews and rejects them (the rejection service)."""
    url = reverse("admin:studies_assignment_changelist")
    ids = annotator_ids_by_pseudonym(study_id=study.pk)
    return {name: f"{url}?{urlencode({'annotator__id__exact': pk})}" for name, pk in ids.items()}


def _scores_context(request, study: Study, form=None) -> dict:
    return {
        "study": study,
        "evaluators": automatic_evaluators_list(study_id=study.pk),
        "scores_form": form if form is not None else ComputeScoresForm(),
        "can_compute": user_may(request.user, study, Capability.ANALYSE),
    }


def _render_dashboard(
    request, study: Study, *, form=None, scores_form=None, status: int = 200
) -> HttpResponse:
    shown = _shown_run(study, request.GET.get("run"))
    runs = _runs(study)
    newest = runs[0] if runs else None
    report = shown.result if shown is not None else None
    tables = report_tables(report) if shown is not None else []
    may_read_rows = user_may(request.user, study, Capability.READ_ROWS)
    may_analyse = user_may(request.user, study, Capability.ANALYSE)
    if shown is not None:
        links = _batches_links(study) if may_read_rows else {}
        tables = [quality_table(report, links) if t.slug == "quality" else t for t in tables]
    done_runs = [r for r in runs if r.status == AnalysisRun.Status.DONE]
    if shown is not None and shown.pk not in {r.pk for r in done_runs}:
        done_runs.append(shown)  # an older run asked for by number
    context = {
        "study": study,
        "progress": study_progress(study=study),
        "runs": runs,
        "done_runs": done_runs,
        "shown": shown,
        "report": report,
        "nothing_counted": nothing_counted(report) if report is not None else None,
        "blocks": _report_blocks(study, shown, tables, downloads=may_analyse)
        if shown is not None
        else [],
        "help": EXPLANATIONS,
        "form": form if form is not None else _form(study, shown),
        "can_run": may_analyse,
        # The report's downloads (JSON, tables, figures) and the admin's list of runs.
        "can_download": may_analyse,
        "glossary": glossary(),
        "table_downloads": [
            (reverse("analysis:table_csv", args=[study.slug, shown.pk, table.slug]), table)
            for table in tables
        ]
        if may_analyse
        else [],
        # The exports are rows of judgements; the rest of the page is aggregates.
        "exports": _export_links(study, shown) if may_read_rows else [],
        **_scores_context(request, study, scores_form),
        **_status_context(study, newest, shown_id=shown.pk if shown else None),
    }
    return render(request, "analysis/dashboard.html", context, status=status)


@require_POST
@staff_page(may=Capability.ANALYSE)
def run_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue a run with the form's parameters (nothing is queued on bad ones). htmx
    gets the run panel back, polling the new run; a plain form is redirected to the
    dashboard."""
    study = request.study
    form = RunParametersForm(request.POST, study=study)
    if not form.is_valid():
        if request.htmx:
            context = {
                "study": study,
                "form": form,
                "can_run": True,
                **_status_context(study, _newest(study)),
            }
            return render(request, "analysis/_run_panel.html", context, status=422)
        return _render_dashboard(request, study, form=form, status=422)
    run = analysis_run_enqueue(
        study=study, parameters=form.cleaned_data["parameters"], user=request.user
    )
    if request.htmx:
        run.refresh_from_db()  # in eager mode the run has already been computed
        context = {
            "study": study,
            "form": _form(study, run),
            "can_run": True,
            **_status_context(study, run, follow=True),
        }
        response = render(request, "analysis/_run_panel.html", context)
        if run.status == AnalysisRun.Status.DONE:
            response["HX-Redirect"] = _report_url(study, run)
        return response
    messages.success(request, f"Analysis #{run.pk} queued.")
    return redirect("analysis:dashboard", slug=study.slug)


@require_POST
@staff_page(may=Capability.ANALYSE)
def scores_compute(request: HttpRequest, slug: str) -> HttpResponse:
    """Compute BLEU-4 / ROUGE-L scores on the worker (nothing is queued when refused).
    htmx gets the scores panel back; a plain form is redirected to the dashboard."""
    study = request.study
    form = ComputeScoresForm(request.POST)
    metrics = None
    if form.is_valid():
        try:
            metrics = automatic_scores_compute_enqueue(
                study=study,
                metrics=form.cleaned_data["metrics"],
                replace=form.cleaned_data["replace"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
    if metrics is None:
        if request.htmx:
            context = _scores_context(request, study, form)
            return render(request, "analysis/_scores_panel.html", context, status=422)
        return _render_dashboard(request, study, scores_form=form, status=422)
    notice = scores_compute_notice(metrics)
    if request.htmx:
        context = {**_scores_context(request, study), "notice": notice}
        return render(request, "analysis/_scores_panel.html", context)
    messages.success(request, notice)
    return redirect(reverse("analysis:dashboard", args=[study.slug]) + "#scores")


def _report_url(study: Study, run: AnalysisRun) -> str:
    return reverse("analysis:dashboard", args=[study.slug]) + f"?run={run.pk}#report"


@require_GET
@staff_page(may=Capability.SEE)
def run_status(request: HttpRequest, slug: str) -> HttpResponse:
    """The newest run's status, polled every 2 s while it is queued or running. When
    the run the page started (``follow``) is done, the whole page goes to its report."""
    study = request.study
    run = _newest(study)
    try:
        shown_id = int(request.GET.get("shown") or 0) or None
    except ValueError:
        shown_id = None
    follow = request.GET.get("follow") == "1"
    response = render(
        request,
        "analysis/_run_status.html",
        _status_context(study, run, shown_id=shown_id, follow=follow),
    )
    if follow and run is not None and run.status == AnalysisRun.Status.DONE and request.htmx:
        response["HX-Redirect"] = _report_url(study, run)
    return response
