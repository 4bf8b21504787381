"""Questionnaires: a screening questionnaire asked before consent, and questionnaires
asked after a stage; their questions and choices; the answers of annotators
(pseudonymous, one response per annotator and questionnaire); and, for people a
screening answer ended, only counts per answer (``ScreeningTally``), never their
answers.

The services (``studies.services.questionnaires``) check what spans tables (a
question of the response's questionnaire, a choice of the answer's question, a
required question answered) with the messages below; the database holds what one
row can say (one kind of value per answer, a scale from 1 to 5, one response per
annotator and questionnaire).
"""

from django.db import models
from django.db.models import Q

from ..limits import SHORT_TEXT_MAX_LENGTH, text_cap
from .people import Annotator
from .stages import Stage
from .study import Study

SCALE_MIN, SCALE_MAX = 1, 5
TEXT_ANSWER_MAX_LENGTH = 2_000

MESSAGES = {
    "questionnaire_placement": "A screening questionnaire has no stage; a questionnaire "
    "after a stage needs its stage.",
    "answer_one_value": "An answer is one choice, one number on the scale, or a text.",
    "answer_scale_range": f"Choose a number from {SCALE_MIN} to {SCALE_MAX}.",
    "answer_text_trimmed": "A text answer is stored without leading or trailing spaces.",
    "question_position_positive": "Questions are numbered from 1.",
    "choice_position_positive": "Choices are numbered from 1.",
    "tally_count_not_negative": "A count cannot be negative.",
    "tally_people_without_question": 'Only the count of people ("people") has no question.',
}


def _check(condition, name: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=condition, name=name, violation_error_message=MESSAGES[name]
    )


class Questionnaire(models.Model):
    class Placement(models.TextChoices):
        SCREENING = "screening", "Screening, before the information sheet and consent"
        AFTER_STAGE = "after_stage", "After a stage, once the annotator has finished it"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="questionnaires")
    name = models.CharField(
        max_length=100, help_text="Names the questionnaire in exports and the report."
    )
    placement = models.CharField(
        max_length=20, choices=Placement.choices, default=Placement.SCREENING
    )
    stage = models.ForeignKey(
        Stage,
        null=True,
        blank=True,
        on_delete=models.RESTRICT,  # a stage goes with its study, never alone with answers
        related_name="questionnaires",
        help_text="After a stage only: the stage it follows.",
    )
    introduction = models.TextField(
        blank=True,
        max_length=SHORT_TEXT_MAX_LENGTH,
        help_text="Shown above the questions (optional).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Screening ("screening") before the stages' ("after_stage"), as annotators meet them.
        ordering = ["study", "-placement", "stage__position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="questionnaire_name_unique"),
            models.UniqueConstraint(
                fields=["study"],
                condition=Q(placement="screening"),
                name="questionnaire_one_screening",
                violation_error_message="This study has a screening questionnaire already.",
            ),
            models.UniqueConstraint(
                fields=["stage"],
                name="questionnaire_one_per_stage",
                violation_error_message="This stage has a questionnaire already.",
            ),
            _check(
                Q(placement="screening", stage__isnull=True)
                | Q(placement="after_stage", stage__isnull=False),
                "questionnaire_placement",
            ),
            text_cap("questionnaire", "introduction", SHORT_TEXT_MAX_LENGTH),
        ]

    def __str__(self) -> str:
        return self.name


class Question(models.Model):
    class Kind(models.TextChoices):
        SINGLE = "single", "One choice"
        MULTIPLE = "multiple", "Several choices"
        SCALE = "scale", f"A number from {SCALE_MIN} to {SCALE_MAX}"
        TEXT = "text", "A short text"

    CHOICE_KINDS = (Kind.SINGLE, Kind.MULTIPLE)

    questionnaire = models.ForeignKey(
        Questionnaire, on_delete=models.CASCADE, related_name="questions"
    )
    position = models.PositiveSmallIntegerField(help_text="1, 2, ...: the order shown.")
    text = models.CharField(max_length=300)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.SINGLE)
    required = models.BooleanField(default=True)
    scale_low = models.CharField(
        max_length=60, blank=True, help_text=f'Scale only: what {SCALE_MIN} means, e.g. "never".'
    )
    scale_high = models.CharField(
        max_length=60, blank=True, help_text=f'Scale only: what {SCALE_MAX} means, e.g. "often".'
    )

    class Meta:
        ordering = ["questionnaire", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["questionnaire", "position"], name="question_position_unique"
            ),
            models.UniqueConstraint(fields=["questionnaire", "text"], name="question_text_unique"),
            _check(Q(position__gte=1), "question_position_positive"),
        ]

    def __str__(self) -> str:
        return self.text

    @property
    def has_choices(self) -> bool:
        return self.kind in self.CHOICE_KINDS


class Choice(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="choices")
    position = models.PositiveSmallIntegerField()
    text = models.CharField(max_length=200)
    ends_participation = models.BooleanField(
        default=False,
        help_text="Screening only: a person who chooses this is thanked and takes no further "
        "part; only a count of their answers is kept.",
    )

    class Meta:
        ordering = ["question", "position"]
        constraints = [
            models.UniqueConstraint(fields=["question", "position"], name="choice_position_unique"),
            models.UniqueConstraint(fields=["question", "text"], name="choice_text_unique"),
            _check(Q(position__gte=1), "choice_position_positive"),
        ]

    def __str__(self) -> str:
        return self.text


class QuestionnaireResponse(models.Model):
    """An annotator's answers to one questionnaire (one response each, never changed).
    A response with ``screened_out`` set has no answers: it only records that a
    screening answer ended the person's participation."""

    questionnaire = models.ForeignKey(
        Questionnaire, on_delete=models.CASCADE, related_name="responses"
    )
    annotator = models.ForeignKey(
        Annotator, on_delete=models.CASCADE, related_name="questionnaire_responses"
    )
    screened_out = models.BooleanField(default=False)
    submitted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["questionnaire", "annotator"],
                name="questionnaire_response_unique",
                violation_error_message="You have answered this questionnaire already.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.questionnaire}"


class QuestionAnswerQuerySet(models.QuerySet):
    def that_count(self):
        """The answers exported and reported: those of annotators who consented and
        are active. A screening answer counts only once its author consents (someone
        who answers and then declines, or never comes back, is never shown); an
        annotator a researcher disabled (*is active* unticked) counts no more. A
        personal-data purge leaves ``is_active`` alone, so a purged study's answers
        still count, a written one as ``purged-<row id>``."""
        return self.filter(
            response__annotator__consented_at__isnull=False, response__annotator__is_active=True
        )


class QuestionAnswer(models.Model):
    """One answer: a choice (a multiple-choice question has one row per chosen
    choice), a number on the scale, or a text. Questions and choices that have
    answers cannot be deleted (``RESTRICT``)."""

    response = models.ForeignKey(
        QuestionnaireResponse, on_delete=models.CASCADE, related_name="answers"
    )
    question = models.ForeignKey(Question, on_delete=models.RESTRICT, related_name="answers")
    choice = models.ForeignKey(
        Choice, null=True, blank=True, on_delete=models.RESTRICT, related_name="answers"
    )
    scale = models.PositiveSmallIntegerField(null=True, blank=True)
    text = models.TextField(blank=True, max_length=TEXT_ANSWER_MAX_LENGTH)

    objects = QuestionAnswerQuerySet.as_manager()

    #: A written answer may say who wrote it: personal data, which a personal-data purge
    #: replaces (``studies.personal_data``); choices and numbers stay.
    PERSONAL_FIELDS = ("text",)
    PERSONAL_STUDY = "response__questionnaire__study"

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["response", "question", "choice"], name="question_answer_choice_unique"
            ),
            models.UniqueConstraint(
                fields=["response", "question"],
                condition=Q(choice__isnull=True),
                name="question_answer_value_unique",
            ),
            _check(
                Q(choice__isnull=False, scale__isnull=True, text="")
                | Q(choice__isnull=True, scale__isnull=False, text="")
                | (Q(choice__isnull=True, scale__isnull=True) & ~Q(text="")),
                "answer_one_value",
            ),
            _check(
                Q(scale__isnull=True) | Q(scale__gte=SCALE_MIN, scale__lte=SCALE_MAX),
                "answer_scale_range",
            ),
            _check(~Q(text__regex=r"^\s|\s$"), "answer_text_trimmed"),
            text_cap("question_answer", "text", TEXT_ANSWER_MAX_LENGTH),
        ]

    def __str__(self) -> str:
        return f"Answer to {self.question}"


class ScreeningTally(models.Model):
    """How many screened-out people gave an answer to a question: per choice
    (``answer`` "choice:<choice id>"), per number on the scale ("scale:<n>"), or how
    many wrote a text ("text"), and how many answered the question at all
    ("answered"); the row without a question ("people") counts the people. Incremented atomically (``studies.services.questionnaires``); nothing
    says who."""

    PEOPLE = "people"
    TEXT = "text"
    ANSWERED = "answered"

    questionnaire = models.ForeignKey(
        Questionnaire, on_delete=models.CASCADE, related_name="screening_tallies"
    )
    question = models.ForeignKey(
        Question, null=True, blank=True, on_delete=models.RESTRICT, related_name="tallies"
    )
    answer = models.CharField(max_length=40)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["questionnaire", "question", "answer"],
                condition=Q(question__isnull=False),
                name="screening_tally_unique",
            ),
            # NULLs are distinct in a unique index: the "people" row has its own.
            models.UniqueConstraint(
                fields=["questionnaire"],
                condition=Q(question__isnull=True),
                name="screening_tally_people_unique",
            ),
            _check(
                Q(question__isnull=True, answer="people") | Q(question__isnull=False),
                "tally_people_without_question",
            ),
            _check(Q(count__gte=0), "tally_count_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.answer}: {self.count}"
