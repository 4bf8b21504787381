"""Studies and their configuration: stages, annotator groups, error categories and the
versioned consent texts."""

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q

from ..validators import validate_turns_or_empty

# Study slugs appear in URLs (hyphens welcome); category slugs become CSV column names.
STUDY_SLUG_REGEX = r"^[a-z0-9][a-z0-9_-]*$"
SLUG_REGEX = r"^[a-z][a-z0-9_]*$"
# A prefix must not end in a digit or a space: "Layperson 3" must split back into
# ("Layperson", 3), which is how published data names groups (BRIEF §6).
PREFIX_REGEX = r"^[^\s0-9](.*[^\s0-9])?$"
MAX_CATEGORY_BIT = 30


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
