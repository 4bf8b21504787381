"""Analysis runs: queue them, execute them, record the outcome."""

import logging

from celery.exceptions import SoftTimeLimitExceeded
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from studies.models import Study

from .models import AnalysisRun
from .report import report_build
from .selectors import judgements_frame

logger = logging.getLogger(__name__)

DEFAULT_PARAMETERS = {
    "excluded_sources": [],
    "include_expired": False,
    "bootstrap_resamples": 1000,
    "seed": 0,
}


def analysis_parameters_clean(parameters: dict | None) -> dict:
    """Fill defaults and reject unknown or ill-typed parameters."""
    parameters = dict(parameters or {})
    unknown = sorted(set(parameters) - DEFAULT_PARAMETERS.keys())
    if unknown:
        raise ValidationError({"parameters": f"Unknown parameters: {', '.join(unknown)}."})
    cleaned = {**DEFAULT_PARAMETERS, **parameters}
    sources = cleaned["excluded_sources"]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise ValidationError({"excluded_sources": "Give a list of source names."})
    if not isinstance(cleaned["include_expired"], bool):
        raise ValidationError({"include_expired": "Must be true or false."})
    for key in ("bootstrap_resamples", "seed"):
        if not isinstance(cleaned[key], int) or isinstance(cleaned[key], bool) or cleaned[key] < 0:
            raise ValidationError({key: "Must be a whole number, 0 or more."})
    cleaned["excluded_sources"] = sorted(set(sources))
    return cleaned


def analysis_run_enqueue(*, study: Study, parameters: dict | None = None, user=None) -> AnalysisRun:
    """Record a queued run and send it to the worker once the transaction commits."""
    from .tasks import analysis_run_task

    run = AnalysisRun.objects.create(
        study=study, parameters=analysis_parameters_clean(parameters), requested_by=user
    )

    def send() -> None:
        try:
            analysis_run_task.delay(run.pk)
        except OperationalError as exc:
            analysis_run_fail(
                run_id=run.pk,
                error=f"The task queue could not be reached ({exc}); try again later.",
            )

    transaction.on_commit(send)
    return run


def analysis_run_fail(*, run_id: int, error: str) -> None:
    now = timezone.now()
    AnalysisRun.objects.filter(pk=run_id).exclude(status=AnalysisRun.Status.DONE).update(
        status=AnalysisRun.Status.FAILED,
        error=error,
        finished_at=now,
    )


def analysis_run_execute(*, run_id: int) -> AnalysisRun | None:
    """Compute the report of run ``run_id`` and store it. Idempotent: a redelivered
    task overwrites the same row; a run already done is left alone."""
    with transaction.atomic():
        run = (
            AnalysisRun.objects.select_for_update()
            .select_related("study")
            .filter(pk=run_id)
            .first()
        )
        if run is None:
            logger.warning("Analysis run %s no longer exists; nothing to do.", run_id)
            return None
        if run.status == AnalysisRun.Status.DONE:
            return run
        run.status = AnalysisRun.Status.RUNNING
        run.started_at = timezone.now()
        run.finished_at = None
        run.error = ""
        run.progress = 0
        run.save(update_fields=["status", "started_at", "finished_at", "error", "progress"])
    try:
        params = run.parameters
        frame = judgements_frame(
            study_id=run.study_id,
            include_expired=params.get("include_expired", False),
            exclude_sources=tuple(params.get("excluded_sources", ())),
        )
        result = report_build(frame=frame, study_slug=run.study.slug, parameters=params)
    except SoftTimeLimitExceeded:
        analysis_run_fail(run_id=run.pk, error="The analysis took longer than the time limit.")
        raise
    except Exception as exc:
        logger.exception("Analysis run %s failed", run.pk)
        analysis_run_fail(run_id=run.pk, error=f"{type(exc).__name__}: {exc}")
        run.refresh_from_db()
        return run
    run.status = AnalysisRun.Status.DONE
    run.result = result
    run.progress = 100
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "result", "progress", "finished_at"])
    return run
