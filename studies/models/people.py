"""Annotators, what the protocol grants or tells them one by one (wait exemptions,
unlock notices), and the browser sessions they are signed in with."""

import secrets
from importlib import import_module

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models
from django.db.models import Q

from ..limits import REASON_MAX_LENGTH, text_cap
from .stages import Stage
from .study import AnnotatorGroup, ConsentVersion, Study


def new_access_token() -> str:
    return secrets.token_urlsafe(24)


#: An annotator whose screening answer ended their participation (the one condition;
#: ``services.screening.screened_out_exists`` is its per-row form).
SCREENED_OUT = Q(questionnaire_responses__screened_out=True)


class AnnotatorQuerySet(models.QuerySet):
    def participating(self):
        """Annotators who take part: active (their link not disabled) and not screened
        out by a screening answer. The study page's headcount and what the others can
        still take (``study_progress``) both count these."""
        return self.filter(is_active=True).exclude(SCREENED_OUT)


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
        default=dict,
        blank=True,
        help_text="Crowd-platform ids of the first visit. Never exported.",
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

    objects = AnnotatorQuerySet.as_manager()

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

    #: The personal data of this row (crowd ids, e-mail, the invitation link's secret):
    #: never exported; what a personal-data purge clears (``studies.personal_data``
    #: reads every model's ``PERSONAL_FIELDS``). ``CrowdEntry.PERSONAL_FIELDS`` holds
    #: the rest.
    PERSONAL_FIELDS = ("platform_participant_id", "platform_data", "email", "access_token")

    def __str__(self) -> str:
        return self.pseudonym


class CrowdEntry(models.Model):
    """A crowd worker's entry into one stage through their platform: one Prolific
    submission (its ``SESSION_ID``) or one MTurk assignment (``assignmentId``). Each
    stage is paid on its own, so each has its own entry, and its outcome once the
    worker was sent back (``studies.services.crowd``)."""

    class Outcome(models.TextChoices):
        COMPLETED = "completed", "Completed the stage"
        SCREENED_OUT = "screened_out", "Screened out"
        # The stage ended for them before they submitted anything (every batch that
        # could be theirs was done by others): nothing to pay as a completion.
        NO_WORK = "no_work", "No work left"
        # They submitted some batches of the stage, then none could be theirs right
        # away: the stage ends for them there, paid with its partial-completion code.
        PARTIAL = "partial", "Finished part of the stage"

    class SubmitTo(models.TextChoices):
        """Where an MTurk ExternalQuestion posts its result (the HIT's ``turkSubmitTo``)."""

        NONE = "", "Not MTurk"
        WORKER = "https://www.mturk.com", "MTurk"
        SANDBOX = "https://workersandbox.mturk.com", "MTurk sandbox"

    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="crowd_entries")
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="crowd_entries")
    platform = models.CharField(max_length=20, choices=Annotator.Platform.choices)
    session_id = models.CharField(
        max_length=200,
        blank=True,
        help_text="Prolific SESSION_ID or MTurk assignmentId. Never exported.",
    )
    platform_study_id = models.CharField(
        max_length=200, blank=True, help_text="Prolific STUDY_ID or MTurk hitId. Never exported."
    )
    submit_to = models.CharField(max_length=64, blank=True, default="", choices=SubmitTo.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=20, blank=True, default="", choices=Outcome.choices)
    returned_at = models.DateTimeField(null=True, blank=True)

    #: Personal data, cleared by a personal-data purge (with ``Annotator.PERSONAL_FIELDS``).
    PERSONAL_FIELDS = ("session_id", "platform_study_id")

    class Meta:
        verbose_name_plural = "crowd entries"
        constraints = [
            models.UniqueConstraint(fields=["annotator", "stage"], name="crowd_entry_unique"),
            models.CheckConstraint(
                condition=Q(platform__in=["prolific", "mturk"]), name="crowd_entry_platform_valid"
            ),
            models.CheckConstraint(
                condition=Q(outcome__in=["", "completed", "screened_out", "no_work", "partial"]),
                name="crowd_entry_outcome_valid",
            ),
            models.CheckConstraint(
                condition=Q(outcome="", returned_at__isnull=True)
                | (~Q(outcome="") & Q(returned_at__isnull=False)),
                name="crowd_entry_outcome_with_time",
            ),
            models.CheckConstraint(
                condition=Q(submit_to="")
                | Q(
                    platform="mturk",
                    submit_to__in=["https://www.mturk.com", "https://workersandbox.mturk.com"],
                ),
                name="crowd_entry_submit_to_mturk",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.stage}"


class WaitExemption(models.Model):
    """A researcher lets one annotator start a stage without its minimum wait."""

    annotator = models.ForeignKey(
        Annotator, on_delete=models.CASCADE, related_name="wait_exemptions"
    )
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="wait_exemptions")
    reason = models.TextField(blank=True, max_length=REASON_MAX_LENGTH)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "stage"], name="wait_exemption_unique"),
            text_cap("wait_exemption", "reason", REASON_MAX_LENGTH),
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


class TutorialReading(models.Model):
    """The annotator read (and confirmed) the tutorial as it stood for a stage: asked
    once per stage with a tutorial of its own (``Stage.has_own_tutorial``)."""

    annotator = models.ForeignKey(
        Annotator, on_delete=models.CASCADE, related_name="tutorial_readings"
    )
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="+")
    read_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "stage"], name="tutorial_reading_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} read the tutorial of {self.stage}"


class AnnotatorSession(AbstractBaseSession):
    """The site's database sessions (``SESSION_ENGINE = "studies.sessions"``):
    Django's session row plus, as a column, the annotators signed in with it
    ({study slug: annotator id}, also in the session data), so every annotator page
    reads the session's annotator, study and categories in one query
    (``studies.hot_path.annotator_of_session``)."""

    annotators = models.JSONField(default=dict, blank=True)

    @staticmethod
    def live_q(*, session_key, now) -> Q:
        """The session ``session_key`` if it has not expired (as Django's stores read)."""
        return Q(session_key=session_key, expire_date__gt=now)

    class Meta(AbstractBaseSession.Meta):
        db_table = "studies_session"

    @classmethod
    def get_session_store_class(cls):
        # The configured engine's store (studies.sessions): found through the setting,
        # so this model does not import the store that imports it.
        return import_module(settings.SESSION_ENGINE).SessionStore
