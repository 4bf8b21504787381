from django.conf import settings
from django.db import models
from django.db.models import F, Q


class AnalysisRun(models.Model):
    """One computation of a study's agreement report, queued to Celery."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

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
