"""The training quiz's pages: the introduction and each attempt's result
(``training``), and one practice item at a time in the batches' item panel, with its
feedback once answered (``training_item``). The rules live in
``studies.services.training``."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from ..errors import ErrorCode
from ..forms import AnswerForm, item_shown_at
from ..models import TrainingAnswer, TrainingAttempt, TrainingItem
from ..protocol import selected_categories
from ..selectors.training import TrainingStatus
from ..services.training import (
    TrainingRefused,
    training_answer_record,
    training_answer_settings,
    training_answer_target,
    training_attempt_items,
    training_attempt_size,
    training_attempt_start,
    training_categories,
    training_next_attempt_is_new,
    training_next_number,
    training_outcome,
    training_reveals_answers,
    training_screen_out,
    training_wording,
)
from .annotate import item_panel_questions
from .common import Step, annotator_page, render_with_crowd_return

REFUSAL_STATUS = {ErrorCode.NO_SUCH_PRACTICE_ITEM: 404, ErrorCode.NO_QUIZ: 404}


def _refused(request, refusal: TrainingRefused) -> HttpResponse:
    """The refusal's message, on its own page (or in the item panel for htmx)."""
    template = (
        "studies/annotate/_training_message.html"
        if request.htmx
        else "studies/annotate/training_message.html"
    )
    return render(
        request,
        template,
        {"study": request.study, "message": refusal.message},
        status=REFUSAL_STATUS.get(refusal.code, 409),
    )


@annotator_page(after=Step.TUTORIAL)
def training(request: HttpRequest) -> HttpResponse:
    """GET: the introduction, the attempt in progress, or the last attempt's result.
    POST: start the next attempt."""
    study, annotator = request.study, request.annotator
    if request.method == "POST":
        try:
            training_attempt_start(annotator=annotator)
        except TrainingRefused as refusal:
            messages.info(request, refusal.message)
            return redirect("studies:training", slug=study.slug)
        return redirect("studies:training_item", slug=study.slug, number=1)
    outcome = training_outcome(annotator=annotator)
    if outcome is None:
        return redirect("studies:home", slug=study.slug)
    attempt = outcome.current
    if outcome.status == TrainingStatus.IN_PROGRESS:
        number = training_next_number(attempt=attempt)
        return redirect("studies:training_item", slug=study.slug, number=number)
    back = (
        training_screen_out(annotator=annotator)
        if outcome.status == TrainingStatus.FAILED
        else None
    )
    return render_with_crowd_return(
        request,
        "studies/annotate/training.html",
        back,
        {
            "study": study,
            "annotator": annotator,
            "outcome": outcome,
            "TrainingStatus": TrainingStatus,
            "attempt": attempt,
            "n_items": training_attempt_size(study=study),
            "wrong": _wrong_items(attempt) if attempt is not None else [],
            "next_is_new": attempt is not None and training_next_attempt_is_new(attempt=attempt),
            "quiz_asks": training_answer_settings(study=study),
        },
    )


def _wrong_items(attempt: TrainingAttempt) -> list[tuple[int, str]]:
    """(number in the attempt, candidate) of each practice item answered wrong."""
    wrong = set(attempt.answers.filter(is_right=False).values_list("item_id", flat=True))
    return [
        (number, item.text)
        for number, item in enumerate(training_attempt_items(attempt=attempt), start=1)
        if item.pk in wrong
    ]


def _item_context(request, items, number: int, attempt: TrainingAttempt, form=None) -> dict:
    study = request.study
    item = items[number - 1]
    settings = training_answer_settings(study=study)
    categories = training_categories(study=study)
    if form is None:
        form = AnswerForm(categories=categories, settings=settings)
    n_answered = attempt.answers.count()
    url = reverse("studies:training_item", args=[study.slug, number])
    turns = item.dialogue_turns
    return {
        "study": study,
        "item": item,
        "attempt": attempt,
        "item_heading": "Practice item",
        "number": number,
        "n_items": len(items),
        "n_answered": n_answered,
        "percent": round(100 * n_answered / len(items)),
        "reflection": {"text": item.text},
        "form": form,
        "form_url": url,
        "item_url": url,
        **item_panel_questions(study, settings, categories, training_wording(study=study)),
        "revision": 0,
        "shown_at": (form.is_bound and form.data.get("shown_at")) or item_shown_at(),
        "turns": turns,
        "last_client": max((i for i, t in enumerate(turns) if t["role"] == "client"), default=None),
    }


def _answer_summary(answer: TrainingAnswer, categories) -> str:
    if answer.coherent:
        return "Yes"
    chosen = selected_categories(answer.error_flags, [(c.bit, c.label) for c in categories])
    return "No" + (f" — {', '.join(chosen)}" if chosen else "")


def _expected_summary(item, settings) -> str:
    if item.expected_coherent:
        return "Yes"
    expected = "No"
    if settings.asks_categories:
        required = [c.label for c in item.required_categories.all()]
        wrong = [c.label for c in item.wrong_categories.all()]
        if required:
            expected += " — choose: " + ", ".join(required)
        if wrong:
            expected += ("; " if required else " — ") + "do not choose: " + ", ".join(wrong)
    return expected


def _feedback_context(request, items, number: int, answer: TrainingAnswer) -> dict:
    study = request.study
    item = items[number - 1]
    settings = training_answer_settings(study=study)
    last = number >= len(items)
    revealed = training_reveals_answers(attempt=answer.attempt)
    return {
        "study": study,
        "item": item,
        "attempt": answer.attempt,
        "answer": answer,
        "revealed": revealed,
        "quiz_asks": settings,
        "number": number,
        "n_items": len(items),
        "given": _answer_summary(answer, training_categories(study=study)),
        "expected": _expected_summary(item, settings) if revealed else None,
        "next_url": reverse("studies:training", args=[study.slug])
        if last
        else reverse("studies:training_item", args=[study.slug, number + 1]),
        "last": last,
        "turns": item.dialogue_turns,
        "last_client": None,
    }


def _render(request, context: dict, status: int = 200) -> HttpResponse:
    """The practice item's page; for htmx only its panel (the item or its feedback)."""
    if not request.htmx:
        template = "studies/annotate/training_item.html"
    elif "answer" in context:
        template = "studies/annotate/_training_feedback.html"
    else:
        template = "studies/annotate/_item.html"
    return render(request, template, context, status=status)


@annotator_page(after=Step.TUTORIAL)
def training_item(request: HttpRequest, number: int) -> HttpResponse:
    """Practice item ``number`` of the attempt in progress: the item panel, or once
    answered its feedback. POST: the answer (checked as in a batch)."""
    study, annotator = request.study, request.annotator
    if not TrainingItem.objects.filter(study=study).exists():
        return _refused(request, TrainingRefused(ErrorCode.NO_QUIZ))
    attempt = TrainingAttempt.objects.filter(
        annotator=annotator, status=TrainingAttempt.Status.IN_PROGRESS
    ).first()
    if request.method == "POST":
        return _training_item_save(request, number, attempt)
    # The attempt in progress; else the one just finished (its last answer's feedback).
    shown = (
        attempt or TrainingAttempt.objects.filter(annotator=annotator).order_by("-number").first()
    )
    if shown is None:
        return redirect("studies:training", slug=study.slug)
    items = training_attempt_items(attempt=shown)
    if not 1 <= number <= len(items):
        return _refused(request, TrainingRefused(ErrorCode.NO_SUCH_PRACTICE_ITEM))
    answer = None
    if attempt is None:
        answer = shown.answers.filter(item=items[number - 1]).first()
        if answer is None or number != len(items):
            return redirect("studies:training", slug=study.slug)
    else:
        answer = attempt.answers.filter(item=items[number - 1]).first()
        if answer is None and number != (due := training_next_number(attempt=attempt)):
            return redirect("studies:training_item", slug=study.slug, number=due)
    if answer is not None:
        return _render(request, _feedback_context(request, items, number, answer))
    return _render(request, _item_context(request, items, number, attempt))


def _training_item_save(request, number: int, attempt) -> HttpResponse:
    study = request.study
    items = training_attempt_items(attempt=attempt) if attempt is not None else []
    form = AnswerForm(
        request.POST,
        categories=training_categories(study=study),
        settings=training_answer_settings(study=study),
    )
    try:
        if not form.is_valid():
            # Say why the quiz takes no answer here rather than how to fill the form.
            training_answer_target(annotator=request.annotator, number=number)
            return _render(
                request,
                _item_context(request, items, number, attempt, form=form),
                status=422,
            )
        answer = training_answer_record(
            annotator=request.annotator, number=number, answer=form.answer()
        )
    except TrainingRefused as refusal:
        return _refused(request, refusal)
    except ValidationError as exc:
        form.add_answer_errors(exc)
        return _render(
            request,
            _item_context(request, items, number, attempt, form=form),
            status=422,
        )
    if request.htmx:
        return _render(request, _feedback_context(request, items or [answer.item], number, answer))
    return redirect("studies:training_item", slug=study.slug, number=number)
