"""Celery interfaces of the analysis: load ids, call a service (idempotent).

Each task imports the service it calls inside its body: the services enqueue these
tasks by name (``services.RUN_TASK``), so neither module imports the other at load
time and the import graph has no cycle (the import-linter contract in
``pyproject.toml``).
"""

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="analysis.run", acks_late=True, ignore_result=True)
def analysis_run_task(self, run_id: int) -> None:
    """Compute one run. Late acknowledgement: a run whose worker dies is redelivered
    and computed again (at most ``services.MAX_ATTEMPTS`` times in all); the soft and
    hard time limits are the CELERY_TASK_* settings. The message's id tells a run sent
    again after a loss from the message it replaced."""
    from .services import analysis_run_execute

    analysis_run_execute(run_id=run_id, task_id=self.request.id)


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


@shared_task(name="analysis.compute_scores", acks_late=True, ignore_result=True)
def automatic_scores_compute_task(study_id: int, metrics: list[str], replace: bool) -> None:
    """Compute BLEU / ROUGE-L scores of a study (``computed_scores``). Idempotent: a
    redelivered task computes the same scores again and replaces them. A computation
    refused by then (the study gone, or scores imported under a metric's name since it
    was queued) is logged and changes nothing."""
    from django.core.exceptions import ValidationError

    from studies.models import Study

    from .computed_scores import automatic_scores_compute

    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        logger.warning("Study %s no longer exists; no scores computed.", study_id)
        return
    try:
        summary = automatic_scores_compute(study=study, metrics=metrics, replace=replace)
    except ValidationError as exc:
        logger.warning("Scores of %s not computed: %s", study.slug, " ".join(exc.messages))
        return
    logger.info("Scores of %s: %s", study.slug, summary)


@shared_task(name="analysis.select_candidates", acks_late=True, ignore_result=True)
def candidate_selection_task(selection_id: int) -> None:
    """Run a queued candidate selection (``candidates.selection``); a selection already
    started or finished (a redelivered message) is left as it is. Its failure is
    recorded on it, with the reason."""
    from .candidates.selection import CandidateSelectionError, candidate_selection_run

    try:
        candidate_selection_run(selection_id=selection_id)
    except CandidateSelectionError as exc:
        logger.warning("Candidate selection %s failed: %s", selection_id, exc)


@shared_task(name="analysis.embed_candidates", ignore_result=True)
def candidate_embeddings_task(study_id: int, seed: int = 0) -> None:
    """Compute a study's candidate embeddings ahead of its reports (after an import, or
    for a report with ``seed`` that found some missing); a study deleted meanwhile is
    skipped."""
    from studies.models import Study

    from .services import candidate_texts_embed

    if Study.objects.filter(pk=study_id).exists():
        candidate_texts_embed(study_id=study_id, seed=seed)
