"""Celery interfaces of the analysis: load ids, call a service (idempotent).

Each task imports the service it calls inside its body: the services enqueue these
tasks by name (``services.RUN_TASK``), so neither module imports the other at load
time and the import graph has no cycle (the import-linter contract in
``pyproject.toml``).
"""

from celery import shared_task


@shared_task(name="analysis.run", acks_late=True, ignore_result=True)
def analysis_run_task(run_id: int) -> None:
    """Compute one run. Late acknowledgement: a run whose worker dies is redelivered
    and computed again (at most ``services.MAX_ATTEMPTS`` times in all); the soft and
    hard time limits are the CELERY_TASK_* settings."""
    from .services import analysis_run_execute

    analysis_run_execute(run_id=run_id)


@shared_task(name="analysis.request_auto_runs", ignore_result=True)
def analysis_runs_request_auto_task() -> list[int]:
    """Ask for a fresh report of each study with submissions newer than its last
    automatic run, debounced (``ANALYSIS_AUTO_DELAY``)."""
    from .services import analysis_runs_request_auto

    return analysis_runs_request_auto()


@shared_task(name="analysis.recover_runs", ignore_result=True)
def analysis_runs_recover_task() -> dict:
    """Send runs the queue never took; fail runs a dead worker left running."""
    from .services import analysis_runs_recover

    return analysis_runs_recover()
