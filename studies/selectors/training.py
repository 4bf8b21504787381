"""Reads of the training quiz: its pass mark, attempts and items per attempt, whether
the study has practice items enough for every attempt to show new ones, the outcome of
a list of attempts (the one rule), and who failed it (``studies.services.training``
writes)."""

from dataclasses import dataclass

from django.db import models

from ..models import Study, TrainingAttempt, TrainingItem, TrainingQuiz
from ..models.training import DEFAULT_ATTEMPTS

Status = TrainingAttempt.Status


class TrainingStatus(models.TextChoices):
    """An annotator's standing in the quiz (``training_status``)."""

    NOT_STARTED = "not_started", "Not started"  # before the first attempt, or between two
    IN_PROGRESS = "in_progress", "In progress"
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed"  # every attempt allowed was used and none passed


@dataclass(frozen=True)
class QuizRules:
    pass_mark: int
    attempts: int
    items_per_attempt: int | None  # None: every practice item, in every attempt

    def attempt_size(self, n_items: int) -> int:
        """How many of the study's ``n_items`` practice items one attempt shows."""
        return min(self.items_per_attempt or n_items, n_items)

    def items_needed(self, n_items: int) -> int:
        """How many practice items every attempt needs to show only items not shown to
        the annotator before: attempts × items per attempt."""
        return self.attempts * self.attempt_size(n_items)


def training_rules(*, study: Study) -> QuizRules:
    """The study's pass mark, attempts and items per attempt (the defaults without
    settings)."""
    quiz = TrainingQuiz.objects.filter(study=study).first() or TrainingQuiz(study=study)
    return QuizRules(
        pass_mark=quiz.pass_mark,
        attempts=quiz.attempts,
        items_per_attempt=quiz.items_per_attempt,
    )


def training_pool_warning(*, study: Study) -> str | None:
    """What the researcher should know when the study's practice items are too few for
    every attempt to draw items not shown before (None when they suffice, or without a
    quiz)."""
    n_items = TrainingItem.objects.filter(study=study).count()
    rules = training_rules(study=study)
    if n_items == 0 or n_items >= rules.items_needed(n_items):
        return None
    size = rules.attempt_size(n_items)
    fits = n_items // rules.attempts
    if rules.items_per_attempt is None:
        # Every item in every attempt: adding items cannot help, a smaller draw can.
        advice = (
            f"Set practice items per attempt to {fits} or fewer for retries to show new ones."
            if fits
            else f"Add practice items: {rules.attempts} attempts need at least "
            f"{rules.attempts} for retries to show new ones."
        )
        return (
            f"Training quiz: each of the {rules.attempts} attempts shows every practice item "
            "(no number per attempt is set), so a retry shows the same items, and the "
            f"feedback keeps back their expected answers and explanations. {advice}"
        )
    return (
        f"Training quiz: {rules.attempts} attempts of {size} practice item"
        f"{'s' if size != 1 else ''} need {rules.items_needed(n_items)} practice items for "
        f"every attempt to show new ones; this study has {n_items}. A retry will show some "
        "items again, so the feedback keeps back their expected answers and explanations. "
        "Add practice items, or show fewer per attempt."
    )


def training_status(*, statuses: list[str], attempts_allowed: int) -> TrainingStatus:
    """The outcome of attempts with ``statuses`` (oldest first): passed once one
    passed, in progress during one, failed once every attempt allowed failed, else not
    started (before the first attempt, or between attempts). The one rule, for the
    pages, the admin, the progress table and the export."""
    if Status.PASSED in statuses:
        return TrainingStatus.PASSED
    if statuses and statuses[-1] == Status.IN_PROGRESS:
        return TrainingStatus.IN_PROGRESS
    if statuses and len(statuses) >= attempts_allowed:
        return TrainingStatus.FAILED
    return TrainingStatus.NOT_STARTED


def training_outcomes(*, study: Study) -> dict[int, TrainingStatus]:
    """Annotator id → outcome, for the study's annotators with at least one attempt.
    One query: the attempts, each with the study's number of attempts allowed (joined;
    the default without quiz settings)."""
    statuses: dict[int, list[str]] = {}
    allowed = DEFAULT_ATTEMPTS
    rows = TrainingAttempt.objects.filter(annotator__study=study).order_by("annotator_id", "number")
    for annotator_id, status, attempts in rows.values_list(
        "annotator_id", "status", "annotator__study__training_quiz__attempts"
    ):
        statuses.setdefault(annotator_id, []).append(status)
        allowed = attempts or DEFAULT_ATTEMPTS
    return {a: training_status(statuses=s, attempts_allowed=allowed) for a, s in statuses.items()}
