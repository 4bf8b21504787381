"""The training quiz: who must take it, what counts as right, attempts and outcomes.

A study has a quiz when it has practice items. After the tutorial and before their
first batch, each annotator answers every practice item of an attempt in order, with
feedback after each; at the end the attempt's score (the percentage answered right) is
compared with the pass mark. Passing unlocks the batches; failing with attempts left
offers another attempt; failing the last one ends the annotator's part in the study
(a crowd worker is returned to the platform as screened out from the first stage).

An answer is right when its Yes/No is the expected one and, for an expected No with
expected categories in a study whose first stage asks for categories, it chooses at
least one of them. The agreement rating after Yes and a description are asked as in
the first stage (the same form and rules as a batch) but never scored: there is no
right rating.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.utils import timezone

from ..errors import ErrorCode
from ..locks import annotators_locked, studies_locked
from ..models import (
    Annotator,
    Assignment,
    CrowdEntry,
    Stage,
    Study,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
)
from ..protocol import DEFAULT_ANSWER_SETTINGS, AnswerSettings, category_selected
from ..selectors.training import TrainingStatus, training_rules, training_status
from .crowd import crowd_entry_close
from .judgements import Answer, EncodedAnswer, answer_encode, study_category_bits

Status = TrainingAttempt.Status


class TrainingRefused(Exception):
    """A quiz action refused: ``code`` says why, ``message`` says it to the annotator;
    nothing was written."""

    MESSAGES = {
        ErrorCode.NO_QUIZ: "This study has no practice quiz.",
        ErrorCode.QUIZ_PASSED: "You have passed the practice quiz already: your batches are open.",
        ErrorCode.QUIZ_OVER: "Your practice quiz is over: no answers can be added. Thank you "
        "for your time.",
        ErrorCode.QUIZ_NOT_STARTED: "Please start an attempt at the practice quiz first.",
        ErrorCode.QUIZ_IN_PROGRESS: "You are in the middle of an attempt: please finish it first.",
        ErrorCode.NO_SUCH_PRACTICE_ITEM: "There is no such practice item.",
        ErrorCode.PRACTICE_ITEM_ANSWERED: "You have answered this practice item already in this "
        "attempt; your first answer counts.",
        ErrorCode.PRACTICE_ITEM_NOT_NEXT: "Please answer the practice items in order: an earlier "
        "one is still open.",
    }

    def __init__(self, code: ErrorCode):
        self.code = code
        self.message = self.MESSAGES[code]
        super().__init__(self.message)


def training_items(*, study: Study) -> list[TrainingItem]:
    """The practice items in order, with their context and expected categories."""
    return list(
        TrainingItem.objects.filter(study=study)
        .select_related("context")
        .prefetch_related(Prefetch("expected_categories"))
        .order_by("position")
    )


def training_answer_settings(*, study: Study) -> AnswerSettings:
    """What the quiz asks after Yes and after No: what the first stage asks (the quiz
    prepares for it)."""
    stage = Stage.objects.filter(study=study).order_by("position").first()
    return stage.answer_settings if stage is not None else DEFAULT_ANSWER_SETTINGS


def training_answer_is_right(
    *, item: TrainingItem, encoded: EncodedAnswer, settings: AnswerSettings
) -> bool:
    """The one rule for a right answer (see the module docstring)."""
    if encoded.coherent != item.expected_coherent:
        return False
    if encoded.coherent or not settings.asks_categories:
        return True
    expected = [c.bit for c in item.expected_categories.all()]
    return not expected or any(category_selected(encoded.error_flags, bit) for bit in expected)


def training_score_passes(*, n_right: int, n_items: int, pass_mark: int) -> bool:
    """Score ≥ pass mark, in integers (no rounding: 4 of 5 is exactly 80 %)."""
    return n_items > 0 and 100 * n_right >= pass_mark * n_items


# --- outcome --------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingOutcome:
    """An annotator's standing in the quiz. ``status``: a ``TrainingStatus``;
    ``current``: the attempt in progress, else the last one (None before the first)."""

    status: TrainingStatus
    attempts_used: int
    attempts_allowed: int
    pass_mark: int
    current: TrainingAttempt | None

    @property
    def attempts_left(self) -> int:
        return max(self.attempts_allowed - self.attempts_used, 0)

    @property
    def label(self) -> str:
        return self.status.label


def training_outcome(*, annotator: Annotator) -> TrainingOutcome | None:
    """The annotator's outcome (None when their study has no quiz)."""
    if not TrainingItem.objects.filter(study_id=annotator.study_id).exists():
        return None
    rules = training_rules(study=annotator.study)
    attempts = list(TrainingAttempt.objects.filter(annotator=annotator).order_by("number"))
    return TrainingOutcome(
        status=training_status(
            statuses=[a.status for a in attempts], attempts_allowed=rules.attempts
        ),
        attempts_used=len(attempts),
        attempts_allowed=rules.attempts,
        pass_mark=rules.pass_mark,
        current=attempts[-1] if attempts else None,
    )


# --- writes ---------------------------------------------------------------------------


def _locked_annotator(annotator: Annotator) -> Annotator:
    """The annotator's row, locked after their study's (also locked)."""
    studies_locked().filter(pk=annotator.study_id).first()
    return annotators_locked().select_related("study").get(pk=annotator.pk)


@transaction.atomic
def training_attempt_start(*, annotator: Annotator, now: datetime | None = None):
    """Start the annotator's next attempt. Refused (``TrainingRefused``, nothing
    written) when the study has no quiz, the annotator passed, has an attempt in
    progress or has used every attempt. Locks the annotator's row, so two tabs cannot
    start two attempts."""
    annotator = _locked_annotator(annotator)
    n_items = TrainingItem.objects.filter(study_id=annotator.study_id).count()
    outcome = training_outcome(annotator=annotator)
    if outcome is None or n_items == 0:
        raise TrainingRefused(ErrorCode.NO_QUIZ)
    refusal = {
        TrainingStatus.PASSED: ErrorCode.QUIZ_PASSED,
        TrainingStatus.FAILED: ErrorCode.QUIZ_OVER,
        TrainingStatus.IN_PROGRESS: ErrorCode.QUIZ_IN_PROGRESS,
    }.get(outcome.status)
    if refusal is not None:
        raise TrainingRefused(refusal)
    return TrainingAttempt.objects.create(
        annotator=annotator,
        number=outcome.attempts_used + 1,
        n_items=n_items,
        started_at=now or timezone.now(),
    )


def training_answer_target(*, annotator: Annotator, number: int):
    """The attempt in progress and practice item ``number`` (its place in the quiz,
    1, 2, ...: positions may have gaps) an answer would go to, or ``TrainingRefused``:
    after the quiz is over or passed, before an attempt, for an item that does not
    exist, for an item already answered in this attempt, or for one after the item
    due (they are answered in order)."""
    attempt = TrainingAttempt.objects.filter(annotator=annotator, status=Status.IN_PROGRESS).first()
    if attempt is None:
        outcome = training_outcome(annotator=annotator)
        if outcome is None:
            raise TrainingRefused(ErrorCode.NO_QUIZ)
        raise TrainingRefused(
            {
                TrainingStatus.PASSED: ErrorCode.QUIZ_PASSED,
                TrainingStatus.FAILED: ErrorCode.QUIZ_OVER,
            }.get(outcome.status, ErrorCode.QUIZ_NOT_STARTED)
        )
    item = (
        TrainingItem.objects.filter(study_id=annotator.study_id)
        .order_by("position")
        .prefetch_related("expected_categories")[number - 1 : number]
        .first()
        if number >= 1
        else None
    )
    if item is None:
        raise TrainingRefused(ErrorCode.NO_SUCH_PRACTICE_ITEM)
    if TrainingAnswer.objects.filter(attempt=attempt, item=item).exists():
        raise TrainingRefused(ErrorCode.PRACTICE_ITEM_ANSWERED)
    if number != training_next_number(attempt=attempt):
        raise TrainingRefused(ErrorCode.PRACTICE_ITEM_NOT_NEXT)
    return attempt, item


def training_next_number(*, attempt: TrainingAttempt) -> int:
    """The number of the practice item to answer next in ``attempt``: the items are
    answered in order (``training_answer_target``), so the one after those answered."""
    return attempt.answers.count() + 1


@transaction.atomic
def training_answer_record(
    *, annotator: Annotator, number: int, answer: Answer, now: datetime | None = None
) -> TrainingAnswer:
    """Record the answer to practice item ``number`` in the attempt in progress, with
    whether it is right; the last item's answer finishes the attempt with its score
    (passed or failed). Checked with the batches' rules (``answer_encode``, the first
    stage's settings): a ``ValidationError`` per question. Refused as
    ``training_answer_target`` says. Either way nothing is written. Locks the
    annotator's row, so two tabs answer one after the other."""
    now = now or timezone.now()
    annotator = _locked_annotator(annotator)
    attempt, item = training_answer_target(annotator=annotator, number=number)
    settings = training_answer_settings(study=annotator.study)
    encoded = answer_encode(
        answer=answer,
        categories=study_category_bits(study_id=annotator.study_id),
        settings=settings,
    )
    try:
        with transaction.atomic():
            recorded = TrainingAnswer.objects.create(
                attempt=attempt,
                item=item,
                coherent=encoded.coherent,
                error_flags=encoded.error_flags,
                most_evident_bit=encoded.most_evident_bit,
                empathy=encoded.empathy,
                error_description=encoded.error_description,
                seconds_spent=encoded.seconds_spent,
                is_right=training_answer_is_right(item=item, encoded=encoded, settings=settings),
                answered_at=now,
            )
    except IntegrityError:  # the unique rule, should the check above be raced
        raise TrainingRefused(ErrorCode.PRACTICE_ITEM_ANSWERED) from None
    answers = TrainingAnswer.objects.filter(attempt=attempt)
    if answers.count() >= attempt.n_items:
        n_right = answers.filter(is_right=True).count()
        rules = training_rules(study=annotator.study)
        passed = training_score_passes(
            n_right=n_right, n_items=attempt.n_items, pass_mark=rules.pass_mark
        )
        attempt.status = Status.PASSED if passed else Status.FAILED
        attempt.n_right = n_right
        attempt.finished_at = now
        attempt.save(update_fields=["status", "n_right", "finished_at"])
        if not passed and attempt.number >= rules.attempts:
            training_screen_out(annotator=annotator, now=now)
    recorded.attempt = attempt
    return recorded


def training_screen_out(*, annotator: Annotator, now: datetime | None = None):
    """A crowd worker who failed the quiz's last attempt is sent back from the first
    stage as screened out (``crowd_entry_close``: the first outcome stands, so asking
    again gives the same return). Their ``CrowdReturn``; None for an invited
    annotator."""
    first = Stage.objects.filter(study_id=annotator.study_id).order_by("position").first()
    if first is None:
        return None
    return crowd_entry_close(
        annotator=annotator, stage=first, outcome=CrowdEntry.Outcome.SCREENED_OUT, now=now
    )


def training_is_locked(*, study: Study) -> bool:
    """The quiz cannot change once annotation started (a batch claimed, or an attempt
    at the quiz): every annotator must answer the same quiz, and nobody may meet the
    gate in the middle of a batch."""
    return (
        Assignment.objects.filter(stage__study=study).exists()
        or TrainingAttempt.objects.filter(annotator__study=study).exists()
    )
