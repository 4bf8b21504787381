"""Reads of the training quiz: its pass mark and attempts, the outcome of a list of
attempts (the one rule), and who failed it (``studies.services.training`` writes)."""

from dataclasses import dataclass

from django.db import models

from ..models import Study, TrainingAttempt, TrainingQuiz
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


def training_rules(*, study: Study) -> QuizRules:
    """The study's pass mark and number of attempts (the defaults without settings)."""
    quiz = TrainingQuiz.objects.filter(study=study).first() or TrainingQuiz(study=study)
    return QuizRules(pass_mark=quiz.pass_mark, attempts=quiz.attempts)


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
