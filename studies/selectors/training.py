"""Reads of the training quiz: its pass mark and attempts, the outcome of a list of
attempts (the one rule), and who failed it (``studies.services.training`` writes)."""

from dataclasses import dataclass

from ..models import Study, TrainingAttempt, TrainingQuiz
from ..models.training import DEFAULT_ATTEMPTS

Status = TrainingAttempt.Status


@dataclass(frozen=True)
class QuizRules:
    pass_mark: int
    attempts: int


def training_rules(*, study: Study) -> QuizRules:
    """The study's pass mark and number of attempts (the defaults without settings)."""
    quiz = TrainingQuiz.objects.filter(study=study).first() or TrainingQuiz(study=study)
    return QuizRules(pass_mark=quiz.pass_mark, attempts=quiz.attempts)


def training_status(*, statuses: list[str], attempts_allowed: int) -> str:
    """The outcome of attempts with ``statuses`` (oldest first): "passed" once one
    passed, "in_progress" during one, "failed" once every attempt allowed failed, else
    "not_started" (before the first attempt, or between attempts). The one rule, for
    the pages, the admin, the progress table and the export."""
    if Status.PASSED in statuses:
        return "passed"
    if statuses and statuses[-1] == Status.IN_PROGRESS:
        return "in_progress"
    if statuses and len(statuses) >= attempts_allowed:
        return "failed"
    return "not_started"


def training_outcomes(*, study: Study) -> dict[int, str]:
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
