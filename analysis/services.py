"""Analysis runs: queue them, execute them, record the outcome."""

import contextlib
import logging
from datetime import datetime, timedelta
from uuid import uuid4

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Max, Min, Q, When
from django.utils import timezone
from kombu.exceptions import OperationalError

from studies.locks import Aggregate, rows_locked, studies_locked
from studies.models import Assignment, Study

from .candidates.embeddings import embeddings_ready, texts_embedded
from .candidates.selection import CandidateSelectionError, candidate_selection_run
from .models import AnalysisRun, CandidateSelection
from .parameters import DEFAULT_PARAMETERS, analysis_parameters_clean
from .report.build import report_build
from .report.diversity import diversity_sample
from .selectors.candidates import spread_members, stage_selections
from .selectors.comparisons import comparison_data
from .selectors.gates import gate_data
from .selectors.judgements import (
    assignments_frame,
    automatic_scores_frame,
    description_codings,
    generation_metadata,
    item_positions,
    judgements_frame,
    report_categories,
    stage_candidate_texts,
    stage_names,
    stage_offered_slugs,
)
from .selectors.likert import likert_data
from .selectors.pay import pay_rates
from .selectors.questionnaires import questionnaire_data

logger = logging.getLogger(__name__)

#: A run whose worker died is computed again when redelivered, this many times in all.
MAX_ATTEMPTS = 2

#: A run sent to the queue and lost is sent again, up to this many sends in all.
MAX_DISPATCHES = 3

#: The Celery task that computes one run (``analysis.tasks``). Services call tasks by
#: their stable name: the tasks import the services, never the other way round.
RUN_TASK = "analysis.run"


def analysis_run_create(
    *,
    study: Study,
    parameters: dict | None = None,
    user=None,
    trigger: str = AnalysisRun.Trigger.MANUAL,
) -> AnalysisRun:
    """Record a queued run with cleaned parameters (``ValidationError`` on bad ones)."""
    return AnalysisRun.objects.create(
        study=study,
        parameters=analysis_parameters_clean(parameters, study=study),
        requested_by=user,
        trigger=trigger,
    )


def _task(name: str):
    """The registered Celery task ``name``. A worker imports every app's task module
    when it starts; a web process or command does it here on first use, so that the
    name resolves there too (and eager mode runs the task in-process)."""
    if name not in current_app.tasks:
        current_app.autodiscover_tasks(force=True)
    return current_app.tasks[name]


def tasks_run_in_process() -> bool:
    """Whether tasks run at once, inside the request or command that sends them
    (Celery's eager mode, which only tests turn on), rather than on a Celery worker."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER)


def analysis_run_dispatch(*, run_id: int) -> bool:
    """Send a queued run to the task queue now (never with a countdown: see
    ``annotation_site.celery``) and note when. With the queue down the run stays
    queued, undispatched: ``analysis_runs_recover`` (a beat job) sends it once the
    queue is back, and sends it again if it was lost. Returns whether the queue took it.

    Each message carries a fresh task id, recorded on the run *before* it is sent (a
    worker may start it at once). Whichever message reaches a worker first while the
    run is still queued claims it (``analysis_run_execute``): a message sent earlier
    that was only waiting behind other work is as good as the latest; the others then
    do nothing."""
    task_id = str(uuid4())
    queued = AnalysisRun.objects.filter(pk=run_id, status=AnalysisRun.Status.QUEUED)
    if not queued.update(task_id=task_id):
        return False  # started (or gone) meanwhile: nothing to send
    try:
        _task(RUN_TASK).apply_async((run_id,), task_id=task_id)
    except OperationalError as exc:
        logger.warning("Task queue unreachable; analysis run %s waits for it (%s).", run_id, exc)
        return False
    AnalysisRun.objects.filter(pk=run_id, task_id=task_id).update(
        dispatched_at=timezone.now(), dispatches=F("dispatches") + 1
    )
    return True


def analysis_run_enqueue(*, study: Study, parameters: dict | None = None, user=None) -> AnalysisRun:
    """A researcher's run: record it queued and send it to the worker once the
    transaction commits."""
    run = analysis_run_create(study=study, parameters=parameters, user=user)
    transaction.on_commit(lambda: analysis_run_dispatch(run_id=run.pk))
    return run


def analysis_run_compute(*, study: Study, parameters: dict | None = None) -> AnalysisRun:
    """Compute a run now, in this process (``manage.py analyze``)."""
    run = analysis_run_create(
        study=study, parameters=parameters, trigger=AnalysisRun.Trigger.COMMAND
    )
    return analysis_run_execute(run_id=run.pk)


# --- automatic runs --------------------------------------------------------------------------


def analysis_runs_request_auto(*, now: datetime | None = None) -> list[int]:
    """Beat job: ask for a fresh report of every study whose analysed data changed
    since what its automatic runs cover, debounced. Returns the ids of the runs asked
    for. Off when ``ANALYSIS_AUTO_RUN`` is false.

    Idempotent and safe to run concurrently (two beats, a redelivered job): the
    database keeps one waiting automatic run per study and never two automatic runs
    for the same data (``AnalysisRun`` constraints). Draft studies have no
    submissions; a closed study is still looked at, so that the submissions made just
    before it closed get their run.
    """
    if not settings.ANALYSIS_AUTO_RUN:
        return []
    now = now or timezone.now()
    study_ids = Study.objects.exclude(status=Study.Status.DRAFT).values_list("pk", flat=True)
    runs = (_run_request_auto(study_id=study_id, now=now) for study_id in list(study_ids))
    return [run.pk for run in runs if run is not None]


def _run_request_auto(*, study_id: int, now: datetime) -> AnalysisRun | None:
    """The debounce, as close to "a run starts ``ANALYSIS_AUTO_DELAY`` seconds after the
    first submission it is for" as a periodic job gets: changes newer than what the
    automatic runs cover ask for a run once the oldest of them is that old (so up to one
    job period later), and it covers every change up to then. While an automatic run
    waits in the queue, newer changes are added to it: it reads the data when it
    starts. Runs outside a transaction, or inside one that commits at once."""
    covered = AnalysisRun.objects.filter(
        study_id=study_id, trigger=AnalysisRun.Trigger.AUTO
    ).aggregate(through=Max("data_through"))["through"]
    changes = _analysed_data_changes(study_id=study_id, after=covered)
    if changes["last"] is None or _auto_run_absorb(study_id=study_id, through=changes["last"]):
        return None
    if changes["first"] > now - timedelta(seconds=settings.ANALYSIS_AUTO_DELAY):
        return None  # debounce: later changes join this run
    try:
        with transaction.atomic():
            run = AnalysisRun.objects.create(
                study_id=study_id,
                parameters=analysis_parameters_clean(None),
                trigger=AnalysisRun.Trigger.AUTO,
                data_through=changes["last"],
            )
    except IntegrityError:
        # A concurrent job asked for it a moment ago (the same data), or for data a
        # moment older: that run still waits, so it takes these changes too.
        _auto_run_absorb(study_id=study_id, through=changes["last"])
        return None
    transaction.on_commit(lambda: analysis_run_dispatch(run_id=run.pk))
    return run


def _auto_run_absorb(*, study_id: int, through: datetime) -> bool:
    """Let the study's automatic run still waiting in the queue cover the changes up to
    ``through``. False when none waits (the row lock a starting worker holds makes this
    wait, and then find the run started)."""
    waiting = AnalysisRun.objects.filter(
        study_id=study_id, trigger=AnalysisRun.Trigger.AUTO, status=AnalysisRun.Status.QUEUED
    )
    if waiting.filter(data_through__gte=through).exists():
        return True
    return bool(waiting.update(data_through=through))


def _analysed_data_changes(*, study_id: int, after: datetime | None) -> dict:
    """The first and last time after ``after`` (None: ever) that the study's analysed
    judgements changed (``Judgement.analysed_q`` with the default parameters, which
    automatic runs use): a batch was submitted and counts, or a counted batch was
    rejected later. A batch rejected on submission for its attention check never
    counted, so changes nothing."""
    rejected_later = Q(status=Assignment.Status.REJECTED, rejected_at__gt=F("submitted_at"))
    changes = (
        Assignment.objects.filter(stage__study_id=study_id)
        .filter(Q(status__in=Assignment.counted_statuses()) | rejected_later)
        .annotate(
            changed_at=Case(When(rejected_later, then=F("rejected_at")), default=F("submitted_at"))
        )
    )
    if after is not None:
        changes = changes.filter(changed_at__gt=after)
    return changes.aggregate(first=Min("changed_at"), last=Max("changed_at"))


def analysis_runs_recover(*, now: datetime | None = None) -> dict[str, int]:
    """Beat job: no run waits forever, so neither does the debounce of automatic runs.

    * A queued run the task queue never took (it was down) is sent.
    * A queued run sent ``ANALYSIS_DISPATCH_TIMEOUT`` seconds ago that no worker
      started was lost (a broker restarted without its data, a queue purged): it is
      sent again, up to ``MAX_DISPATCHES`` times in all, then failed with a message.
    * A run left ``running`` beyond the hard time limit by a worker that died is failed.
    """
    now = now or timezone.now()
    queued = AnalysisRun.objects.filter(status=AnalysisRun.Status.QUEUED)
    # Younger runs are left to the dispatch their own request scheduled on commit.
    never_sent = Q(dispatched_at__isnull=True, created_at__lte=now - timedelta(seconds=30))
    lost = Q(dispatched_at__lt=now - timedelta(seconds=settings.ANALYSIS_DISPATCH_TIMEOUT))
    failed = queued.filter(lost, dispatches__gte=MAX_DISPATCHES).update(
        status=AnalysisRun.Status.FAILED,
        error=f"Sent to the task queue {MAX_DISPATCHES} times, and no worker started it "
        "(are the Celery workers running?). Start the analysis again.",
        finished_at=now,
    )
    resend = queued.filter(never_sent | lost).order_by("pk").values_list("pk", flat=True)
    sent = sum(analysis_run_dispatch(run_id=pk) for pk in list(resend))
    stale_after = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    failed += AnalysisRun.objects.filter(
        status=AnalysisRun.Status.RUNNING, started_at__lt=now - stale_after
    ).update(
        status=AnalysisRun.Status.FAILED,
        error="The worker stopped without finishing this run (it was killed or ran out of "
        "time or memory). Start the analysis again.",
        finished_at=now,
    )
    return {"dispatched": sent, "failed": failed}


def analysis_run_progress(*, run_id: int, fraction: float) -> None:
    """Record how far a running analysis is (percent), committed at once so a
    dashboard polling the run sees it while the computation goes on."""
    percent = max(0, min(99, int(fraction * 100)))
    AnalysisRun.objects.filter(pk=run_id, status=AnalysisRun.Status.RUNNING).update(
        progress=percent
    )


def analysis_run_fail(*, run_id: int, error: str) -> None:
    now = timezone.now()
    AnalysisRun.objects.filter(pk=run_id).exclude(status=AnalysisRun.Status.DONE).update(
        status=AnalysisRun.Status.FAILED,
        error=error,
        finished_at=now,
    )


def analysis_run_execute(*, run_id: int, task_id: str | None = None) -> AnalysisRun | None:
    """Compute the report of run ``run_id`` and store it. Idempotent: a redelivered
    task overwrites the same row; a run already done is left alone. ``task_id``: the
    id of the message being handled. While the run is queued, any of its messages
    claims it, writing its id under the row lock; once it is running (or failed), a
    message with another id is a duplicate and does nothing, so a run sent more than
    once (``analysis_run_dispatch``) is computed once."""
    with transaction.atomic():
        # The study's row, then the run's (``studies.locks``'s order).
        study_id = AnalysisRun.objects.filter(pk=run_id).values_list("study_id", flat=True)
        studies_locked().filter(pk__in=study_id).first()
        run = (
            rows_locked(AnalysisRun.objects.all(), aggregate=Aggregate.ANALYSIS_RUN)
            .select_related("study")
            .filter(pk=run_id)
            .first()
        )
        if run is None:
            logger.warning("Analysis run %s no longer exists; nothing to do.", run_id)
            return None
        if run.status == AnalysisRun.Status.DONE:
            return run
        claimed = run.status != AnalysisRun.Status.QUEUED
        if task_id is not None and claimed and run.task_id and task_id != run.task_id:
            logger.info("Analysis run %s was sent again; message %s ignored.", run_id, task_id)
            return run
        if run.attempts >= MAX_ATTEMPTS:
            # Redelivered after its worker died mid-run (late acknowledgement) more
            # than once: computing it again would likely kill the next worker too.
            run.status = AnalysisRun.Status.FAILED
            run.error = (
                f"The worker stopped {run.attempts} times while computing this run "
                "(killed, or out of memory). Not retried again."
            )
            run.finished_at = timezone.now()
            run.save(update_fields=["status", "error", "finished_at"])
            return run
        run.attempts += 1
        run.task_id = task_id or run.task_id
        run.status = AnalysisRun.Status.RUNNING
        run.started_at = timezone.now()
        run.finished_at = None
        run.error = ""
        run.progress = 0
        run.save(
            update_fields=[
                "status",
                "started_at",
                "finished_at",
                "error",
                "progress",
                "attempts",
                "task_id",
            ]
        )
    try:
        params = run.parameters
        frame = judgements_frame(
            study_id=run.study_id,
            include_expired=params.get("include_expired", False),
            exclude_sources=tuple(params.get("excluded_sources", ())),
        )
        candidate_texts = stage_candidate_texts(study_id=run.study_id)
        seed = int(params.get("seed", 0))  # as report_build reads it
        sampled = candidate_texts.loc[diversity_sample(candidate_texts, seed=seed)]
        vectors, pending = embeddings_ready(sampled["text"].tolist())
        if pending:  # computed on the worker, for the next run
            transaction.on_commit(
                lambda: candidate_embeddings_request(study_id=run.study_id, seed=seed)
            )
        result = report_build(
            frame=frame,
            study_slug=run.study.slug,
            parameters=params,
            categories=report_categories(study_id=run.study_id),
            mee_merge=run.study.mee_merge,
            scores=automatic_scores_frame(study_id=run.study_id),
            generation=generation_metadata(study_id=run.study_id),
            assignments=assignments_frame(study_id=run.study_id),
            positions=item_positions(study_id=run.study_id),
            pay=pay_rates(study_id=run.study_id),
            candidate_texts=candidate_texts,
            candidate_vectors=vectors,
            embeddings_pending=pending,
            selections=stage_selections(study_id=run.study_id),
            spread_members=spread_members(study_id=run.study_id),
            stages=stage_names(study_id=run.study_id),
            questionnaires=questionnaire_data(study_id=run.study_id),
            codings=description_codings(study_id=run.study_id),
            offered_categories=stage_offered_slugs(study_id=run.study_id),
            likert=likert_data(
                study_id=run.study_id,
                include_expired=params.get("include_expired", False),
                exclude_sources=tuple(params.get("excluded_sources", ())),
            ),
            comparisons=comparison_data(
                study_id=run.study_id,
                include_expired=params.get("include_expired", False),
                exclude_sources=tuple(params.get("excluded_sources", ())),
            ),
            gates=gate_data(
                study_id=run.study_id, include_expired=params.get("include_expired", False)
            ),
            progress=lambda fraction: analysis_run_progress(run_id=run.pk, fraction=fraction),
        )
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
    run.error = ""
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "result", "progress", "error", "finished_at"])
    return run


SELECT_CANDIDATES_TASK = "analysis.select_candidates"


def candidate_selection_enqueue(selection: CandidateSelection) -> None:
    """Hand a queued selection to the worker once the caller's transaction commits
    (in Celery's eager mode, run it here). With the task queue unreachable the
    selection fails at once, saying so."""

    def send() -> None:
        if tasks_run_in_process():
            with contextlib.suppress(CandidateSelectionError):  # recorded on the selection
                candidate_selection_run(selection_id=selection.pk)
            return
        try:
            _task(SELECT_CANDIDATES_TASK).apply_async((selection.pk,))
        except OperationalError:
            CandidateSelection.objects.filter(
                pk=selection.pk, status=CandidateSelection.Status.QUEUED
            ).update(
                status=CandidateSelection.Status.FAILED,
                error="The task queue was unreachable, so the selection did not start: "
                "start it again in a moment, or run manage.py select_candidates.",
                finished_at=timezone.now(),
            )

    transaction.on_commit(send)


EMBED_CANDIDATES_TASK = "analysis.embed_candidates"


def candidate_texts_embed(*, study_id: int, seed: int = DEFAULT_PARAMETERS["seed"]) -> int:
    """Compute and keep the embeddings the report's stage diversity reads (the rows
    :func:`~analysis.report.diversity.diversity_sample` keeps with ``seed``, the runs'
    default unless a run asked for another), so that a report finds them ready: a
    report never loads the model. Returns how many texts it read."""
    texts = stage_candidate_texts(study_id=study_id)
    sampled = texts.loc[diversity_sample(texts, seed=seed)]
    texts_embedded(sampled["text"].tolist())
    return len(sampled)


def candidate_embeddings_request(
    *, study_id: int, seed: int = DEFAULT_PARAMETERS["seed"], **kwargs
) -> None:
    """Ask the worker to compute a study's candidate embeddings ahead of its reports
    (``studies.signals.materials_written`` calls this after an import; a report that
    found some missing, for its seed). Never in Celery's eager mode, and never failing
    the caller: with the queue down, the next import or report asks again."""
    if tasks_run_in_process():
        return
    try:
        _task(EMBED_CANDIDATES_TASK).apply_async((study_id, seed))
    except OperationalError as exc:
        logger.warning("Task queue unreachable; embeddings of study %s left (%s).", study_id, exc)
