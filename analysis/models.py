import sys

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from .metrics.overlap import METRICS


class AnalysisRun(models.Model):
    """One computation of a study's agreement report, queued to Celery."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Started by a researcher"
        AUTO = "auto", "After new submissions"
        COMMAND = "command", "manage.py analyze"

    study = models.ForeignKey(
        "studies.Study", on_delete=models.CASCADE, related_name="analysis_runs"
    )
    parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="How many times a worker started computing this run."
    )
    dispatched_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the task last reached the queue; empty while the queue was unreachable.",
    )
    dispatches = models.PositiveSmallIntegerField(
        default=0,
        help_text="How many times the task was sent to the queue (again when a sent one "
        "was lost, e.g. by a broker restart).",
    )
    task_id = models.CharField(
        max_length=36,
        blank=True,
        help_text="The id of the task message last sent for this run, then of the one "
        "that started it: while queued, any of its messages may start it; once started, "
        "the others are ignored, so a run sent twice is computed once.",
    )
    data_through = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Automatic runs: the newest submission (or rejection of a submitted "
        "batch) they were asked for; a newer one asks for the next automatic run.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]),
                name="analysis_run_status_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="done") | Q(result__isnull=False, finished_at__isnull=False),
                name="analysis_run_done_has_result",
            ),
            models.CheckConstraint(
                condition=~Q(status="failed") | (~Q(error="") & Q(finished_at__isnull=False)),
                name="analysis_run_failed_has_error",
            ),
            models.CheckConstraint(
                condition=Q(progress__lte=100), name="analysis_run_progress_range"
            ),
            models.CheckConstraint(
                condition=Q(trigger__in=["manual", "auto", "command"]),
                name="analysis_run_trigger_valid",
            ),
            # Debounce: one automatic run waiting per study is enough, since a run
            # reads the data when it starts (analysis_runs_request_auto).
            models.UniqueConstraint(
                fields=["study"],
                condition=Q(status="queued", trigger="auto"),
                name="analysis_run_one_waiting_auto_run",
            ),
            # Idempotent beat job: never two automatic runs for the same data, even
            # from two beats or a redelivered job.
            models.UniqueConstraint(
                fields=["study", "data_through"],
                condition=Q(trigger="auto"),
                name="analysis_run_auto_once_per_data",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True)
                | Q(started_at__isnull=True)
                | Q(finished_at__gte=F("started_at")),
                name="analysis_run_finished_after_started",
            ),
        ]

    def __str__(self) -> str:
        return f"Analysis #{self.pk} of {self.study.slug} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class AutomaticScore(models.Model):
    """The score an automatic evaluator (BLEU, BERTScore, an LLM judge...) gave one
    reflection in one stage.

    Written only by ``analysis.importers.automatic_scores_import`` (imported scores) and
    ``analysis.computed_scores.automatic_scores_compute`` (the metrics computed here),
    which check what a check constraint cannot: the stage and reflection belong to
    ``study``, and the reflection is an analysed item (not an attention check) of that
    stage's batch.
    """

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported"
        COMPUTED = "computed", "Computed here"

    study = models.ForeignKey(
        "studies.Study", on_delete=models.CASCADE, related_name="automatic_scores"
    )
    stage = models.ForeignKey(
        "studies.Stage", on_delete=models.CASCADE, related_name="automatic_scores"
    )
    # CASCADE: a materials re-import removes reflections it no longer uses, and their
    # scores have nothing left to describe.
    reflection = models.ForeignKey(
        "studies.Reflection", on_delete=models.CASCADE, related_name="automatic_scores"
    )
    evaluator = models.CharField(
        max_length=100, help_text='The metric\'s name, e.g. "BLEU", "BERTScore", "LLM judge".'
    )
    score = models.FloatField()
    origin = models.CharField(
        max_length=10,
        choices=Origin.choices,
        default=Origin.IMPORTED,
        help_text="Imported from a file, or computed here (manage.py compute_scores).",
    )
    imported_at = models.DateTimeField(
        help_text="When an import or a computation last set this score."
    )

    class Meta:
        ordering = ["study", "evaluator", "stage", "reflection"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "reflection", "evaluator"], name="automatic_score_unique"
            ),
            models.CheckConstraint(
                condition=~Q(evaluator=""), name="automatic_score_evaluator_not_empty"
            ),
            # Bounds rather than isfinite(): portable, and PostgreSQL orders NaN above
            # every number, so it fails the upper bound like Infinity does.
            models.CheckConstraint(
                condition=Q(score__gte=-sys.float_info.max, score__lte=sys.float_info.max),
                name="automatic_score_finite",
            ),
            models.CheckConstraint(
                condition=Q(origin="imported") | Q(origin="computed", evaluator__in=METRICS),
                name="automatic_score_origin_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.evaluator} = {self.score:g} ({self.stage.name}, reflection {self.reflection_id})"


# Messages shown in forms when a check constraint refuses a value (as in
# ``studies.models.CHECK_MESSAGES``); raw writes get the constraint's name.
CHECK_MESSAGES = {
    "automatic_score_evaluator_not_empty": "An automatic score needs the evaluator's name.",
    "automatic_score_finite": "A score must be a finite number (not NaN or infinity).",
    "automatic_score_origin_valid": (
        f"Only the metrics computed here ({', '.join(METRICS)}) have computed scores."
    ),
}

for _constraint in AutomaticScore._meta.constraints:
    if isinstance(_constraint, models.CheckConstraint):
        _constraint.violation_error_message = CHECK_MESSAGES[_constraint.name]


class TextEmbedding(models.Model):
    """A text's sentence embedding under one model (L2-normalised float32), computed
    once: a candidate selection and the report's diversity read it by the text's hash."""

    model = models.CharField(max_length=300)
    digest = models.CharField(max_length=64, help_text="SHA-256 of the text.")
    vector = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "digest"], name="text_embedding_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.digest[:12]}"


class CandidateSelection(models.Model):
    """One run of the candidate selection (analysis.candidates) over a study's pools:
    its parameters and seed (the same give the same selection), what it found, and the
    stage it filled."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(
        "studies.Study", on_delete=models.CASCADE, related_name="candidate_selections"
    )
    stage = models.ForeignKey(
        "studies.Stage",
        null=True,
        on_delete=models.SET_NULL,
        related_name="candidate_selections",
        help_text="The stage whose synthetic reflections the selected candidates became.",
    )
    seed = models.BigIntegerField()
    parameters = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    diversity = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Selection {self.pk} ({self.get_status_display()})"


class CandidateCluster(models.Model):
    """One cluster of a context's pool in a selection; its representative is the
    member with the most tokens, and a selected cluster's representative became
    ``reflection`` in the selection's stage."""

    selection = models.ForeignKey(
        CandidateSelection, on_delete=models.CASCADE, related_name="clusters"
    )
    context = models.ForeignKey(
        "studies.DialogueContext", on_delete=models.CASCADE, related_name="+"
    )
    number = models.PositiveIntegerField(help_text="1, 2, … within the context.")
    representative = models.ForeignKey(
        "studies.PoolCandidate", on_delete=models.CASCADE, related_name="+"
    )
    selected = models.BooleanField(default=False)
    reflection = models.ForeignKey(
        "studies.Reflection", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["selection", "context", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["selection", "context", "number"], name="candidate_cluster_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"Cluster {self.number} of context {self.context_id}"


class ClusterMember(models.Model):
    """A pool candidate in a cluster; ``duplicate``: removed before clustering as a
    duplicate (exact, or but for case and punctuation) of a member of this cluster."""

    cluster = models.ForeignKey(CandidateCluster, on_delete=models.CASCADE, related_name="members")
    candidate = models.ForeignKey(
        "studies.PoolCandidate", on_delete=models.CASCADE, related_name="+"
    )
    duplicate = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "candidate"], name="cluster_member_unique"),
        ]

    def __str__(self) -> str:
        return f"Candidate {self.candidate_id} in cluster {self.cluster_id}"
