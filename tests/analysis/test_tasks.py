"""The task wiring against a real Celery worker process and a real Redis broker."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from analysis.computed_scores import automatic_scores_compute_enqueue
from analysis.metrics.overlap import bleu4
from analysis.models import AnalysisRun, AutomaticScore
from analysis.services import (
    analysis_parameters_clean,
    analysis_run_dispatch,
    analysis_run_enqueue,
)
from annotation_site.celery import app as celery_app
from bench.common import database_url_of
from studies.models import Annotator, Assignment, Batch, Reflection, Study
from studies.services import Answer, annotators_create, assignment_create, judgement_record

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def celery_worker_process(tmp_path):
    env = {
        **os.environ,
        # The worker must read the test database this process writes to.
        "DATABASE_URL": database_url_of(connection.settings_dict),
        "DJANGO_CONN_MAX_AGE": "0",
        # The beat job's automatic runs, asked for as soon as a submission is seen.
        "ANALYSIS_AUTO_RUN": "true",
        "ANALYSIS_AUTO_DELAY": "0",
    }
    celery_app.control.purge()  # messages left by earlier runs on this broker
    log_path = tmp_path / "worker.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "annotation_site",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=info",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log_path.read_text():
            assert proc.poll() is None, f"worker exited:\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"worker not ready:\n{log_path.read_text()}"
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        print(log_path.read_text()[-3000:])  # shown by pytest when the test fails


def _wait_for(run: AnalysisRun, statuses: set[str], timeout: float = 60) -> AnalysisRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        time.sleep(0.25)
    raise AssertionError(f"run {run.pk} still {run.status!r} after {timeout}s")


def _one_submitted_batch(study) -> Assignment:
    group = study.groups.get(name="Layperson")
    annotator: Annotator = annotators_create(group=group, count=1)[0]
    batch = Batch.objects.filter(stage__study=study, stage__position=1).first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    for reflection_id in assignment.order:
        judgement_record(
            assignment=assignment,
            reflection=batch.reflections.get(pk=reflection_id),
            answer=Answer(coherent=True, empathy=4),
        )
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.SUBMITTED, submitted_at=assignment.assigned_at
    )
    assignment.refresh_from_db()
    return assignment


def test_worker_runs_an_enqueued_analysis_and_stores_its_report(
    loaded_study, celery_worker_process
):
    _one_submitted_batch(loaded_study)

    run = analysis_run_enqueue(study=loaded_study)
    run = _wait_for(run, {AnalysisRun.Status.DONE, AnalysisRun.Status.FAILED})

    assert run.status == AnalysisRun.Status.DONE, run.error
    # Three non-attention items (human + 2 synthetic), one annotator, all coherent.
    assert run.result["n_judgements"] == 3
    stage = run.result["groups"]["Layperson"]["stages"]["GPT-2 stage"]
    assert (stage["n_judgements"], stage["n_items_total"], stage["n_annotators"]) == (3, 3, 1)
    assert stage["coherent_rate"] == 1.0
    # One rater per item: agreement is undefined, reported as null.
    assert stage["coherence"]["fleiss_kappa"] is None
    assert run.started_at is not None and run.finished_at >= run.started_at
    assert (run.progress, run.attempts, run.error) == (100, 1, "")
    assert run.dispatched_at is not None


def test_worker_stores_the_error_of_a_failing_analysis(loaded_study, celery_worker_process):
    # Parameters damaged after validation (e.g. edited in the database): the run fails,
    # with its error stored, instead of staying queued or running.
    run = AnalysisRun.objects.create(
        study=loaded_study,
        parameters={**analysis_parameters_clean(None), "bootstrap_resamples": "many"},
    )
    assert analysis_run_dispatch(run_id=run.pk)
    run = _wait_for(run, {AnalysisRun.Status.DONE, AnalysisRun.Status.FAILED})
    assert run.status == AnalysisRun.Status.FAILED
    assert "ValueError" in run.error and "many" in run.error
    assert run.finished_at is not None


def test_the_beat_job_asks_the_worker_for_an_automatic_run_after_a_submission(
    loaded_study, celery_worker_process
):
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    assignment = _one_submitted_batch(loaded_study)

    # As celery beat sends it: by name (CELERY_BEAT_SCHEDULE).
    celery_app.send_task("analysis.request_auto_runs")
    deadline = time.monotonic() + 60
    while not AnalysisRun.objects.filter(study=loaded_study).exists():
        assert time.monotonic() < deadline, "the beat job asked for no run"
        time.sleep(0.25)
    (run,) = AnalysisRun.objects.filter(study=loaded_study)
    run = _wait_for(run, {AnalysisRun.Status.DONE, AnalysisRun.Status.FAILED})
    assert run.status == AnalysisRun.Status.DONE, run.error
    assert run.trigger == AnalysisRun.Trigger.AUTO
    assert run.data_through == assignment.submitted_at
    assert run.result["n_judgements"] == 3

    # The same tick again (a second beat, a redelivery): nothing new, no second run.
    # One solo worker takes tasks in order: once a run queued after the tick is done,
    # the tick has been handled.
    celery_app.send_task("analysis.request_auto_runs")
    after = analysis_run_enqueue(study=loaded_study, parameters={"bootstrap_resamples": 0})
    assert _wait_for(after, {AnalysisRun.Status.DONE}).status == AnalysisRun.Status.DONE
    assert list(AnalysisRun.objects.filter(trigger=AnalysisRun.Trigger.AUTO)) == [run]


def test_worker_computes_the_scores_a_researcher_asked_for(loaded_study, celery_worker_process):
    assert automatic_scores_compute_enqueue(study=loaded_study, metrics=["rouge_l", "bleu"]) == (
        "bleu",
        "rouge_l",
    )
    # 3 dialogues × 2 stages × 2 synthetic reflections, two metrics.
    deadline = time.monotonic() + 60
    while AutomaticScore.objects.filter(study=loaded_study).count() < 24:
        assert time.monotonic() < deadline, "the worker stored no scores"
        time.sleep(0.25)
    scores = AutomaticScore.objects.filter(study=loaded_study).select_related("reflection")
    assert {s.origin for s in scores} == {AutomaticScore.Origin.COMPUTED}
    assert {s.reflection.kind for s in scores} == {Reflection.Kind.SYNTHETIC}
    score = scores.filter(evaluator="bleu").first()
    reference = Reflection.objects.get(
        context_id=score.reflection.context_id, kind=Reflection.Kind.HUMAN
    ).text
    assert score.score == bleu4([reference], [score.reflection.text])[0]

    # Redelivered or asked for again: the same scores replace the first ones.
    first = set(scores.values_list("pk", flat=True))
    automatic_scores_compute_enqueue(study=loaded_study, metrics=["bleu"])
    deadline = time.monotonic() + 60
    while set(scores.filter(evaluator="bleu").values_list("pk", flat=True)) & first:
        assert time.monotonic() < deadline, "the second computation replaced nothing"
        time.sleep(0.25)
    assert AutomaticScore.objects.filter(study=loaded_study).count() == 24


def test_worker_runs_a_candidate_selection(loaded_study, celery_worker_process):
    from analysis.candidates.parameters import SelectionParameters
    from analysis.candidates.selection import candidate_selection_create
    from analysis.models import CandidateSelection
    from analysis.services import candidate_selection_enqueue
    from tests.analysis.candidates.test_selection import import_pool, pool_doc
    from tests.factories import StageFactory

    stage = StageFactory(study=loaded_study, name="Selected", position=99)
    import_pool(loaded_study, pool_doc(ids=("p1", "p2")))
    selection = candidate_selection_create(
        study=loaded_study, stage=stage, parameters=SelectionParameters(per_context=2)
    )
    candidate_selection_enqueue(selection)  # no transaction here: sent at once
    deadline = time.monotonic() + 120
    while selection.status in (CandidateSelection.Status.QUEUED, CandidateSelection.Status.RUNNING):
        assert time.monotonic() < deadline, f"selection still {selection.status}"
        time.sleep(0.5)
        selection.refresh_from_db()
    assert selection.status == CandidateSelection.Status.DONE, selection.error
    assert selection.counts["selected"] == 4
    assert Batch.objects.filter(stage=stage).count() == 2
