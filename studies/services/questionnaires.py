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

Answering lives in ``studies.services.questionnaire_answers`` (re-exported here),
screening people out in ``studies.services.screening``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, OuterRef

from ..models import (
    Annotator,
    Assignment,
    Choice,
    Question,
    Questionnaire,
    QuestionnaireResponse,
    ScreeningTally,
)
from ..selectors.stages import StageStatus, annotator_stage_states
from .questionnaire_answers import (  # noqa: F401 (the answering half, re-exported)
    ANSWERED_ALREADY,
    CHANGED_MEANWHILE,
    CleanAnswer,
    questionnaire_answers_clean,
    questionnaire_lock,
    questionnaire_respond,
)
from .screening import questionnaire_screened_out_return  # noqa: F401

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
    done = {
        s.stage.pk
        for s in annotator_stage_states(annotator=annotator, now=now)
        if s.status == StageStatus.DONE
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
        raise ValidationError(
            {
                "stage": f'The stage "{questionnaire.stage.name}" belongs to another study '
                f'("{questionnaire.stage.study.title}"): choose one of the stages of '
                f'"{questionnaire.study.title}".'
            }
        )
    if questionnaire.pk:
        for question in questionnaire.questions.all():
            question.questionnaire = questionnaire  # the placement as it will be
            question_validate(question=question)


def question_validate(*, question: Question, ends: Sequence[bool] | None = None) -> None:
    """Rules of a question with its choices (the question forms call it, the choice
    forms call ``choice_validate``): no choices unless a choice question; no choice
    ending participation unless in a screening questionnaire. ``ends``: whether each
    of its choices ends participation (default: its saved choices)."""
    if ends is None and question.pk is None:
        ends = []
    elif ends is None:
        ends = Choice.objects.filter(question_id=question.pk).values_list(
            "ends_participation", flat=True
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
