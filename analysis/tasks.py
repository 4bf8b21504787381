"""Celery interfaces of the analysis: load ids, call a service (idempotent)."""

from celery import shared_task

from .services import analysis_run_execute, analysis_runs_recover


@shared_task(name="analysis.run", acks_late=True, ignore_result=True)
def analysis_run_task(run_id: int) -> None:
    """Compute one run. Late acknowledgement: a run whose worker dies is redelivered
    and computed again (at most ``services.MAX_ATTEMPTS`` times in all); the soft and
    hard time limits are the CELERY_TASK_* settings."""
    analysis_run_execute(run_id=run_id)


@shared_task(name="analysis.recover_runs", ignore_result=True)
def analysis_runs_recover_task() -> dict:
    """Send runs the queue never took; fail runs a dead worker left running."""
    return analysis_runs_recover()
