"""Studies and their configuration: stages, annotator groups, error categories and the
versioned consent texts."""

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from ..limits import PAGE_TEXT_MAX_LENGTH, text_cap
from ..protocol import (
    COHERENCE_QUESTION,
    EMPATHY_STATEMENT,
    INSTRUMENT_COHERENCE,
    INSTRUMENT_LIKERT,
    NO_ANSWER_BOTH,
    NO_ANSWER_CATEGORIES,
    NO_ANSWER_FREE_TEXT,
    AnswerSettings,
    default_empathy_labels,
    default_mee_merge,
)
from ..validators import validate_empathy_labels, validate_mee_merge, validate_turns_or_empty

# Study slugs appear in URLs (hyphens welcome); category slugs become CSV column names.
STUDY_SLUG_REGEX = r"^[a-z0-9][a-z0-9_-]*$"
SLUG_REGEX = r"^[a-z][a-z0-9_]*$"
# A prefix must not end in a digit or a space: "Layperson 3" must split back into
# ("Layperson", 3), which is how published data names groups.
PREFIX_REGEX = r"^[^\s0-9](.*[^\s0-9])?$"
MAX_CATEGORY_BIT = 30


def new_study_seed() -> int:
    return secrets.randbelow(2**31)


def new_stage_key() -> str:
    """A stage's join key: what its crowd join link carries, so only people given the
    link (on the platform) can enter that stage."""
    return secrets.token_urlsafe(12)


CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes are read and typed
CODE_REGEX = r"^[A-Za-z0-9_-]{1,64}$"
PLATFORM_TASK_IDS_REGEX = r"^([A-Za-z0-9_-]{1,64}(,[A-Za-z0-9_-]{1,64})*)?$"


def new_crowd_code() -> str:
    """A completion code as crowd platforms take them (Prolific accepts a code of the
    researcher's choosing; MTurk shows what the task posts back)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(8))


class StudyQuerySet(models.QuerySet):
    def without_owner(self):
        """Studies no one owns (left so by the migration to roles, or by deleted
        accounts): the admin lists them for superusers to assign an owner."""
        return self.exclude(roles__role="owner")


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    class AttentionPolicy(models.TextChoices):
        RECORD = "record", "Record the outcome only"
        REJECT = "reject", "Reject the assignment and release its slot"

    slug = models.SlugField(
        max_length=64, unique=True, help_text="Lower-case letters, digits, - and _"
    )
    title = models.CharField(max_length=200)
    description = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="For researchers; not shown to annotators.",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    contact_email = models.EmailField(
        blank=True, help_text="Shown to annotators on the information sheet."
    )

    information_sheet = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="Task, purpose, workload, pay, data use, contact. Editing it creates a new "
        "consent version; earlier consents keep pointing at the version they accepted.",
    )
    consent_text = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="The statement annotators tick to consent.",
    )

    tutorial_intro = models.TextField(blank=True, max_length=PAGE_TEXT_MAX_LENGTH)
    tutorial_example_turns = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_turns_or_empty],
        help_text='Worked example dialogue: [{"role": "therapist", "text": "..."}, ...]',
    )
    tutorial_example_notes = models.TextField(blank=True, max_length=PAGE_TEXT_MAX_LENGTH)
    tutorial_empathy_explanation = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="How the 5-point agreement question works (shown to annotators).",
    )

    coherence_question = models.CharField(
        max_length=500,
        default=COHERENCE_QUESTION,
        help_text="The Yes/No question asked of every response candidate.",
    )
    description_prompt = models.CharField(
        max_length=500,
        blank=True,
        help_text="The prompt over the description box after No, in stages that ask for "
        'a description. Empty: "In your own words, what is wrong with it?" where the '
        'description is the answer, "Anything else about what is wrong?" where it '
        'follows the categories (both then marked "(optional)" where it is).',
    )
    empathy_statement = models.TextField(
        max_length=PAGE_TEXT_MAX_LENGTH,
        default=EMPATHY_STATEMENT,
        help_text="The statement annotators rate after Yes (in stages that ask it).",
    )
    empathy_labels = models.JSONField(
        default=default_empathy_labels,
        validators=[validate_empathy_labels],
        help_text='The five labels of the rating, from 1 to 5: ["disagree", …, "agree"].',
    )
    mee_merge = models.JSONField(
        "most evident error merge",
        default=default_mee_merge,
        validators=[validate_mee_merge],
        help_text="Categories the merged most-evident-error analysis counts as one: "
        '{"merged label": ["category slug", ...]}.',
    )

    overlap_k = models.PositiveSmallIntegerField("annotators per batch per group (k)", default=3)
    batches_per_stage = models.PositiveSmallIntegerField(
        "batches per annotator per stage (m)", default=5
    )
    batch_time_limit = models.DurationField(
        default=timedelta(minutes=30),
        help_text='Time allowed per batch, e.g. "30 minutes" or "1 hour".',
    )
    avoid_recurrence = models.BooleanField(
        "avoid recurring contexts where possible",
        default=False,
        help_text="Off by default: the protocol assigns batches at random, so an annotator "
        "may meet a context again in a later stage (recorded as recurring).",
    )
    attention_failure_policy = models.CharField(
        "failed attention check",
        max_length=10,
        choices=AttentionPolicy.choices,
        default=AttentionPolicy.RECORD,
    )
    crowd_group = models.ForeignKey(
        "AnnotatorGroup",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Crowd workers arriving by a stage's join link (shown with each stage) "
        "join this group. Empty: no crowd entry.",
    )
    mturk_frame = models.BooleanField(
        "show in MTurk's frame",
        default=False,
        help_text="Let MTurk (and its sandbox) show this study's annotator pages in its "
        "frame, as an ExternalQuestion HIT. Needs HTTPS: the pages' cookies are then sent "
        "from inside the frame (SameSite=None; Secure). No other page becomes frameable.",
    )
    coding_reveals_sources = models.BooleanField(
        "coding page shows sources and groups",
        default=False,
        help_text="Off by default (blind coding): the coding page hides each description's "
        "source (human or which model), generation settings and annotator group, so coders "
        "comparing exactly those are not swayed by knowing them. Turn on only when the "
        "coding does not compare sources or groups.",
    )
    seed = models.PositiveIntegerField(
        default=new_study_seed,
        help_text="Seeds every random choice of the study (attention checks, shuffles, "
        "assignment), so they can be reproduced for audits.",
    )

    purged_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When the personal data of its annotators was deleted; a purged study "
        "stays closed.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who created the study (its first owner).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = StudyQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "studies"
        # Creating a study is the one thing a global permission grants; everything else
        # is a role in the study (studies.permissions).
        permissions = [("create_study", "May create studies")]
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(slug__regex=STUDY_SLUG_REGEX), name="study_slug_format"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["draft", "open", "closed"]), name="study_status_valid"
            ),
            models.CheckConstraint(condition=Q(overlap_k__gte=1), name="study_overlap_k_positive"),
            models.CheckConstraint(
                condition=Q(batches_per_stage__gte=1), name="study_batches_per_stage_positive"
            ),
            models.CheckConstraint(
                condition=Q(batch_time_limit__gt=timedelta(0)), name="study_time_limit_positive"
            ),
            models.CheckConstraint(
                condition=Q(attention_failure_policy__in=["record", "reject"]),
                name="study_attention_policy_valid",
            ),
            models.CheckConstraint(
                condition=Q(purged_at__isnull=True) | Q(status="closed"),
                name="study_purged_stays_closed",
            ),
            *(
                text_cap("study", field, PAGE_TEXT_MAX_LENGTH)
                for field in (
                    "description",
                    "information_sheet",
                    "consent_text",
                    "tutorial_intro",
                    "tutorial_example_notes",
                    "tutorial_empathy_explanation",
                    "empathy_statement",
                )
            ),
            models.CheckConstraint(
                condition=~Q(coherence_question=""), name="study_coherence_question_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def empathy_scale(self) -> dict[int, str]:
        """The rating's values and this study's labels: {1: "disagree", …}."""
        return dict(enumerate(self.empathy_labels, start=1))


class ConsentVersion(models.Model):
    """An immutable snapshot of the information sheet and consent statement."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consent_versions")
    number = models.PositiveIntegerField()
    information_sheet = models.TextField(max_length=PAGE_TEXT_MAX_LENGTH)
    consent_text = models.TextField(max_length=PAGE_TEXT_MAX_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="consent_version_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="consent_version_positive"),
            text_cap("consent_version", "information_sheet", PAGE_TEXT_MAX_LENGTH),
            text_cap("consent_version", "consent_text", PAGE_TEXT_MAX_LENGTH),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} consent v{self.number}"


class Stage(models.Model):
    class Instrument(models.TextChoices):
        COHERENCE = INSTRUMENT_COHERENCE, "Coherence protocol"
        LIKERT = INSTRUMENT_LIKERT, "Likert ratings on named dimensions"

    class NoAnswer(models.TextChoices):
        CATEGORIES = NO_ANSWER_CATEGORIES, "Error categories (and the most evident error)"
        FREE_TEXT = NO_ANSWER_FREE_TEXT, "A description in the annotator's own words"
        BOTH = NO_ANSWER_BOTH, "Error categories plus an optional description"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="stages")
    position = models.PositiveSmallIntegerField(
        help_text="1, 2, ...: annotators do stages in order."
    )
    name = models.CharField(max_length=100, help_text='e.g. "GPT-2 stage"')
    min_wait = models.DurationField(
        default=timedelta(days=3),
        help_text="Minimum wait before an annotator may start this stage, counted from their "
        'own completion of the previous stage, e.g. "3 days", "2 days 4 hours" or "0".',
    )
    instrument = models.CharField(
        max_length=20,
        choices=Instrument.choices,
        default=Instrument.COHERENCE,
        help_text="What annotators give for each response candidate: the coherence "
        "protocol (Yes/No, then categories, a description or a rating), or ratings on "
        "the stage's Likert dimensions.",
    )
    no_answer = models.CharField(
        'after "No"',
        max_length=20,
        choices=NoAnswer.choices,
        default=NoAnswer.CATEGORIES,
        help_text="What annotators give when they answer No. A description stage shows no "
        "categories: the first phase of a two-phase study, whose descriptions are then "
        "coded into categories.",
    )
    empathy_after_yes = models.BooleanField(
        'agreement question after "Yes"',
        default=True,
        help_text="Off: nothing follows a Yes.",
    )
    # The stage's own wording and tutorial; each empty field is the study's
    # (``stage_wording``, ``stage_tutorial``).
    coherence_question = models.CharField(
        max_length=500,
        blank=True,
        help_text="The Yes/No question of this stage. Empty: the study's.",
    )
    description_prompt = models.CharField(
        max_length=500,
        blank=True,
        help_text="The prompt over the description box of this stage. Empty: the study's.",
    )
    tutorial_intro = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="This stage's tutorial introduction. Empty: the study's. A stage with "
        "any tutorial text of its own shows its tutorial to each annotator before their "
        "first batch of the stage (e.g. a second phase that explains the categories).",
    )
    tutorial_example_turns = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_turns_or_empty],
        help_text="This stage's worked example dialogue. Empty: the study's.",
    )
    tutorial_example_notes = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="Notes on this stage's worked example. Empty: the study's.",
    )
    tutorial_empathy_explanation = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="How this stage's agreement question works. Empty: the study's.",
    )
    # Crowd platforms pay per stage: each stage has its own join link and codes
    # (studies.services.crowd).
    join_key = models.CharField(
        max_length=32,
        default=new_stage_key,
        help_text="Carried by this stage's crowd join link: only people given the link "
        "can enter the stage. Change it to close the old link.",
    )
    completion_code = models.CharField(
        max_length=64,
        default=new_crowd_code,
        help_text="Given to crowd workers who finish this stage (on Prolific: the "
        "completion code of the Prolific study for this stage).",
    )
    screened_out_code = models.CharField(
        max_length=64,
        blank=True,
        help_text="Given to crowd workers screened out in this stage (e.g. a failed "
        "training quiz), and to those for whom no batch was left before they did any. "
        "Empty: they are asked to return the task on the platform.",
    )
    partial_completion_code = models.CharField(
        max_length=64,
        blank=True,
        default=new_crowd_code,
        help_text="Given to crowd workers who did some of this stage's batches but can get "
        "no further batch now (others hold or did the rest): their stage ends there and "
        "this code pays the work they did (on Prolific: map it to a payment action). A "
        "crowd study cannot open while a stage lacks it.",
    )

    platform_task_ids = models.CharField(
        max_length=500,
        blank=True,
        help_text="Optional: the Prolific study id(s) and MTurk HIT id(s) of this stage's "
        "task on the platform, separated by commas. When set, the stage's join link is "
        "honoured only from one of them.",
    )

    # Which of the study's error categories the stage offers; the rule (none chosen:
    # all of them; the attention check's always) is ``stage_offered_categories``.
    categories = models.ManyToManyField(
        "ErrorCategory",
        blank=True,
        related_name="stages",
        verbose_name="categories offered",
        help_text="The error categories this stage offers after a No. None chosen: all of "
        "the study's categories. A category that catches the attention check is offered "
        "in every stage that asks for categories, chosen or not.",
    )
    categories_from_coding = models.BooleanField(
        "categories from coding",
        default=False,
        help_text="Its categories come from coding an earlier stage's descriptions: the "
        "stage stays closed to annotators until a researcher marks its scheme final "
        '(the stages list\'s action "Mark the error scheme final").',
    )
    scheme_final_at = models.DateTimeField(
        "scheme marked final",
        null=True,
        blank=True,
        editable=False,
        help_text="When a researcher marked this stage's error scheme final (a stage "
        "whose categories come from coding opens to annotators from then on).",
    )
    scheme_final_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="scheme marked final by",
    )

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="stage_position_unique"),
            models.UniqueConstraint(fields=["study", "name"], name="stage_name_unique"),
            models.CheckConstraint(condition=Q(position__gte=1), name="stage_position_positive"),
            models.CheckConstraint(condition=~Q(name=""), name="stage_name_not_empty"),
            models.CheckConstraint(
                condition=Q(min_wait__gte=timedelta(0)), name="stage_min_wait_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(
                    no_answer__in=[NO_ANSWER_CATEGORIES, NO_ANSWER_FREE_TEXT, NO_ANSWER_BOTH]
                ),
                name="stage_no_answer_valid",
            ),
            models.CheckConstraint(
                condition=Q(instrument__in=[INSTRUMENT_COHERENCE, INSTRUMENT_LIKERT]),
                name="stage_instrument_valid",
            ),
            models.UniqueConstraint(fields=["study", "join_key"], name="stage_join_key_unique"),
            models.CheckConstraint(
                condition=Q(join_key__regex=CODE_REGEX), name="stage_join_key_format"
            ),
            models.CheckConstraint(
                condition=Q(completion_code__regex=CODE_REGEX), name="stage_completion_code_format"
            ),
            models.CheckConstraint(
                condition=Q(screened_out_code="") | Q(screened_out_code__regex=CODE_REGEX),
                name="stage_screened_out_code_format",
            ),
            models.CheckConstraint(
                condition=Q(platform_task_ids__regex=PLATFORM_TASK_IDS_REGEX),
                name="stage_platform_task_ids_format",
            ),
            # Every code of a stage differs from the others; across the study's
            # stages, the trigger of migration 0021 keeps them distinct
            # (``studies.services.crowd.stage_codes_validate`` says so first).
            models.CheckConstraint(
                condition=~Q(screened_out_code=F("completion_code"))
                & ~Q(partial_completion_code=F("completion_code"))
                & (
                    Q(partial_completion_code="")
                    | ~Q(partial_completion_code=F("screened_out_code"))
                ),
                name="stage_codes_differ",
            ),
            models.CheckConstraint(
                condition=Q(partial_completion_code="")
                | Q(partial_completion_code__regex=CODE_REGEX),
                name="stage_partial_completion_code_format",
            ),
            models.CheckConstraint(
                condition=Q(categories_from_coding=False) | ~Q(no_answer=NO_ANSWER_FREE_TEXT),
                name="stage_coding_scheme_asks_categories",
            ),
            *(
                text_cap("stage", field, PAGE_TEXT_MAX_LENGTH)
                for field in (
                    "tutorial_intro",
                    "tutorial_example_notes",
                    "tutorial_empathy_explanation",
                )
            ),
        ]

    #: Each stage's codes, each paying one outcome; every code of a study differs from
    #: the others (the check constraint within a stage, the trigger of migration 0021
    #: across its stages, ``studies.services.crowd.stage_codes_validate`` first).
    CODE_FIELDS = ("completion_code", "partial_completion_code", "screened_out_code")

    def __str__(self) -> str:
        return f"{self.name} ({self.study.slug})"

    @classmethod
    def code_label(cls, name: str) -> str:
        """ "completion code", "partial completion code", "screened out code"."""
        return str(cls._meta.get_field(name).verbose_name)

    @property
    def platform_task_id_list(self) -> list[str]:
        """``platform_task_ids`` as a list (empty: any task may carry the link)."""
        return [i for i in self.platform_task_ids.split(",") if i]

    @property
    def answer_settings(self) -> AnswerSettings:
        """What this stage asks after Yes and after No."""
        return AnswerSettings(
            no_answer=self.no_answer,
            empathy_after_yes=self.empathy_after_yes,
            instrument=self.instrument,
        )

    @property
    def wording(self) -> "StageWording":
        """The questions' wording in this stage (``stage_wording``)."""
        return stage_wording(self.study, {name: getattr(self, name) for name in WORDING_FIELDS})

    @property
    def tutorial(self) -> "StageTutorial":
        """This stage's tutorial (``stage_tutorial``)."""
        return stage_tutorial(self.study, self)

    @property
    def has_own_wording(self) -> bool:
        """The stage words its question or description prompt differently."""
        return any(getattr(self, name) for name in WORDING_FIELDS)

    @property
    def has_own_tutorial(self) -> bool:
        """Some tutorial text is the stage's own: each annotator reads its tutorial
        before their first batch of the stage."""
        return any(getattr(self, name) for name in TUTORIAL_FIELDS)

    @property
    def awaits_scheme(self) -> bool:
        """Closed to annotators: its categories come from coding and nobody has marked
        the scheme final yet."""
        return self.categories_from_coding and self.scheme_final_at is None

    @property
    def public_name(self) -> str:
        """What annotators see: "Stage 2". Stage names such as "GPT-3 stage" would tell
        them which candidates come from a model."""
        return f"Stage {self.position}"


#: What a stage may word differently from its study (the item panel's questions) and
#: the parts of its tutorial; each empty field of a stage is the study's.
WORDING_FIELDS = ("coherence_question", "description_prompt")
TUTORIAL_FIELDS = (
    "tutorial_intro",
    "tutorial_example_turns",
    "tutorial_example_notes",
    "tutorial_empathy_explanation",
)


def stage_fallback(study: Study, own: Mapping[str, Any], names: tuple[str, ...]) -> dict:
    """A stage's own texts: each of ``names`` is the stage's value (``own``: a Stage
    or the hot path's row of one) when not empty, else the study's. Every reading of
    a stage's wording and tutorial goes through here."""
    get = own.get if isinstance(own, Mapping) else partial(getattr, own)
    return {name: get(name) or getattr(study, name) for name in names}


@dataclass(frozen=True)
class StageWording:
    """The item panel's questions in one stage."""

    question: str
    #: Empty: the panel's own prompt for the stage's settings.
    description_prompt: str


def stage_wording(study: Study, own: Mapping[str, Any] | Stage) -> StageWording:
    values = stage_fallback(study, own, WORDING_FIELDS)
    return StageWording(
        question=values["coherence_question"], description_prompt=values["description_prompt"]
    )


@dataclass(frozen=True)
class StageTutorial:
    intro: str
    example_turns: list
    example_notes: str
    empathy_explanation: str


def stage_tutorial(study: Study, own: Stage | None) -> StageTutorial:
    """A stage's tutorial (None: the study's, before any stage)."""
    values = stage_fallback(study, own or {}, TUTORIAL_FIELDS)
    return StageTutorial(
        **{name.removeprefix("tutorial_"): values[name] for name in TUTORIAL_FIELDS}
    )


class AnnotatorGroup(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100, help_text='e.g. "Layperson", "Expert"')
    pseudonym_prefix = models.CharField(
        max_length=100,
        help_text='Annotators are named "<prefix> <number>", e.g. "Layperson 3". '
        "Must not end in a digit or space.",
    )

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="group_name_unique"),
            models.UniqueConstraint(
                fields=["study", "pseudonym_prefix"], name="group_prefix_unique"
            ),
            models.CheckConstraint(condition=~Q(name=""), name="group_name_not_empty"),
            models.CheckConstraint(
                condition=Q(pseudonym_prefix__regex=PREFIX_REGEX), name="group_prefix_format"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.study.slug})"
