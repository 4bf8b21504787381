from celery import shared_task

from .services import analysis_run_execute


@shared_task(name="analysis.run", acks_late=True, ignore_result=True)
def analysis_run_task(run_id: int) -> None:
    analysis_run_execute(run_id=run_id)
