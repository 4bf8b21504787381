"""`make demo` serves a study with judgements of both groups in both stages, one
annotator still to start, and an analysis run, so the dashboard shows figures."""

import html
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Count
from django.templatetags.static import static
from django.urls import reverse

from analysis.models import AnalysisRun
from studies.exports.options import FILES
from studies.models import Annotator, Assignment, BatchItem, Judgement, LikertRating, Study
from studies.services import (
    annotator_complete_tutorial,
    annotator_consent,
    assignment_claim,
    consent_version_current,
)
from tests.conftest import module_transaction


@pytest.fixture(scope="module")
def demo_of_the_module(django_db_setup, django_db_blocker) -> str:
    """`load_demo` run once for the tests that only use the demo it leaves (see
    :func:`tests.conftest.module_transaction`); what it printed. The first test
    runs the command itself, as users do."""
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            out = StringIO()
            call_command("load_demo", "--force", stdout=out)
        yield out.getvalue()


@pytest.fixture
def demo(db, demo_of_the_module) -> str:
    """What `load_demo` printed; the demo it left is in the database."""
    return demo_of_the_module


def test_the_demo_has_simulated_judgements_of_both_groups_in_both_stages(db):
    out = StringIO()
    call_command("load_demo", "--force", stdout=out)
    study = Study.objects.get(slug="demo")
    cells = set(
        Assignment.objects.filter(stage__study=study, status=Assignment.Status.SUBMITTED)
        .values_list("group__name", "stage__position")
        .annotate(n=Count("pk"))
        .values_list("group__name", "stage__position")
    )
    assert cells == {("Layperson", 1), ("Layperson", 2), ("Expert", 1), ("Expert", 2)}
    # Through the services: every answered item has its time, every batch is whole.
    judgements = Judgement.objects.filter(assignment__stage__study=study)
    assert judgements.count() > 200
    assert not judgements.filter(seconds_spent__isnull=True).exists()
    for assignment in Assignment.objects.filter(stage__study=study):
        assert assignment.judgements.count() == len(assignment.order)
        assert assignment.attention_passed is True
    # The waiting period between stages held for every simulated annotator.
    for annotator in Annotator.objects.filter(study=study, consented_at__isnull=False):
        done = {a.stage.position: a for a in annotator.assignments.select_related("stage")}
        first = max(a.submitted_at for a in annotator.assignments.all() if a.stage.position == 1)
        second = min(a.assigned_at for a in annotator.assignments.all() if a.stage.position == 2)
        assert second - first >= study.stages.get(position=2).min_wait, done
    run = AnalysisRun.objects.get(study=study)
    assert run.status == AnalysisRun.Status.DONE
    assert set(run.result["groups"]) == {"Layperson", "Expert"}
    printed = out.getvalue()
    assert "Analysis run #" in printed and "/dashboard/demo/" in printed


def test_one_demo_annotator_is_still_to_start_and_gets_a_batch(demo):
    newcomer = Annotator.objects.get(study__slug="demo", consented_at__isnull=True)
    assert newcomer.pseudonym == "Layperson 4"
    assert not newcomer.assignments.exists()
    assert "Layperson 4" in [
        line.split()[0] + " " + line.split()[1]
        for line in demo.splitlines()
        if "not started yet" in line
    ]
    annotator_consent(annotator=newcomer, version=consent_version_current(study=newcomer.study))
    annotator_complete_tutorial(annotator=newcomer)
    assert assignment_claim(annotator=newcomer).stage.position == 1


def test_the_demo_dashboard_shows_figures_at_once(admin_client, demo):
    page = admin_client.get(reverse("analysis:dashboard", args=["demo"])).content.decode()
    assert "<svg" in page
    assert "Label distribution per group and stage" in page


def test_loading_the_demo_again_adds_no_judgements_and_no_run(demo):
    before = (Judgement.objects.count(), AnalysisRun.objects.count())
    call_command("load_demo", "--force", stdout=StringIO())
    assert (Judgement.objects.count(), AnalysisRun.objects.count()) == before


def test_the_demo_consent_page_names_the_contact_once(client, demo):
    newcomer = Annotator.objects.get(study__slug="demo", consented_at__isnull=True)
    client.get(reverse("studies:invitation", args=[newcomer.access_token]))
    page = client.get(reverse("studies:consent", args=["demo"])).content.decode()
    assert page.count("Contact:") == 1
    assert page.count("research-team@example.org") == 2  # the link's address and text


def test_the_run_panel_says_how_a_run_is_computed(admin_client, db, settings):
    call_command("load_demo", "--force", "--no-judgements", stdout=StringIO())
    url = reverse("analysis:dashboard", args=["demo"])
    settings.CELERY_TASK_ALWAYS_EAGER = True  # eager mode
    assert "Computed at once, before the page comes back" in admin_client.get(url).content.decode()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    page = admin_client.get(url).content.decode()
    assert "Computed in the background; this page follows its progress." in page


def _downloads(page: str) -> set[str]:
    """The download links of a page: files of the study, not other pages or the site's
    own static files."""
    links = {html.unescape(href) for href in re.findall(r'href="([^"#]+)"', page)}
    links = {link for link in links if not link.startswith(static(""))}
    return {link for link in links if re.search(r"\.(csv|json|svg)(\?|$)", link)}


def test_the_quick_start_demo_has_a_finished_run_and_every_download_answers(admin_client, demo):
    """What `make demo` leaves, on the settings a fresh checkout runs with: a run that
    finished with its tables, and every file the dashboard and the export page offer."""
    study = Study.objects.get(slug="demo")
    run = AnalysisRun.objects.get(study=study)
    assert run.status == AnalysisRun.Status.DONE, run.error
    page = admin_client.get(reverse("analysis:dashboard", args=["demo"])).content.decode()
    downloads = _downloads(page)
    tables = {url for url in downloads if f"/runs/{run.pk}/" in url and url.endswith(".csv")}
    assert len(tables) >= 10, sorted(downloads)  # the report's tables, one file each
    assert any(".svg?" in url for url in downloads)  # the figures
    assert any("format=full" in url for url in downloads)  # the full audit export
    # The export page's forms: every format in every kind of file.
    export_page = admin_client.get(reverse("admin:studies_study_export", args=[study.pk]))
    assert export_page.status_code == 200
    annotations = reverse("studies:export", args=["demo"])
    answers = reverse("studies:export_questionnaires", args=["demo"])
    for file in FILES:
        downloads.add(f"{answers}?file={file}")
        for format in ("published", "full", "training"):
            downloads.add(f"{annotations}?format={format}&file={file}")
    for url in sorted(downloads):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if "file=jsonl" in url and not body:
            # JSON Lines has no header: an empty file means no rows, as its CSV must show.
            csv = admin_client.get(url.replace("file=jsonl", "file=csv"))
            csv_body = b"".join(csv.streaming_content) if csv.streaming else csv.content
            assert len(csv_body.splitlines()) == 1, url
        else:
            assert body, url


def test_the_demo_has_a_likert_study_whose_dashboard_shows_the_ratings(admin_client, demo):
    study = Study.objects.get(slug="demo-likert")
    assert {s.instrument for s in study.stages.all()} == {"likert"}
    ratings = LikertRating.objects.filter(judgement__assignment__stage__study=study)
    cells = set(
        ratings.values_list(
            "judgement__assignment__group__name",
            "judgement__assignment__stage__position",
            "dimension__name",
        ).distinct()
    )
    assert cells == {
        (group, position, name)
        for group in ("Layperson", "Expert")
        for position in (1, 2)
        for name in ("fluency", "warmth")
    }
    assert ratings.filter(cannot_judge=True).exists()
    assert not Assignment.objects.filter(stage__study=study, attention_passed=False).exists()
    run = AnalysisRun.objects.get(study=study, status=AnalysisRun.Status.DONE)
    assert run.result["likert"]["between_groups"]
    page = admin_client.get(reverse("analysis:dashboard", args=[study.slug])).content.decode()
    for caption in ("Likert ratings", "Likert ratings: pairs of systems per group"):
        assert caption in page
    assert reverse("analysis:dashboard", args=[study.slug]) in demo


def test_the_demo_has_a_comparison_study_whose_dashboard_shows_both(admin_client, demo):
    study = Study.objects.get(slug="demo-comparisons")
    assert [s.instrument for s in study.stages.order_by("position")] == ["pairwise", "ranking"]
    pairs = Judgement.objects.filter(assignment__stage__study=study, opponent__isnull=False)
    ranks = Judgement.objects.filter(assignment__stage__study=study, rank__isnull=False)
    assert pairs.exists() and ranks.exists()
    # Pairs of three systems, sampled: six per context plus the attention pair.
    first = study.stages.get(position=1)
    assert {len(a.order) for a in Assignment.objects.filter(stage=first)} == {7}
    assert not Assignment.objects.filter(stage__study=study, attention_passed=False).exists()
    run = AnalysisRun.objects.get(study=study, status=AnalysisRun.Status.DONE)
    cell = run.result["pairwise"]["cells"]["Expert"]["Pairwise stage"]
    assert set(cell["strengths"]) == {"Human", "GPT-2", "GPT-3"}
    # The simulated lean: the human reflection strongest, GPT-2 weakest.
    strengths = {s: e["strength"] for s, e in cell["strengths"].items()}
    assert strengths["Human"] > strengths["GPT-3"] > strengths["GPT-2"]
    assert run.result["ranking"]["cells"]["Expert"]["Ranking stage"]["systems"]
    page = admin_client.get(reverse("analysis:dashboard", args=[study.slug])).content.decode()
    for caption in ("Pairwise preference: pairs of systems", "Ranking: mean rank per system"):
        assert caption in page
    assert reverse("analysis:dashboard", args=[study.slug]) in demo


def test_the_demo_has_a_gated_study_whose_experts_saw_only_what_passed(admin_client, demo):
    """Laypeople judged every lay batch (three each); the experts' stages hold only the
    items their gates let through, and the dashboard shows the gated tables."""
    study = Study.objects.get(slug="demo-gated")
    first, good, adjudication = study.stages.order_by("position")
    lay_batches = Assignment.objects.filter(stage=first, status=Assignment.Status.SUBMITTED)
    assert lay_batches.count() == 3 * first.batches.count()
    assert set(lay_batches.values_list("group__name", flat=True)) == {"Layperson"}
    for stage in (good, adjudication):
        gate = stage.gate
        passed = set(gate.decisions.filter(passed=True).values_list("reflection_id", flat=True))
        assert gate.decisions.count() == first.batches.count() * 4  # every item decided
        shown = set(
            BatchItem.objects.filter(batch__stage=stage)
            .exclude(reflection__kind="attention_check")
            .values_list("reflection_id", flat=True)
        )
        assert shown == passed and shown
        experts = Assignment.objects.filter(stage=stage, status=Assignment.Status.SUBMITTED)
        assert set(experts.values_list("group__name", flat=True)) == {"Expert"}
    run = AnalysisRun.objects.get(study=study, status=AnalysisRun.Status.DONE)
    entries = {e["stage"]: e for e in run.result["gated"]["stages"]}
    assert entries["Good reflection"]["undecided"] == 0
    assert entries["Good reflection"]["by_strength"]
    page = admin_client.get(reverse("analysis:dashboard", args=[study.slug])).content.decode()
    assert "Gated stages: the items their gates let through" in page
    assert reverse("analysis:dashboard", args=[study.slug]) in demo


def test_every_table_of_the_papers_is_filled_on_the_demo(admin_client, demo):
    run = AnalysisRun.objects.filter(study__slug="demo", status=AnalysisRun.Status.DONE).get()
    report = run.result
    assert report["parameters"]["crossed_settings"] == ["decoding", "complexity"]
    assert report["workload"] and report["order_effects"]
    assert all(stage for stage in report["generation_crossed"].values())
    # GPT-2's nucleus p takes four values: a trend per group.
    trends = {g: stages for g, stages in report["generation_trends"].items()}
    assert all("p" in stages["GPT-2 stage"] for stages in trends.values())
    variants = next(iter(report["generation_settings"].values()))
    assert any(
        "majority_mee_variants" in entry
        for stage in variants.values()
        for values in stage.values()
        for entry in values.values()
    )
    pay = report["pay"]
    assert {(c["group"], c["unit"]) for c in pay["cells"]} == {
        ("Layperson", "batch"),
        ("Expert", "hour"),
    }
    assert pay["totals"]["GBP"] > 0
    assert all(group["annotators_pooled"] for group in report["groups"].values())
    page = admin_client.get(reverse("analysis:dashboard", args=["demo"])).content.decode()
    for caption in (
        "Workload per group and stage",
        "Order effects",
        "Coherence along a numeric generation setting",
        "Label distribution per combination of generation settings",
        "Majority most evident error per generation setting, consensus-adjusted and merged",
        "Pay: cost and hourly rate earned",
    ):
        assert caption in page, caption
