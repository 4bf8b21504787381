"""The annotation flow: home, claiming a batch, one response candidate at a time
(htmx swaps only the item panel; every control also works as a plain form), review,
submission and the study's completion page."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from ..errors import ErrorCode
from ..forms import CANNOT_JUDGE, RANK_PREFIX, AnswerForm, RankingForm, item_shown_at
from ..models import Assignment, Judgement, Reflection, Study, stage_wording
from ..protocol import (
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    order_key,
    order_keys,
    selected_categories,
)
from ..selectors import (
    StageStatus,
    annotator_stage_states,
    item_panel_reads,
    stage_tutorial_due,
)
from ..services import (
    AssignmentClosed,
    NoWorkAvailable,
    StageLocked,
    StaleAnswer,
    assignment_claim,
    assignment_submit,
    assignments_expire_overdue,
    judgement_record_item,
    ranking_record,
)
from ..services.crowd import crowd_return_due, crowd_stage_end_early
from ..shortcuts import ITEM_KEYS, LIKERT_KEYS, PAIRWISE_KEYS, RANKING_KEYS, category_keys
from .common import Step, annotator_page, render_with_crowd_return
from .comparison_panel import pair_shown, ranking_rows, review_rows
from .drafts import form_from_draft, item_draft_read
from .likert_panel import likert_rows, likert_summaries


def _assignment(request, assignment_id: int, *, with_context: bool = True) -> Assignment:
    """The signed-in annotator's own assignment (another's is a 404, not a hint)."""
    related = ("stage", "batch__context") if with_context else ("stage",)
    assignment = (
        Assignment.objects.select_related(*related)
        .filter(pk=assignment_id, annotator=request.annotator)
        .first()
    )
    if assignment is None:
        raise Http404("No such batch.")
    return assignment


def _batch_position(assignment: Assignment, study) -> tuple[int, int]:
    """(j, m): this is the annotator's j-th batch of m in the stage."""
    earlier = Assignment.objects.filter(
        annotator_id=assignment.annotator_id,
        stage_id=assignment.stage_id,
        status__in=Assignment.ACTIVE,
        assigned_at__lt=assignment.assigned_at,
    ).count()
    assignment.stage.study = study  # (read with the annotator)
    return earlier + 1, assignment.stage.m


def _first_unanswered(assignment: Assignment, settings) -> int | None:
    """The number of the first item without an answer (a ranking is one item)."""
    answered = set(
        Judgement.objects.filter(assignment=assignment).values_list("reflection_id", "opponent_id")
    )
    missing = [key not in answered for key in order_keys(assignment.order)]
    if settings.ranks_candidates:
        return 1 if any(missing) else None
    return next((n for n, gap in enumerate(missing, start=1) if gap), None)


def _item_count(request, assignment: Assignment) -> int:
    settings = request.study.answer_settings_by_stage[assignment.stage_id]
    return settings.item_count(assignment.order)


def item_panel_questions(study, settings, categories=None, wording=None) -> dict:
    """What the item panel (``_item.html``) asks, for a batch or a practice item: the
    stage's settings, the categories it offers (with their shortcut keys; default: all
    of the study's), scale and wording (``StageWording``; default: the study's)."""
    categories = study.categories_in_order if categories is None else categories
    wording = stage_wording(study, {}) if wording is None else wording
    return {
        "settings": settings,
        "description_min": DESCRIPTION_MIN_LENGTH,
        "description_max": DESCRIPTION_MAX_LENGTH,
        "categories": list(zip(categories, category_keys(len(categories)), strict=True)),
        "keys": ITEM_KEYS,
        "likert_keys": LIKERT_KEYS,
        "cannot_judge": CANNOT_JUDGE,
        "scale": sorted(study.empathy_scale.items()),
        "question": wording.question,
        "description_prompt": wording.description_prompt,
        "statement": study.empathy_statement,
    }


def _item_context(
    request, assignment: Assignment, number: int, form=None, saved=False, conflict=""
) -> dict:
    study = request.study
    # Both read with the annotator: the stage's categories and settings.
    categories = study.categories_by_stage[assignment.stage_id]
    settings = study.answer_settings_by_stage[assignment.stage_id]
    dimensions = study.dimensions_by_stage[assignment.stage_id]
    if settings.ranks_candidates:
        # (An answer form posted to a ranking, not the page's own form: shown anew.)
        ranking = form if isinstance(form, RankingForm) else None
        return _ranking_context(request, assignment, form=ranking, conflict=conflict)
    entry = assignment.order[number - 1]
    key = order_key(entry)
    # The text (a pair's two) and every answer of the batch (the count, and this
    # item's answer).
    (text, opponent_text), answered, draft = item_panel_reads(
        assignment_id=assignment.pk, reflection_id=key[0], opponent_id=key[1], number=number
    )
    reflection = Reflection(pk=key[0], text=text)
    judgement = answered.get(key)
    revision = judgement.revision if judgement is not None else 0
    restored = False
    if form is None:
        form = AnswerForm(
            initial=AnswerForm.initial_from(judgement, categories, dimensions),
            categories=categories,
            settings=settings,
            dimensions=dimensions,
        )
        restored = form_from_draft(form, draft, revision=revision)
    n = len(assignment.order)
    n_answered = len(answered)
    return_to_review = request.GET.get("next") == "review"
    item_url = reverse("studies:item", args=[study.slug, assignment.pk, number])
    return {
        "return_to_review": return_to_review,
        "form_url": f"{item_url}?next=review" if return_to_review else item_url,
        "study": study,
        "assignment": assignment,
        "number": number,
        "n_items": n,
        "n_answered": n_answered,
        "percent": round(100 * n_answered / n),
        "reflection": reflection,
        "form": form,
        **item_panel_questions(
            study, settings, categories, study.wording_by_stage[assignment.stage_id]
        ),
        "likert_rows": likert_rows(form, dimensions) if settings.rates_dimensions else [],
        "pair": pair_shown(entry, text, opponent_text) if settings.compares_pairs else None,
        "pairwise_keys": PAIRWISE_KEYS,
        "saved": saved,
        "conflict": conflict,
        "revision": revision,
        "draft_restored": restored,
        "draft_url": reverse("studies:item_draft", args=[study.slug, assignment.pk, number]),
        # A form shown again (with its errors) keeps the time it was first shown.
        "shown_at": (form.is_bound and form.data.get("shown_at")) or item_shown_at(),
        "previous_url": reverse("studies:item", args=[study.slug, assignment.pk, number - 1])
        if number > 1
        else None,
        "item_url": item_url,
        "review_url": reverse("studies:review", args=[study.slug, assignment.pk]),
    }


def _ranking_context(request, assignment: Assignment, *, form=None, conflict="") -> dict:
    """A ranking stage's one item: every candidate of the batch, with the saved ranks
    (or the form posted with its errors)."""
    study = request.study
    settings = study.answer_settings_by_stage[assignment.stage_id]
    judgements = list(Judgement.objects.filter(assignment=assignment))
    revision = max((j.revision for j in judgements), default=0)
    restored = False
    if form is None:
        form = RankingForm(
            initial=RankingForm.initial_from(judgements),
            candidates=assignment.order,
            settings=settings,
        )
        restored = form_from_draft(form, item_draft_read(assignment=assignment), revision=revision)
    texts = dict(Reflection.objects.filter(pk__in=assignment.order).values_list("id", "text"))
    item_url = reverse("studies:item", args=[study.slug, assignment.pk, 1])
    return_to_review = request.GET.get("next") == "review"
    return {
        "return_to_review": return_to_review,
        "form_url": f"{item_url}?next=review" if return_to_review else item_url,
        "study": study,
        "assignment": assignment,
        "number": 1,
        "n_items": 1,
        "n_answered": 1 if judgements else 0,
        "percent": 100 if judgements else 0,
        "form": form,
        "settings": settings,
        "question": study.wording_by_stage[assignment.stage_id].question,
        "ranking_rows": ranking_rows(form, texts),
        "ranking_keys": RANKING_KEYS,
        "saved": False,
        "conflict": conflict,
        "revision": revision,
        "draft_restored": restored,
        "draft_url": reverse("studies:item_draft", args=[study.slug, assignment.pk, 1]),
        "shown_at": (form.is_bound and form.data.get("shown_at")) or item_shown_at(),
        "previous_url": None,
        "item_url": item_url,
        "review_url": reverse("studies:review", args=[study.slug, assignment.pk]),
    }


def _render_item(request, assignment, number, *, form=None, saved=False, status=200, conflict=""):
    context = _item_context(request, assignment, number, form=form, saved=saved, conflict=conflict)
    if request.htmx:
        response = render(request, "studies/annotate/_item.html", context, status=status)
        response["HX-Push-Url"] = context["item_url"]
        return response
    position, of = _batch_position(assignment, request.study)
    context.update(
        turns=assignment.batch.context.turns,
        last_client=max(
            (i for i, t in enumerate(assignment.batch.context.turns) if t["role"] == "client"),
            default=None,
        ),
        batch_number=position,
        batches_per_stage=of,
    )
    return render(request, "studies/annotate/batch.html", context, status=status)


def _closed(request, assignment: Assignment, status=409) -> HttpResponse:
    template = "studies/annotate/_closed.html" if request.htmx else "studies/annotate/closed.html"
    context = {
        "study": request.study,
        "assignment": assignment,
        "AssignmentStatus": Assignment.Status,
    }
    return render(request, template, context, status=status)


@annotator_page(after=Step.STAGE_QUESTIONNAIRE)
def home(request: HttpRequest) -> HttpResponse:
    annotator, now = request.annotator, timezone.now()
    assignments_expire_overdue(annotator_id=annotator.pk, now=now)
    states = annotator_stage_states(annotator=annotator, now=now)
    if crowd_stage_end_early(annotator=annotator, states=states, now=now):
        return redirect("studies:home", slug=request.study.slug)  # through the gates again
    if states and all(s.passed for s in states):
        return redirect("studies:done", slug=request.study.slug)
    if stage_tutorial_due(annotator=annotator, states=states) is not None:
        return redirect("studies:tutorial", slug=request.study.slug)
    batches = list(
        annotator.assignments.select_related("stage", "batch__context")
        .annotate(n_answered=Count("judgements"))
        .order_by("stage__position", "assigned_at")
    )
    current = next((a for a in batches if a.is_open), None)
    return render_with_crowd_return(
        request,
        "studies/annotate/home.html",
        crowd_return_due(annotator=annotator, states=states, now=now),
        {
            "study": request.study,
            "annotator": annotator,
            "states": states,
            "batches": batches,
            "current": current,
            "next_state": next((s for s in states if not s.passed), None),
            "StageStatus": StageStatus,
            "StudyStatus": Study.Status,
            "AssignmentStatus": Assignment.Status,
        },
    )


@require_POST
@annotator_page(after=Step.STAGE_QUESTIONNAIRE)
def start(request: HttpRequest) -> HttpResponse:
    """Get the annotator's current or next batch from the assignment service."""
    try:
        assignment = assignment_claim(annotator=request.annotator)
    except StageLocked as locked:
        messages.info(request, locked.html)
        return redirect("studies:home", slug=request.study.slug)
    except NoWorkAvailable as exc:
        if exc.code == ErrorCode.STAGES_COMPLETED:
            return redirect("studies:done", slug=request.study.slug)
        if exc.code == ErrorCode.STAGE_TUTORIAL_UNREAD:
            messages.info(request, str(exc))
            return redirect("studies:tutorial", slug=request.study.slug)
        if crowd_stage_end_early(
            annotator=request.annotator,
            states=annotator_stage_states(annotator=request.annotator),
        ):
            return redirect("studies:home", slug=request.study.slug)
        return render(
            request, "studies/annotate/no_work.html", {"study": request.study, "reason": str(exc)}
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("studies:home", slug=request.study.slug)
    return redirect("studies:batch", slug=request.study.slug, assignment_id=assignment.pk)


@annotator_page(after=Step.TRAINING)
def batch(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment(request, assignment_id)
    if not assignment.is_open:
        return _closed(request, assignment, status=200)
    number = _first_unanswered(
        assignment, request.study.answer_settings_by_stage[assignment.stage_id]
    )
    if number is None:
        return redirect("studies:review", slug=request.study.slug, assignment_id=assignment.pk)
    return redirect("studies:item", request.study.slug, assignment.pk, number)


@annotator_page(after=Step.TRAINING)
def item(request: HttpRequest, assignment_id: int, number: int) -> HttpResponse:
    if request.method == "POST":
        return _item_save(request, assignment_id, number)
    assignment = _assignment(request, assignment_id, with_context=not request.htmx)
    if not 1 <= number <= _item_count(request, assignment):
        raise Http404("No such response candidate.")
    if not assignment.accepts_answers(timezone.now()):
        return _closed(request, assignment, status=200)
    return _render_item(request, assignment, number, saved=bool(request.GET.get("saved")))


def _item_save(request: HttpRequest, assignment_id: int, number: int) -> HttpResponse:
    """Save the answer to item ``number``; then the next item (htmx: its panel), or the
    review after the last one. The hot path of the site: the service reads, checks and
    locks the assignment in one query, so a valid answer costs no read beforehand."""
    if any(key.startswith(RANK_PREFIX) for key in request.POST):
        return _ranking_save(request, assignment_id, number)
    # Read with the annotator: what each stage asks and offers.
    settings_by_stage = request.study.answer_settings_by_stage
    categories_by_stage = request.study.categories_by_stage
    dimensions_by_stage = request.study.dimensions_by_stage
    # The stages' settings and categories are checked here when they agree (a Likert
    # stage's dimensions when it is the only stage), else by the save (against the
    # assignment's stage).
    distinct = set(settings_by_stage.values())
    offered = {tuple(c.pk for c in cs) for cs in categories_by_stage.values()}
    settings = distinct.pop() if len(distinct) == 1 else None
    if settings is not None and settings.rates_dimensions and len(settings_by_stage) > 1:
        settings = None  # the stages may rate different dimensions
    form = AnswerForm(
        request.POST,
        categories=next(iter(categories_by_stage.values()))
        if len(offered) == 1
        else request.study.categories_in_order,
        settings=settings,
        dimensions=list({d.name: d for ds in dimensions_by_stage.values() for d in ds}.values()),
    )
    if not form.is_valid():
        assignment = _assignment(request, assignment_id, with_context=not request.htmx)
        if not 1 <= number <= _item_count(request, assignment):
            raise Http404("No such response candidate.")
        if not assignment.accepts_answers(timezone.now()):
            return _closed(request, assignment)
        return _render_item(request, assignment, number, form=form, status=422)
    try:
        assignment, _ = judgement_record_item(
            annotator_id=request.annotator.pk,
            assignment_id=assignment_id,
            number=number,
            answer=form.answer(),
            categories_by_stage={
                stage_id: {c.slug: c.bit for c in categories}
                for stage_id, categories in categories_by_stage.items()
            },
            settings_by_stage=settings_by_stage,
            dimensions_by_stage=dimensions_by_stage,
            expected_revision=form.cleaned_data.get("revision"),
        )
    except Assignment.DoesNotExist:
        raise Http404("No such response candidate.") from None
    except AssignmentClosed:
        return _closed(request, _assignment(request, assignment_id))
    except StaleAnswer as exc:
        # Show what is saved now, with the message; nothing was written.
        assignment = _assignment(request, assignment_id, with_context=not request.htmx)
        return _render_item(request, assignment, number, status=409, conflict=exc.messages[0])
    except ValidationError as exc:
        assignment = _assignment(request, assignment_id, with_context=not request.htmx)
        form.add_answer_errors(exc)
        return _render_item(request, assignment, number, form=form, status=422)
    if number < len(assignment.order) and request.GET.get("next") != "review":
        if request.htmx:
            return _render_item(request, assignment, number + 1, saved=True)
        url = reverse("studies:item", args=[request.study.slug, assignment.pk, number + 1])
        # Straight to the next candidate: the conversation above it was read already.
        return redirect(f"{url}?saved=1#item-panel")
    return _to_review(request, assignment)


def _to_review(request, assignment: Assignment) -> HttpResponse:
    review = reverse("studies:review", args=[request.study.slug, assignment.pk])
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = review
        return response
    return redirect(review)


def _ranking_save(request: HttpRequest, assignment_id: int, number: int) -> HttpResponse:
    """Save a ranking stage's answer, the whole ranking (``ranking_record``, which
    checks it against the assignment's candidates and stage under its lock); then the
    review. The assignment is read first only to show a refusal."""
    if number != 1:
        raise Http404("No such response candidate.")
    posted = [key.removeprefix(RANK_PREFIX) for key in request.POST if key.startswith(RANK_PREFIX)]
    candidates = [int(rid) for rid in posted if rid.isdigit()]
    form = RankingForm(request.POST, candidates=candidates, settings=None)
    if len(candidates) != len(posted) or not form.is_valid():
        return _ranking_refused(request, assignment_id, status=422)
    try:
        assignment, _ = ranking_record(
            annotator_id=request.annotator.pk,
            assignment_id=assignment_id,
            ranks=form.cleaned_data["ranks"],
            settings_by_stage=request.study.answer_settings_by_stage,
            seconds_spent=form.cleaned_data.get("seconds_spent"),
            expected_revision=form.cleaned_data.get("revision"),
        )
    except Assignment.DoesNotExist:
        raise Http404("No such batch.") from None
    except AssignmentClosed:
        return _closed(request, _assignment(request, assignment_id))
    except StaleAnswer as exc:
        return _ranking_refused(request, assignment_id, status=409, conflict=exc.messages[0])
    except ValidationError as exc:
        return _ranking_refused(request, assignment_id, status=422, errors=exc.messages)
    return _to_review(request, assignment)


def _ranking_refused(
    request, assignment_id: int, *, status: int, conflict: str = "", errors=()
) -> HttpResponse:
    """The ranking page again after a refused save: the posted ranks with the
    refusal (checked against the assignment's candidates and stage), or, after a
    conflict, the saved ranking."""
    assignment = _assignment(request, assignment_id, with_context=not request.htmx)
    settings = request.study.answer_settings_by_stage[assignment.stage_id]
    if not settings.ranks_candidates:
        raise Http404("No such response candidate.")
    if not assignment.accepts_answers(timezone.now()):
        return _closed(request, assignment)
    form = None
    if not conflict:
        form = RankingForm(request.POST, candidates=assignment.order, settings=settings)
        form.is_valid()
        for message in errors:
            if message not in form.non_field_errors():
                form.add_error(None, message)
    return _render_item(request, assignment, 1, form=form, status=status, conflict=conflict)


@annotator_page(after=Step.TRAINING)
def review(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment(request, assignment_id)
    if not assignment.is_open:
        return _closed(request, assignment, status=200)
    error = None
    if request.method == "POST":
        try:
            assignment_submit(assignment=assignment)
        except ValidationError as exc:
            assignment.refresh_from_db()
            if not assignment.is_open and assignment.submitted_at is None:
                return _closed(request, assignment)
            error = " ".join(exc.messages)
        else:
            messages.success(request, "Thank you: your batch is submitted.")
            return redirect("studies:home", slug=request.study.slug)
    categories = {c.bit: c.label for c in request.study.categories_in_order}
    settings = request.study.answer_settings_by_stage[assignment.stage_id]
    compared = review_rows(assignment, settings, request.study.slug)
    if compared is not None:
        return _review_page(request, assignment, compared, error)
    scale = request.study.empathy_scale
    judgements = {j.reflection_id: j for j in Judgement.objects.filter(assignment=assignment)}
    texts = dict(Reflection.objects.filter(pk__in=assignment.order).values_list("id", "text"))
    rated = (
        likert_summaries(assignment, request.study.dimensions_by_stage[assignment.stage_id])
        if settings.rates_dimensions
        else {}
    )
    rows = []
    for number, rid in enumerate(assignment.order, start=1):
        j = judgements.get(rid)
        summary = None
        if j is not None and settings.rates_dimensions:
            summary = rated.get(j.pk, "")
        elif j is not None and j.coherent:
            summary = "Yes"
            if settings.empathy_after_yes:
                summary += f" — {scale.get(j.empathy, 'no rating')}"
        elif j is not None:
            chosen = selected_categories(j.error_flags, sorted(categories.items()))
            summary = "No"
            if chosen:
                summary += " — " + ", ".join(chosen)
            if len(chosen) > 1 and j.most_evident_bit is not None:
                summary += f" (most evident: {categories.get(j.most_evident_bit)})"
        rows.append(
            {
                "number": number,
                "text": texts[rid],
                "summary": summary,
                "description": j.error_description if j is not None else "",
                "url": reverse("studies:item", args=[request.study.slug, assignment.pk, number])
                + "?next=review",
            }
        )
    return _review_page(request, assignment, rows, error)


def _review_page(request, assignment: Assignment, rows: list[dict], error) -> HttpResponse:
    settings = request.study.answer_settings_by_stage[assignment.stage_id]
    return render(
        request,
        "studies/annotate/review.html",
        {
            "study": request.study,
            "assignment": assignment,
            "rows": rows,
            "settings": settings,
            "complete": all(r["summary"] for r in rows),
            "n_missing": sum(1 for r in rows if not r["summary"]),
            "error": error,
        },
        status=422 if error else 200,
    )


@annotator_page(after=Step.STAGE_QUESTIONNAIRE)
def done(request: HttpRequest) -> HttpResponse:
    annotator = request.annotator
    states = annotator_stage_states(annotator=annotator)
    if crowd_stage_end_early(annotator=annotator, states=states):
        return redirect("studies:home", slug=request.study.slug)  # through the gates again
    finished = bool(states) and all(s.passed for s in states)
    return render_with_crowd_return(
        request,
        "studies/annotate/done.html",
        crowd_return_due(annotator=annotator, states=states),
        {"study": request.study, "annotator": annotator, "finished": finished},
    )
