"""Questionnaires: which one an annotator must answer now, recording their answers,
and screening people out.

* **Screening** (``Questionnaire.Placement.SCREENING``) comes before the information
  sheet and consent, for everyone who has not consented yet (crowd workers and
  invited annotators alike). A person who picks a choice marked "ends
  participation" is screened out: only counts per answer are kept
  (``ScreeningTally``), with a response row that records the fact and holds no
  answers; a crowd worker gets the stage's screened-out return.
* **After a stage** (``AFTER_STAGE``): due once the stage is finished for the
  annotator (``annotator_stage_states``: the one home of "finished") and they
  submitted at least one batch in it, before they go on or get their completion code.

Every answer is checked here with the rules the database holds (one value per
answer, a scale from 1 to 5, one response per annotator) and the ones it cannot (a
question of this questionnaire, a choice of that question, required questions
answered); a refusal says what is wrong, keyed by question, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from ..datafiles.text import storable_problem
from ..models import (
    Annotator,
    Assignment,
    Question,
    QuestionAnswer,
    Questionnaire,
    QuestionnaireResponse,
    ScreeningTally,
)
from ..models.questionnaires import MESSAGES, SCALE_MAX, SCALE_MIN, TEXT_ANSWER_MAX_LENGTH
from ..times import time_day
from .screening import (
    questionnaire_screened_out_return,
    screened_out_forget,
    screening_tally,
)

ANSWERED_ALREADY = "You have answered this questionnaire already."
LOCKED = (
    "This questionnaire has answers already, so its questions and choices can no longer be "
    "changed, added or deleted, nor the questionnaire moved or deleted (the answers would "
    "lose their meaning). Its name and introduction can still be reworded. To ask other "
    "questions, ask them in the questionnaire after a later stage (a study has one screening "
    "questionnaire and one questionnaire per stage)."
)

SCREENED_OUT_CODE_MISSING = (
    "This study takes part through a crowd platform and its first stage has no "
    "screened-out code, so a worker this choice ends could not be paid. Give the first "
    "stage a screened-out code (and the same code on the platform) first."
)


@dataclass(frozen=True)
class QuestionnaireStep:
    """What an annotator is asked now: ``questionnaire`` to answer, or (when
    ``screened_out``) the end page of the screening that ended their participation."""

    questionnaire: Questionnaire
    screened_out: bool = False


MIN_CHOICES = 2


def questions_short_of_choices():
    """Choice questions with fewer than two choices: nobody could answer them as meant
    (the admin builds a question first, then its choices, so this is a step on the way,
    not an error). A questionnaire with one is not asked, and its admin page says so."""
    return (
        Question.objects.filter(kind__in=Question.CHOICE_KINDS)
        .alias(n_choices=Count("choices"))
        .filter(n_choices__lt=MIN_CHOICES)
    )


def short_of_choices_warning(questions) -> str:
    """The admin's warning for ``questions`` (from ``questions_short_of_choices``)."""
    names = ", ".join(f'"{q.text}"' for q in questions)
    return (
        f"Not asked yet: each choice question needs at least {MIN_CHOICES} choices, and "
        f"{names} has fewer. Annotators are not shown this questionnaire until it has them."
    )


def _with_questions():
    """Questionnaires that can be asked: some questions, every choice question with
    its choices (``questions_short_of_choices``)."""
    return Questionnaire.objects.filter(
        Exists(Question.objects.filter(questionnaire=OuterRef("pk"))),
        ~Exists(questions_short_of_choices().filter(questionnaire=OuterRef("pk"))),
    )


def questionnaire_step(
    *, annotator: Annotator, after_stage: bool = True, now: datetime | None = None
) -> QuestionnaireStep | None:
    """The questionnaire ``annotator`` must see before anything else, if any.

    Screening: only until the annotator consents (no query for one who has), so people
    who consented before a screening questionnaire was added are not asked. After a
    stage (``after_stage``; costs the stage states, so the pages between batches skip
    it): the questionnaire of the earliest stage finished for them, in which they
    submitted at least one batch, and not answered (a stage "finished" because no
    batch could be theirs asks nothing)."""
    if annotator.consented_at is None:
        screening = (
            _with_questions()
            .filter(study_id=annotator.study_id, placement=Questionnaire.Placement.SCREENING)
            .first()
        )
        if screening is not None:
            response = QuestionnaireResponse.objects.filter(
                questionnaire=screening, annotator=annotator
            ).first()
            if response is None or response.screened_out:
                return QuestionnaireStep(screening, screened_out=response is not None)
        return None
    if not after_stage:
        return None
    worked = Assignment.objects.filter(
        annotator=annotator, status__in=Assignment.counted_statuses(include_rejected=True)
    ).values("stage_id")
    pending = list(
        _with_questions()
        .filter(
            study_id=annotator.study_id,
            placement=Questionnaire.Placement.AFTER_STAGE,
            stage_id__in=worked,
        )
        .exclude(responses__annotator=annotator)
        .select_related("stage")
    )
    if not pending:
        return None
    from .stages import annotator_stage_states

    done = {
        s.stage.pk
        for s in annotator_stage_states(annotator=annotator, now=now)
        if s.status == "done"
    }
    due = sorted((q for q in pending if q.stage_id in done), key=lambda q: q.stage.position)
    return QuestionnaireStep(due[0]) if due else None


def questionnaire_has_answers(*, questionnaire: Questionnaire) -> bool:
    """Answers exist (a response, or a screened-out count): the questionnaire is fixed."""
    return (
        QuestionnaireResponse.objects.filter(questionnaire=questionnaire).exists()
        or ScreeningTally.objects.filter(questionnaire=questionnaire).exists()
    )


def questionnaire_validate(*, questionnaire: Questionnaire) -> None:
    """Cross-table rules of a questionnaire (the admin form calls it): a stage of its
    own study; its questions still valid under its placement (``question_validate``)."""
    if questionnaire.stage_id and questionnaire.stage.study_id != questionnaire.study_id:
        raise ValidationError({"stage": "This stage belongs to another study."})
    if questionnaire.pk:
        for question in questionnaire.questions.all():
            question.questionnaire = questionnaire  # the placement as it will be
            question_validate(question=question)


def question_validate(*, question: Question, ends: Sequence[bool] | None = None) -> None:
    """Rules of a question with its choices (the question forms call it, the choice
    forms call ``choice_validate``): no choices unless a choice question; no choice
    ending participation unless in a screening questionnaire. ``ends``: whether each
    of its choices ends participation (default: its saved choices)."""
    if ends is None:
        ends = (
            list(question.choices.values_list("ends_participation", flat=True))
            if (question.pk)
            else []
        )
    for ending in sorted(set(ends), reverse=True):
        choice_validate(question=question, ends_participation=ending)


def choice_validate(*, question: Question, ends_participation: bool) -> None:
    """Rules of a question's choices: only choice questions have them, and only a
    screening questionnaire's choices can end participation; in a study taking part
    through a crowd platform, only once its first stage has a screened-out code (the
    code a screened-out worker is paid with)."""
    if not question.has_choices:
        raise ValidationError(
            f"A question answered with {question.get_kind_display().lower()} has no choices: "
            "make it a one-choice or several-choices question, or remove the choices."
        )
    if ends_participation and question.questionnaire.placement != (
        Questionnaire.Placement.SCREENING
    ):
        raise ValidationError(
            "Only the choices of a screening questionnaire can end participation."
        )
    if ends_participation:
        study = question.questionnaire.study
        first = study.stages.order_by("position").first()
        if study.crowd_group_id and (first is None or not first.screened_out_code):
            raise ValidationError(SCREENED_OUT_CODE_MISSING)


# --- answering ---------------------------------------------------------------------------


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
    screened out. Answering twice is refused.
    One transaction: a refusal writes nothing."""
    if questionnaire.study_id != annotator.study_id:
        raise ValidationError("This questionnaire belongs to another study.")
    cleaned = questionnaire_answers_clean(questionnaire=questionnaire, answers=answers)
    screened_out = _ending_choices(questionnaire, cleaned)
    now = now or timezone.now()
    try:
        with transaction.atomic():
            response = QuestionnaireResponse.objects.create(
                questionnaire=questionnaire,
                annotator=annotator,
                screened_out=screened_out,
                submitted_at=time_day(now) if screened_out else now,
            )
            if screened_out:
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
        raise
    return response


def _answer_rows(response: QuestionnaireResponse, cleaned: list[CleanAnswer]):
    for answer in cleaned:
        for choice_id in answer.choice_ids:
            yield QuestionAnswer(response=response, question=answer.question, choice_id=choice_id)
        if answer.scale is not None or answer.text:
            yield QuestionAnswer(
                response=response, question=answer.question, scale=answer.scale, text=answer.text
            )
