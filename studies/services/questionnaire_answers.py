"""Answering a questionnaire: every answer checked with the rules the database holds
(one value per answer, a scale from 1 to 5, a text it can store, one response per
annotator) and the ones it cannot (a question of this questionnaire, a choice of that
question, required questions answered); a refusal says what is wrong, keyed by
question, and writes nothing.

Answers and the admin's changes to a questionnaire never cross: answers are written
holding the questionnaire's row FOR SHARE (so people answer side by side) and checked
against its questions and choices as read under that lock; the admin holds the row
FOR UPDATE from its "has answers?" check to its save (``questionnaire_lock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..locks import annotators_locked, questionnaire_lock
from ..models import (
    Annotator,
    Question,
    QuestionAnswer,
    Questionnaire,
    QuestionnaireResponse,
)
from ..models.questionnaires import MESSAGES, SCALE_MAX, SCALE_MIN, TEXT_ANSWER_MAX_LENGTH
from ..text import storable_problem
from ..times import time_day
from .screening import (
    questionnaire_screened_out_return,
    screened_out_forget,
    screening_tally,
)

ANSWERED_ALREADY = "You have answered this questionnaire already."
CHANGED_MEANWHILE = (
    "The questionnaire changed while you were answering, so nothing was saved: please "
    "reload the page and answer again."
)


@dataclass(frozen=True)
class CleanAnswer:
    question: Question
    choice_ids: tuple[int, ...] = ()
    scale: int | None = None
    text: str = ""


def _integers(values: Sequence[str], message: str) -> list[int]:
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        raise ValidationError(message) from None


def _clean_one(question: Question, values: Sequence[str], choice_ids: set[int]) -> CleanAnswer:
    """One question's answer from its raw values (empty: unanswered)."""
    values = [v for v in values if str(v).strip()]
    if question.kind == Question.Kind.TEXT:
        text = " ".join(str(v) for v in values).strip()
        if len(text) > TEXT_ANSWER_MAX_LENGTH:
            raise ValidationError(
                f"Please keep your answer under {TEXT_ANSWER_MAX_LENGTH:,} characters "
                f"(it has {len(text):,})."
            )
        if problem := storable_problem(text):
            raise ValidationError(
                f"Your answer {problem}, which cannot be saved: please retype it."
            )
        return CleanAnswer(question, text=text)
    if question.kind == Question.Kind.SCALE:
        if len(values) > 1:
            raise ValidationError("Choose one number.")
        numbers = _integers(values, MESSAGES["answer_scale_range"])
        if numbers and not SCALE_MIN <= numbers[0] <= SCALE_MAX:
            raise ValidationError(MESSAGES["answer_scale_range"])
        return CleanAnswer(question, scale=numbers[0] if numbers else None)
    chosen = _integers(values, "This is not one of the question's choices.")
    if question.kind == Question.Kind.SINGLE and len(chosen) > 1:
        raise ValidationError("Choose one answer only.")
    if len(set(chosen)) != len(chosen):
        raise ValidationError("A choice was sent twice.")
    if not set(chosen) <= choice_ids:
        raise ValidationError("This is not one of the question's choices.")
    return CleanAnswer(question, choice_ids=tuple(chosen))


def _answered(answer: CleanAnswer) -> bool:
    return bool(answer.choice_ids) or answer.scale is not None or bool(answer.text)


def questionnaire_answers_clean(
    *, questionnaire: Questionnaire, answers: Mapping[int, Sequence[str]]
) -> list[CleanAnswer]:
    """The answers, checked: keys are question ids, values the raw values sent (a
    list: several for a multiple-choice question). Raises ValidationError keyed
    ``q<question id>`` (``__all__`` for a question of another questionnaire)."""
    questions = {q.pk: q for q in questionnaire.questions.prefetch_related("choices")}
    errors: dict[str, list[str]] = {}
    strangers = [qid for qid in answers if qid not in questions]
    if strangers:
        errors["__all__"] = [
            "An answer was sent to a question that is not part of this questionnaire "
            "(perhaps the page is out of date): please reload it."
        ]
    cleaned = []
    for question in sorted(questions.values(), key=lambda q: q.position):
        key = f"q{question.pk}"
        try:
            answer = _clean_one(
                question, answers.get(question.pk, ()), {c.pk for c in question.choices.all()}
            )
        except ValidationError as exc:
            errors[key] = exc.messages
            continue
        if question.required and not _answered(answer):
            errors[key] = ["Please answer this question."]
        elif _answered(answer):
            cleaned.append(answer)
    if errors:
        raise ValidationError(errors)
    return cleaned


def _ending_choices(questionnaire: Questionnaire, cleaned: list[CleanAnswer]) -> bool:
    if questionnaire.placement != Questionnaire.Placement.SCREENING:
        return False
    ending = {c.pk for a in cleaned for c in a.question.choices.all() if c.ends_participation}
    return any(set(a.choice_ids) & ending for a in cleaned)


def questionnaire_respond(
    *,
    annotator: Annotator,
    questionnaire: Questionnaire,
    answers: Mapping[int, Sequence[str]],
    now: datetime | None = None,
) -> QuestionnaireResponse:
    """Record ``annotator``'s answers to ``questionnaire`` (checked by
    ``questionnaire_answers_clean``). A screening answer that ends participation keeps
    no answer of the person: it adds one to the counts of each answer they gave
    (``ScreeningTally``), records the response as screened out, without answers and
    dated by the day only, and clears the person's personal data but their platform
    id (``studies.services.screening``); a crowd worker's stage entry is closed as
    screened out. Answering twice is refused. One transaction, holding the
    questionnaire FOR SHARE (and, when screened out, then the annotator's row, before
    their crowd entry's: ``studies.locks``): a refusal writes nothing, and a clash
    with a change made meanwhile is refused with a message (``CHANGED_MEANWHILE``),
    never an error page."""
    if questionnaire.study_id != annotator.study_id:
        raise ValidationError("This questionnaire belongs to another study.")
    now = now or timezone.now()
    try:
        with transaction.atomic():
            if not questionnaire_lock(questionnaire=questionnaire, share=True):
                raise ValidationError(CHANGED_MEANWHILE)
            # Read under the lock: the questions and choices the admin cannot change now.
            cleaned = questionnaire_answers_clean(questionnaire=questionnaire, answers=answers)
            screened_out = _ending_choices(questionnaire, cleaned)
            response = QuestionnaireResponse.objects.create(
                questionnaire=questionnaire,
                annotator=annotator,
                screened_out=screened_out,
                submitted_at=time_day(now) if screened_out else now,
            )
            if screened_out:
                annotators_locked().filter(pk=annotator.pk).first()
                screening_tally(questionnaire=questionnaire, cleaned=cleaned)
                questionnaire_screened_out_return(annotator=annotator, now=now)
                screened_out_forget(annotator=annotator)
            else:
                QuestionAnswer.objects.bulk_create(_answer_rows(response, cleaned))
    except IntegrityError:
        if QuestionnaireResponse.objects.filter(
            questionnaire=questionnaire, annotator=annotator
        ).exists():
            raise ValidationError(ANSWERED_ALREADY) from None
        raise ValidationError(CHANGED_MEANWHILE) from None
    return response


def _answer_rows(response: QuestionnaireResponse, cleaned: list[CleanAnswer]):
    for answer in cleaned:
        for choice_id in answer.choice_ids:
            yield QuestionAnswer(response=response, question=answer.question, choice_id=choice_id)
        if answer.scale is not None or answer.text:
            yield QuestionAnswer(
                response=response, question=answer.question, scale=answer.scale, text=answer.text
            )
