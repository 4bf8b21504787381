"""Studies and their configuration: the study itself, its annotator groups and the
versioned consent texts (its stages: ``stages``)."""

import secrets
from datetime import timedelta

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from ..limits import PAGE_TEXT_MAX_LENGTH, text_cap
from ..protocol import (
    COHERENCE_QUESTION,
    EMPATHY_STATEMENT,
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


class DataLicense(models.TextChoices):
    """Licences for a published dataset, by the identifiers dataset hubs read."""

    NOT_CHOSEN = "", "Not chosen yet"
    CC_BY_4 = "cc-by-4.0", "CC BY 4.0"
    CC_BY_SA_4 = "cc-by-sa-4.0", "CC BY-SA 4.0"
    CC_BY_NC_4 = "cc-by-nc-4.0", "CC BY-NC 4.0"
    CC_BY_NC_SA_4 = "cc-by-nc-sa-4.0", "CC BY-NC-SA 4.0"
    CC_BY_NC_ND_4 = "cc-by-nc-nd-4.0", "CC BY-NC-ND 4.0"
    CC0 = "cc0-1.0", "CC0 1.0 (public domain)"
    ODC_BY = "odc-by", "ODC Attribution"
    ODBL = "odbl", "ODC Open Database License"
    MIT = "mit", "MIT"
    APACHE_2 = "apache-2.0", "Apache 2.0"
    OTHER = "other", "Other (say which in the study's description)"


#: ISO 639 codes (two or three letters), separated by commas.
LANGUAGES_REGEX = r"^[a-z]{2,3}(, ?[a-z]{2,3})*$"
LANGUAGES_MESSAGE = (
    'Give ISO 639 codes of two or three lower-case letters, separated by commas, e.g. "en" '
    'or "en, de".'
)


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

    # For publishing the data (the dataset card, ``analysis.dataset_card``).
    data_description = models.TextField(
        "description of the published data",
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="The dataset card's opening paragraph, published with the data: what "
        "the dataset is and what it is for. The study's description above stays internal.",
    )
    data_license = models.CharField(
        "licence of the published data",
        max_length=20,
        choices=DataLicense.choices,
        blank=True,
        default=DataLicense.NOT_CHOSEN,
        help_text="The licence the annotations are published under, as dataset hubs name "
        "it; the dataset card gives it.",
    )
    data_languages = models.CharField(
        "languages of the texts",
        max_length=100,
        default="en",
        validators=[RegexValidator(LANGUAGES_REGEX, LANGUAGES_MESSAGE)],
        help_text="ISO 639 codes of the dialogues' and reflections' languages, separated by "
        'commas, e.g. "en" or "en, de"; the dataset card gives them.',
    )

    work_recorded = models.BooleanField(
        default=True,
        editable=False,
        help_text="Whether the study's assignments carry when and in what order the work "
        "was done. A study imported from a published file does not (its assignments carry "
        "the import's time and a made-up order): the statistics of times and of order, "
        "such as the waiting periods and the order effects, are unknown.",
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
                    "data_description",
                )
            ),
            models.CheckConstraint(
                condition=~Q(coherence_question=""), name="study_coherence_question_not_empty"
            ),
            models.CheckConstraint(
                condition=Q(data_license__in=DataLicense.values), name="study_data_license_valid"
            ),
            models.CheckConstraint(
                condition=Q(data_languages__regex=LANGUAGES_REGEX),
                name="study_data_languages_format",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def data_language_list(self) -> list[str]:
        """``data_languages`` as a list of codes."""
        return [code.strip() for code in self.data_languages.split(",") if code.strip()]

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
