"""Drill: the Celery worker is killed (``kill -9``) in the middle of an analysis run.
Tasks are acknowledged late and rejected when their worker is lost, and the run's
result write is idempotent, so the run is computed again to ``done``, or ends
``failed`` with a message; it never stays ``running``."""

import os
import signal
import time

import pytest

from .conftest import base_env, database_copy, scenario, wait_until

pytestmark = pytest.mark.drill

# A fully annotated study and the most bootstrap resamples the product allows: the
# run takes a few seconds, long enough to kill its worker while it is running.
STUDY = ("setup", "--contexts", "12", "--annotate", "8", "--annotators", "1")
RESAMPLES = "10000"
FINISHED = ("done", "failed")


@pytest.fixture(scope="module")
def annotated_template(private_postgres, migrated_template) -> str:
    """The annotated study, made once for the drills of this module."""
    db = database_copy(private_postgres, "drill_annotated_template", migrated_template)
    scenario(base_env(DATABASE_URL=db.url, CELERY_BROKER_URL="redis://127.0.0.1:1/0"), *STUDY)
    return db.name


@pytest.fixture
def drill_db(private_postgres, annotated_template, request):
    return database_copy(private_postgres, f"drill_{request.node.name[:40]}", annotated_template)


def _run(db, run_id: int) -> dict:
    status, attempts, error, result = db.query(
        "SELECT status, attempts, error, result IS NOT NULL "
        "FROM analysis_analysisrun WHERE id = %s",
        (run_id,),
    )[0]
    return {"status": status, "attempts": attempts, "error": error, "has_result": result}


def _wait_running(db, run_id: int) -> None:
    wait_until(lambda: _run(db, run_id)["status"] == "running", timeout=60, what="the run to start")
    time.sleep(0.5)  # well inside the computation


def test_killed_pool_process_is_retried_to_done(drill_env, drill_db, celery_worker):
    """The pool child computing the run dies; the worker rejects the message
    (reject_on_worker_lost), the broker hands it out again and a new child computes
    the run from scratch."""
    t0 = time.monotonic()
    worker = celery_worker()
    print(f"study and worker ready in {time.monotonic() - t0:.1f}s")
    run_id = scenario(drill_env, "enqueue", "--resamples", RESAMPLES)["run"]
    _wait_running(drill_db, run_id)
    started = time.monotonic()
    (child,) = worker.pool_pids()
    assert _run(drill_db, run_id)["status"] == "running", "the run ended before the kill"
    os.kill(child, signal.SIGKILL)
    run = wait_until(
        lambda: (r := _run(drill_db, run_id))["status"] in FINISHED and r,
        timeout=90,
        what="the run to finish after its worker died",
    )
    assert run["status"] == "done", run
    assert run["attempts"] == 2 and run["has_result"] and run["error"] == ""
    assert "WorkerLostError" in worker.log()
    print(f"run {run_id} done {time.monotonic() - started:.1f}s after the kill")
    print(drill_db.query("SELECT finished_at - started_at FROM analysis_analysisrun"))


def test_killed_worker_is_redelivered_to_a_new_worker(drill_env, drill_db, celery_worker):
    """The whole worker (main process and pool) dies at once, as with a lost machine:
    the message was never acknowledged, so after the broker's visibility timeout
    (short here, CELERY_VISIBILITY_TIMEOUT) a new worker gets it again and computes
    the run; killed on its last allowed attempt too, the run ends failed, with a
    message."""
    short = {"CELERY_VISIBILITY_TIMEOUT": "3"}
    run_id = scenario({**drill_env, **short}, "enqueue", "--resamples", RESAMPLES)["run"]

    first = celery_worker(**short)
    _wait_running(drill_db, run_id)
    first.kill_all()
    assert _run(drill_db, run_id)["status"] == "running"

    second = celery_worker(**short)
    wait_until(lambda: _run(drill_db, run_id)["attempts"] == 2, timeout=60, what="the redelivery")
    _wait_running(drill_db, run_id)
    second.kill_all()

    third = celery_worker(**short)
    run = wait_until(
        lambda: (r := _run(drill_db, run_id))["status"] in FINISHED and r,
        timeout=60,
        what="the run to end",
    )
    assert run["status"] == "failed", run
    assert "worker stopped 2 times" in run["error"] and "Not retried again" in run["error"]
    assert "analysis.run" in third.log()
