"""The training quiz: practice items a study's annotators answer after the tutorial and
before their first batch, each annotator's attempts and the answers of each attempt.

A study has a quiz when it has at least one practice item (``TrainingItem``); its pass
mark, number of attempts and items per attempt live in ``TrainingQuiz`` (the defaults
apply without one). The rules (what counts as right, which items an attempt draws, the
score, the outcome) live in ``studies.services.training``.
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from ..limits import SHORT_TEXT_MAX_LENGTH
from ..protocol import DESCRIPTION_MAX_LENGTH
from ..validators import validate_turns_or_empty
from .categories import ErrorCategory
from .materials import DialogueContext
from .people import Annotator
from .study import Study

DEFAULT_PASS_MARK = 80
DEFAULT_ATTEMPTS = 2


class TrainingQuiz(models.Model):
    """How a study's quiz is passed. Optional: without it a study with practice items
    uses the defaults (80 %, 2 attempts, every practice item in each attempt)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="training_quiz")
    pass_mark = models.PositiveSmallIntegerField(
        "pass mark (%)",
        default=DEFAULT_PASS_MARK,
        help_text="The share of practice items to answer right to pass, in percent.",
    )
    attempts = models.PositiveSmallIntegerField(
        "attempts allowed",
        default=DEFAULT_ATTEMPTS,
        help_text="How many times an annotator may take the quiz before being thanked and "
        "let go (crowd workers: returned with the first stage's screened-out code).",
    )
    items_per_attempt = models.PositiveSmallIntegerField(
        "practice items per attempt",
        null=True,
        blank=True,
        help_text="How many practice items each attempt draws from the study's. Empty: all "
        "of them, every time. N attempts of k items need N × k practice items for every "
        "attempt to show items not seen before (3 attempts of 5 items: 15). With fewer, "
        "a retry shows some items again, and the feedback keeps back the expected answer "
        "and explanation of any item that may come back.",
    )

    class Meta:
        verbose_name = "training quiz settings"
        verbose_name_plural = "training quiz settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(pass_mark__gte=1, pass_mark__lte=100),
                name="training_quiz_pass_mark_range",
                violation_error_message="The pass mark is a percentage from 1 to 100.",
            ),
            models.CheckConstraint(
                condition=Q(attempts__gte=1),
                name="training_quiz_attempts_positive",
                violation_error_message="Allow at least one attempt.",
            ),
            models.CheckConstraint(
                condition=Q(items_per_attempt__isnull=True) | Q(items_per_attempt__gte=1),
                name="training_quiz_items_per_attempt_positive",
                violation_error_message="An attempt shows at least one practice item (or "
                "leave it empty for all of them).",
            ),
        ]

    def __str__(self) -> str:
        return f"Quiz of {self.study.slug}: {self.pass_mark} %, {self.attempts} attempts"


class TrainingItem(models.Model):
    """One practice item: a dialogue (typed here, or an existing context of the study),
    a response candidate, the expected answer and the feedback shown after it.

    An expected "No" marks each of the study's categories required, wrong or neither
    (acceptable): a No is right when it chooses every required category and no wrong
    one (``studies.services.training.training_answer_is_right``; the two sets are
    checked by ``training_item_categories_check``)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="training_items")
    position = models.PositiveSmallIntegerField(
        help_text="An attempt shows the practice items it draws in this order."
    )
    context = models.ForeignKey(
        DialogueContext,
        null=True,
        blank=True,
        on_delete=models.RESTRICT,  # kept while used, gone with its study
        related_name="+",
        help_text="An existing dialogue of the study, or leave empty and type the turns.",
    )
    turns = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_turns_or_empty],
        help_text='Or the dialogue itself: [{"role": "therapist"|"client", "text": "..."}, ...]',
    )
    text = models.CharField(
        "response candidate", max_length=SHORT_TEXT_MAX_LENGTH, help_text="What is judged."
    )
    expected_coherent = models.BooleanField(
        "expected: coherent", help_text="Ticked: the right answer is Yes; unticked: No."
    )
    required_categories = models.ManyToManyField(
        ErrorCategory,
        blank=True,
        related_name="+",
        verbose_name='expected "No": required categories',
        help_text="The answer must choose every one of these (the problems the candidate "
        "certainly has). Categories neither required nor wrong may be chosen or not.",
    )
    wrong_categories = models.ManyToManyField(
        ErrorCategory,
        blank=True,
        related_name="+",
        verbose_name='expected "No": wrong categories',
        help_text="Choosing any of these makes the answer wrong (problems the candidate "
        "certainly does not have). None of them may be required too.",
    )
    explanation = models.CharField(
        max_length=SHORT_TEXT_MAX_LENGTH,
        help_text="Shown after the answer, whether it was right or wrong, unless the item "
        "may come back in a later attempt of that annotator.",
    )

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "position"], name="training_item_position_unique"
            ),
            models.CheckConstraint(
                condition=Q(position__gte=1),
                name="training_item_position_positive",
                violation_error_message="Practice item positions start at 1.",
            ),
            models.CheckConstraint(
                condition=~Q(text=""),
                name="training_item_text_not_empty",
                violation_error_message="A practice item needs a response candidate.",
            ),
            models.CheckConstraint(
                condition=~Q(explanation=""),
                name="training_item_explanation_not_empty",
                violation_error_message="A practice item needs an explanation (its feedback).",
            ),
            models.CheckConstraint(
                condition=(Q(context__isnull=False) & Q(turns=[]))
                | (Q(context__isnull=True) & ~Q(turns=[])),
                name="training_item_one_dialogue",
                violation_error_message="Give the dialogue either as an existing context or "
                "as turns, not both and not neither.",
            ),
        ]

    def __str__(self) -> str:
        return f"Practice item {self.position} ({self.study.slug})"

    @property
    def dialogue_turns(self) -> list[dict]:
        return self.context.turns if self.context_id else self.turns


class TrainingAttempt(models.Model):
    """One go at the quiz. The score is ``n_right`` of ``n_items`` (the practice items
    drawn for it when it started, ``item_ids`` in the order shown)."""

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"

    annotator = models.ForeignKey(
        Annotator, on_delete=models.CASCADE, related_name="training_attempts"
    )
    number = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.IN_PROGRESS)
    n_items = models.PositiveSmallIntegerField()
    item_ids = ArrayField(
        models.BigIntegerField(),
        default=list,
        blank=True,
        help_text="The practice items this attempt shows, in order (drawn when it started).",
    )
    n_right = models.PositiveSmallIntegerField(null=True, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["annotator", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "number"], name="training_attempt_number_unique"
            ),
            models.UniqueConstraint(
                fields=["annotator"],
                condition=Q(status="in_progress"),
                name="training_attempt_one_in_progress",
            ),
            models.UniqueConstraint(
                fields=["annotator"],
                condition=Q(status="passed"),
                name="training_attempt_passed_once",
            ),
            models.CheckConstraint(
                condition=Q(number__gte=1),
                name="training_attempt_number_positive",
                violation_error_message="Attempts are numbered from 1.",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["in_progress", "passed", "failed"]),
                name="training_attempt_status_valid",
                violation_error_message="Unknown attempt status.",
            ),
            models.CheckConstraint(
                condition=Q(status="in_progress", finished_at__isnull=True, n_right__isnull=True)
                | (~Q(status="in_progress") & Q(finished_at__isnull=False, n_right__isnull=False)),
                name="training_attempt_finished_has_score",
                violation_error_message="A finished attempt needs its score and time; one in "
                "progress has neither.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator}: attempt {self.number}"

    @property
    def score(self) -> float | None:
        """The percentage of practice items answered right (None while in progress)."""
        if self.n_right is None or not self.n_items:
            return None
        return 100 * self.n_right / self.n_items


class TrainingAnswer(models.Model):
    """An answer to one practice item in one attempt (stored as a judgement is)."""

    attempt = models.ForeignKey(TrainingAttempt, on_delete=models.CASCADE, related_name="answers")
    # Kept while answered; deleting the study removes both (RESTRICT, not PROTECT).
    item = models.ForeignKey(TrainingItem, on_delete=models.RESTRICT, related_name="answers")
    coherent = models.BooleanField()
    error_flags = models.PositiveIntegerField(default=0)
    most_evident_bit = models.PositiveSmallIntegerField(null=True, blank=True)
    empathy = models.PositiveSmallIntegerField(null=True, blank=True)
    error_description = models.CharField(max_length=DESCRIPTION_MAX_LENGTH, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    is_right = models.BooleanField()
    answered_at = models.DateTimeField()

    class Meta:
        ordering = ["attempt", "item__position"]
        constraints = [
            models.UniqueConstraint(fields=["attempt", "item"], name="training_answer_once"),
        ]

    def __str__(self) -> str:
        return f"{self.attempt}, item {self.item.position}"
