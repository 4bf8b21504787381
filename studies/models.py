"""The study protocol as data (BRIEF §2–§4).

Invariants live in the database (unique and check constraints) so the admin, the
importers and raw ORM writes all obey them. Rules that span tables (a batch's
reflections belong to its context, a judgement's reflection belongs to its
assignment's batch, an annotator's group belongs to their study) are checked by the
services and, on PostgreSQL, by triggers added in migration 0002.
"""

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.lookups import GreaterThan

from .protocol import EMPATHY_SCALE, HUMAN_SOURCE
from .validators import validate_generation_metadata, validate_turns, validate_turns_or_empty

# Study slugs appear in URLs (hyphens welcome); category slugs become CSV column names.
STUDY_SLUG_REGEX = r"^[a-z0-9][a-z0-9_-]*$"
SLUG_REGEX = r"^[a-z][a-z0-9_]*$"
# A prefix must not end in a digit or a space: "Layperson 3" must split back into
# ("Layperson", 3), which is how published data names groups (BRIEF §6).
PREFIX_REGEX = r"^[^\s0-9](.*[^\s0-9])?$"
MAX_CATEGORY_BIT = 30


def new_access_token() -> str:
    return secrets.token_urlsafe(24)


def new_study_seed() -> int:
    return secrets.randbelow(2**31)


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
        blank=True, help_text="For researchers; not shown to annotators."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    contact_email = models.EmailField(
        blank=True, help_text="Shown to annotators on the information sheet."
    )

    information_sheet = models.TextField(
        blank=True,
        help_text="Task, purpose, workload, pay, data use, contact. Editing it creates a new "
        "consent version; earlier consents keep pointing at the version they accepted.",
    )
    consent_text = models.TextField(
        blank=True, help_text="The statement annotators tick to consent."
    )

    tutorial_intro = models.TextField(blank=True)
    tutorial_example_turns = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_turns_or_empty],
        help_text='Worked example dialogue: [{"role": "therapist", "text": "..."}, ...]',
    )
    tutorial_example_notes = models.TextField(blank=True)
    tutorial_empathy_explanation = models.TextField(
        blank=True, help_text="How the 5-point agreement question works (shown to annotators)."
    )

    overlap_k = models.PositiveSmallIntegerField("annotators per batch per group (k)", default=3)
    batches_per_stage = models.PositiveSmallIntegerField(
        "batches per annotator per stage (m)", default=5
    )
    batch_time_limit = models.DurationField(
        default=timedelta(minutes=30), help_text="Time allowed per batch, e.g. 00:30:00."
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
        help_text="Crowd workers arriving by the study's join link "
        "(/s/<slug>/join?PROLIFIC_PID=… or ?workerId=…) join this group. Empty: no crowd entry.",
    )
    crowd_completion_code = models.CharField(
        max_length=100, blank=True, help_text="Shown to crowd workers when they finish."
    )
    crowd_return_url = models.URLField(
        blank=True,
        help_text="Where finished crowd workers go back to, e.g. "
        "https://app.prolific.com/submissions/complete?cc=CODE",
    )
    seed = models.PositiveIntegerField(
        default=new_study_seed,
        help_text="Seeds every random choice of the study (attention checks, shuffles, "
        "assignment), so they can be reproduced for audits.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "studies"
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
        ]

    def __str__(self) -> str:
        return self.title


class ConsentVersion(models.Model):
    """An immutable snapshot of the information sheet and consent statement."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consent_versions")
    number = models.PositiveIntegerField()
    information_sheet = models.TextField()
    consent_text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="consent_version_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="consent_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} consent v{self.number}"


class Stage(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="stages")
    position = models.PositiveSmallIntegerField(
        help_text="1, 2, ...: annotators do stages in order."
    )
    name = models.CharField(max_length=100, help_text='e.g. "GPT-2 stage"')
    min_wait = models.DurationField(
        default=timedelta(days=3),
        help_text="Minimum wait before an annotator may start this stage, counted from their "
        "own completion of the previous stage (0 allowed). Format: 'DD HH:MM:SS'.",
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
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.study.slug})"

    @property
    def public_name(self) -> str:
        """What annotators see: "Stage 2". Stage names such as "GPT-3 stage" would tell
        them which candidates come from a model (BRIEF §4)."""
        return f"Stage {self.position}"


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


class ErrorCategory(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="categories")
    slug = models.CharField(
        max_length=64, help_text="Column name in exports, e.g. off_topic. Lower-case, digits, _."
    )
    label = models.CharField(max_length=100)
    definition = models.TextField(help_text="Short definition shown next to the checkbox.")
    order = models.PositiveSmallIntegerField(default=0, help_text="Display order.")
    bit = models.PositiveSmallIntegerField(
        help_text="Storage position in judgements (0–30). Never change it once annotated."
    )
    example_reflection = models.TextField(
        blank=True, help_text="Tutorial: a response to the worked example showing this error."
    )
    example_explanation = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "error categories"
        ordering = ["study", "order", "bit"]
        constraints = [
            models.UniqueConstraint(fields=["study", "slug"], name="category_slug_unique"),
            models.UniqueConstraint(fields=["study", "label"], name="category_label_unique"),
            models.UniqueConstraint(fields=["study", "bit"], name="category_bit_unique"),
            models.CheckConstraint(
                condition=Q(slug__regex=SLUG_REGEX), name="category_slug_format"
            ),
            models.CheckConstraint(
                condition=Q(bit__lte=MAX_CATEGORY_BIT), name="category_bit_range"
            ),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def mask(self) -> int:
        return 1 << self.bit


class DialogueContext(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="contexts")
    external_id = models.CharField(
        max_length=100, help_text="Id of the source dialogue (annomi_dialogue_id in exports)."
    )
    turns = models.JSONField(
        validators=[validate_turns],
        help_text='Oldest first: [{"role": "therapist"|"client", "text": "..."}, ...]',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_id"], name="context_external_id_unique"
            ),
            models.CheckConstraint(
                condition=~Q(external_id=""), name="context_external_id_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class Reflection(models.Model):
    class Kind(models.TextChoices):
        HUMAN = "human", "Human"
        SYNTHETIC = "synthetic", "Synthetic"
        ATTENTION_CHECK = "attention_check", "Attention check"

    context = models.ForeignKey(
        DialogueContext, on_delete=models.CASCADE, related_name="reflections"
    )
    text = models.TextField()
    source = models.CharField(
        max_length=100, help_text=f'"{HUMAN_SOURCE}" for the human reflection, else e.g. "GPT-2".'
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    generation = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_generation_metadata],
        help_text="model, decoding, p, prompt_type, complexity (simple/complex)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["context", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["context", "source", "text"], name="reflection_unique_in_context"
            ),
            models.UniqueConstraint(
                fields=["context"],
                condition=Q(kind="human"),
                name="reflection_one_human_per_context",
            ),
            models.CheckConstraint(condition=~Q(text=""), name="reflection_text_not_empty"),
            models.CheckConstraint(condition=~Q(source=""), name="reflection_source_not_empty"),
            models.CheckConstraint(
                condition=Q(kind__in=["human", "synthetic", "attention_check"]),
                name="reflection_kind_valid",
            ),
            # BRIEF §5: the source "Human" is the human reflection; every other is not.
            models.CheckConstraint(
                condition=Q(kind="human", source=HUMAN_SOURCE)
                | (~Q(kind="human") & ~Q(source=HUMAN_SOURCE)),
                name="reflection_human_kind_matches_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source}: {self.text[:60]}"


class Batch(models.Model):
    """One context's human, synthetic and attention-check reflections in one stage."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="batches")
    context = models.ForeignKey(DialogueContext, on_delete=models.CASCADE, related_name="batches")
    reflections = models.ManyToManyField(Reflection, through="BatchItem", related_name="batches")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["stage", "context"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "context"], name="batch_one_per_stage_context"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stage.name} / {self.context.external_id}"


class BatchItem(models.Model):
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="items")
    reflection = models.ForeignKey(Reflection, on_delete=models.PROTECT, related_name="batch_items")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "reflection"], name="batch_item_unique"),
            models.UniqueConstraint(
                fields=["batch", "position"], name="batch_item_position_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.batch_id} #{self.position}"


class Annotator(models.Model):
    class Platform(models.TextChoices):
        NONE = "", "Invitation link"
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="annotators")
    group = models.ForeignKey(AnnotatorGroup, on_delete=models.PROTECT, related_name="annotators")
    number = models.PositiveIntegerField()
    pseudonym = models.CharField(max_length=120, help_text='"<group prefix> <number>"')
    access_token = models.CharField(
        max_length=64, unique=True, default=new_access_token, editable=False
    )
    is_active = models.BooleanField(
        default=True, help_text="Untick to disable this annotator's invitation link."
    )
    platform = models.CharField(max_length=20, choices=Platform.choices, blank=True, default="")
    platform_participant_id = models.CharField(
        max_length=200, blank=True, help_text="Crowd-platform worker id. Never exported."
    )
    platform_data = models.JSONField(
        default=dict, blank=True, help_text="Crowd-platform session ids. Never exported."
    )
    email = models.EmailField(
        blank=True, help_text="Optional, for waiting-period reminders. Never exported."
    )
    consented_version = models.ForeignKey(
        ConsentVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="consents"
    )
    consented_at = models.DateTimeField(null=True, blank=True)
    tutorial_completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "group", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "pseudonym"], name="annotator_pseudonym_unique"
            ),
            models.UniqueConstraint(fields=["group", "number"], name="annotator_number_unique"),
            models.UniqueConstraint(
                fields=["study", "platform", "platform_participant_id"],
                condition=~Q(platform=""),
                name="annotator_platform_id_unique",
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="annotator_number_positive"),
            models.CheckConstraint(
                condition=Q(platform__in=["", "prolific", "mturk"]), name="annotator_platform_valid"
            ),
            models.CheckConstraint(
                condition=Q(platform="", platform_participant_id="")
                | (~Q(platform="") & ~Q(platform_participant_id="")),
                name="annotator_platform_id_with_platform",
            ),
            models.CheckConstraint(
                condition=Q(consented_version__isnull=True, consented_at__isnull=True)
                | Q(consented_version__isnull=False, consented_at__isnull=False),
                name="annotator_consent_version_and_time",
            ),
        ]

    def __str__(self) -> str:
        return self.pseudonym


class Assignment(models.Model):
    """One annotator's work on one batch.

    ``group`` and ``stage`` repeat the annotator's group and the batch's stage (kept
    consistent by a PostgreSQL trigger) so that the database itself can cap the work:
    an active assignment holds one of the k ``group_slot``s of its batch for its group
    and one of the m ``annotator_slot``s of its annotator in its stage; expired and
    rejected assignments release both.
    """

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        IN_PROGRESS = "in_progress", "In progress"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"
        REJECTED = "rejected", "Rejected"

    ACTIVE = ("assigned", "in_progress", "submitted")
    OPEN = ("assigned", "in_progress")

    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="assignments")
    batch = models.ForeignKey(Batch, on_delete=models.PROTECT, related_name="assignments")
    group = models.ForeignKey(AnnotatorGroup, on_delete=models.PROTECT, related_name="assignments")
    stage = models.ForeignKey(Stage, on_delete=models.PROTECT, related_name="assignments")
    group_slot = models.PositiveSmallIntegerField(help_text="1..k among the group's annotators.")
    annotator_slot = models.PositiveSmallIntegerField(
        help_text="1..m among the annotator's batches in the stage."
    )
    order = models.JSONField(
        help_text="This annotator's shuffled order of the batch's reflection ids (stable)."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ASSIGNED)
    is_recurring = models.BooleanField(
        default=False, help_text="The annotator already judged this context in an earlier stage."
    )
    assigned_at = models.DateTimeField()
    expires_at = models.DateTimeField(help_text="Not submitted by then: the assignment expires.")
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    rejected_at = models.DateTimeField(null=True, blank=True)
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rejection_reason = models.TextField(blank=True)
    attention_passed = models.BooleanField(
        null=True, blank=True, help_text="Outcome of the hidden attention check (set on submit)."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-assigned_at"]
        indexes = [
            models.Index(fields=["status", "expires_at"], name="assignment_open_deadline"),
            models.Index(
                fields=["annotator", "stage", "status"], name="assignment_annotator_stage"
            ),
        ]
        constraints = [
            # One batch per (stage, context), so this is also "one per context per stage".
            models.UniqueConstraint(fields=["annotator", "batch"], name="assignment_unique"),
            # At most k active assignments per batch and group, at most m per annotator
            # and stage: the services pick free slots, these indexes refuse a double.
            models.UniqueConstraint(
                fields=["batch", "group", "group_slot"],
                condition=Q(status__in=["assigned", "in_progress", "submitted"]),
                name="assignment_group_slot_unique",
            ),
            models.UniqueConstraint(
                fields=["annotator", "stage", "annotator_slot"],
                condition=Q(status__in=["assigned", "in_progress", "submitted"]),
                name="assignment_annotator_slot_unique",
            ),
            models.CheckConstraint(
                condition=Q(group_slot__gte=1, annotator_slot__gte=1),
                name="assignment_slots_positive",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["assigned", "in_progress", "submitted", "expired", "rejected"]
                ),
                name="assignment_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=F("assigned_at")),
                name="assignment_expires_after_assigned",
            ),
            models.CheckConstraint(
                condition=~Q(status="submitted") | Q(submitted_at__isnull=False),
                name="assignment_submitted_has_time",
            ),
            models.CheckConstraint(
                condition=~Q(status__in=["assigned", "in_progress"])
                | Q(submitted_at__isnull=True, expired_at__isnull=True, rejected_at__isnull=True),
                name="assignment_open_not_closed",
            ),
            models.CheckConstraint(
                condition=~Q(status="expired") | Q(expired_at__isnull=False),
                name="assignment_expired_has_time",
            ),
            models.CheckConstraint(
                condition=~Q(status="rejected")
                | (Q(rejected_at__isnull=False) & ~Q(rejection_reason="")),
                name="assignment_rejected_has_reason",
            ),
            models.CheckConstraint(
                condition=Q(started_at__isnull=True) | Q(started_at__gte=F("assigned_at")),
                name="assignment_started_after_assigned",
            ),
            models.CheckConstraint(
                condition=Q(submitted_at__isnull=True) | Q(submitted_at__gte=F("assigned_at")),
                name="assignment_submitted_after_assigned",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} – {self.batch}"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN


class WaitExemption(models.Model):
    """A researcher lets one annotator start a stage without its minimum wait."""

    annotator = models.ForeignKey(
        Annotator, on_delete=models.CASCADE, related_name="wait_exemptions"
    )
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="wait_exemptions")
    reason = models.TextField(blank=True)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "stage"], name="wait_exemption_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} may start {self.stage} without waiting"


class StageUnlockNotice(models.Model):
    """An e-mail told the annotator that their waiting period for a stage is over."""

    annotator = models.ForeignKey(
        Annotator, on_delete=models.CASCADE, related_name="unlock_notices"
    )
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="+")
    sent_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "stage"], name="unlock_notice_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} told {self.stage} is open"


class Judgement(models.Model):
    """One annotator's answer for one reflection of one assignment.

    Selected error categories are stored as a bit set (``ErrorCategory.bit``) so the
    database itself can check "categories only on No" and "the most evident error is
    one of the selected categories", and analysis reads one integer per row.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="judgements")
    reflection = models.ForeignKey(Reflection, on_delete=models.PROTECT, related_name="judgements")
    coherent = models.BooleanField()
    error_flags = models.PositiveIntegerField(
        default=0, help_text="Bit set of selected ErrorCategory.bit values."
    )
    most_evident_bit = models.PositiveSmallIntegerField(null=True, blank=True)
    empathy = models.PositiveSmallIntegerField(
        null=True, blank=True, choices=sorted(EMPATHY_SCALE.items())
    )
    seconds_spent = models.FloatField(null=True, blank=True)
    revision = models.PositiveIntegerField(
        default=1,
        db_default=1,  # bulk loads that bypass the ORM (COPY) get it too
        help_text="1 for the first answer, one more for every revision: a save made "
        "from a page that showed an older revision is refused, so a late, abandoned "
        "request cannot overwrite a newer answer.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "id"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "reflection"], name="judgement_unique"),
            models.CheckConstraint(
                condition=Q(coherent=False) | Q(error_flags=0),
                name="judgement_categories_only_when_incoherent",
            ),
            models.CheckConstraint(
                condition=Q(most_evident_bit__isnull=True) | Q(coherent=False),
                name="judgement_mee_only_when_incoherent",
            ),
            models.CheckConstraint(
                condition=Q(most_evident_bit__isnull=True)
                | (
                    Q(most_evident_bit__lte=MAX_CATEGORY_BIT)
                    & Q(
                        GreaterThan(
                            F("error_flags").bitand(Value(1).bitleftshift(F("most_evident_bit"))),
                            0,
                        )
                    )
                ),
                name="judgement_mee_among_selected",
            ),
            models.CheckConstraint(
                condition=Q(empathy__isnull=True)
                | Q(coherent=True, empathy__gte=1, empathy__lte=5),
                name="judgement_empathy_only_when_coherent",
            ),
            models.CheckConstraint(
                condition=Q(seconds_spent__isnull=True) | Q(seconds_spent__gte=0),
                name="judgement_seconds_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.assignment.annotator}: {'Yes' if self.coherent else 'No'}"


# Messages shown in forms (the admin) when a check constraint refuses a value; the
# database raises the same constraint by name for raw writes.
CHECK_MESSAGES = {
    "study_slug_format": "Use lower-case letters, digits, hyphens and underscores only.",
    "study_status_valid": "Status must be draft, open or closed.",
    "study_overlap_k_positive": "At least one annotator per batch and group is needed.",
    "study_batches_per_stage_positive": "Each annotator needs at least one batch per stage.",
    "study_time_limit_positive": "The time allowed per batch must be longer than zero.",
    "study_attention_policy_valid": "Choose what a failed attention check does.",
    "consent_version_positive": "Consent versions are numbered from 1.",
    "stage_position_positive": "Stage positions start at 1.",
    "stage_name_not_empty": "A stage needs a name.",
    "stage_min_wait_not_negative": "The minimum wait cannot be negative (0 is allowed).",
    "group_name_not_empty": "A group needs a name.",
    "group_prefix_format": "The pseudonym prefix must not start or end with a space or a digit "
    '(annotators are named "<prefix> <number>").',
    "category_slug_format": "Use lower-case letters, digits and underscores, starting with a letter.",
    "category_bit_range": "A category's storage bit must be between 0 and 30.",
    "context_external_id_not_empty": "A context needs its dialogue id.",
    "reflection_text_not_empty": "A reflection needs text.",
    "reflection_source_not_empty": "A reflection needs a source.",
    "reflection_kind_valid": "Kind must be human, synthetic or attention check.",
    "reflection_human_kind_matches_source": f'The human reflection has the source "{HUMAN_SOURCE}", '
    "and only it does.",
    "annotator_number_positive": "Annotator numbers start at 1.",
    "annotator_platform_valid": "Unknown crowd platform.",
    "annotator_platform_id_with_platform": "A platform participant id needs its platform, and "
    "the other way round.",
    "annotator_consent_version_and_time": "Consent needs both the version and the time.",
    "assignment_slots_positive": "Slots are numbered from 1.",
    "assignment_status_valid": "Unknown assignment status.",
    "assignment_expires_after_assigned": "The deadline must come after the assignment.",
    "assignment_submitted_has_time": "A submitted assignment needs its submission time.",
    "assignment_open_not_closed": "An open assignment cannot have a submission, expiry or "
    "rejection time.",
    "assignment_expired_has_time": "An expired assignment needs its expiry time.",
    "assignment_rejected_has_reason": "A rejection needs a reason and a time.",
    "assignment_started_after_assigned": "Work cannot start before the batch was assigned.",
    "assignment_submitted_after_assigned": "A batch cannot be submitted before it was assigned.",
    "judgement_categories_only_when_incoherent": "Error categories can only be chosen when the "
    "answer is No.",
    "judgement_mee_only_when_incoherent": "A most evident error can only be chosen when the "
    "answer is No.",
    "judgement_mee_among_selected": "The most evident error must be one of the chosen categories.",
    "judgement_empathy_only_when_coherent": "The 1–5 rating is only given when the answer is Yes.",
    "judgement_seconds_not_negative": "Time spent cannot be negative.",
}

for _model in (
    Study,
    ConsentVersion,
    Stage,
    AnnotatorGroup,
    ErrorCategory,
    DialogueContext,
    Reflection,
    Annotator,
    Assignment,
    Judgement,
):
    for _constraint in _model._meta.constraints:
        if isinstance(_constraint, models.CheckConstraint):
            _constraint.violation_error_message = CHECK_MESSAGES[_constraint.name]


class AnnotatorSession(AbstractBaseSession):
    """The site's database sessions (``SESSION_ENGINE = "annotation_site.sessions"``):
    Django's session row plus, as a column, the annotators signed in with it
    ({study slug: annotator id}, also in the session data), so every annotator page
    reads the session's annotator, study and categories in one query
    (``selectors.annotator_of_session``)."""

    annotators = models.JSONField(default=dict, blank=True)

    class Meta(AbstractBaseSession.Meta):
        db_table = "studies_session"

    @classmethod
    def get_session_store_class(cls):
        from annotation_site.sessions import SessionStore

        return SessionStore
