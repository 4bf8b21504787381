"""Drill: Redis (the task queue) restarts, losing what it held, while a study's
automatic analysis run is pending. The worker keeps consuming; the pending run is
sent when it is due and computed exactly once; a run whose message Redis lost is
sent again by the recovery job and computed exactly once."""

import time

import pytest

from .conftest import scenario, wait_until

pytestmark = pytest.mark.drill

# Submitted batches (k = 3 per group), so the study has data for an automatic run.
STUDY = ("setup", "--contexts", "4", "--annotate", "3", "--annotators", "1")
DELAY = 300  # the debounce (ANALYSIS_AUTO_DELAY)
DISPATCH_TIMEOUT = 60  # ANALYSIS_DISPATCH_TIMEOUT


def _runs(db) -> list[tuple]:
    return db.query(
        "SELECT trigger, status, attempts, dispatches, error FROM analysis_analysisrun ORDER BY id"
    )


def _done(db, trigger: str) -> bool:
    return [r[1] for r in _runs(db) if r[0] == trigger] == ["done"]


def _restart(redis) -> None:
    redis.kill()
    assert not redis.ping()
    time.sleep(2)
    redis.start()


def test_worker_keeps_consuming_and_the_pending_run_completes_once(
    drill_env, drill_db, private_redis, celery_worker
):
    scenario(drill_env, *STUDY)
    auto_env = {**drill_env, "ANALYSIS_AUTO_RUN": "true", "ANALYSIS_AUTO_DELAY": str(DELAY)}
    worker = celery_worker(**auto_env)

    # New submissions: their automatic run is due in DELAY seconds. It waits in the
    # database (the beat job asks for it when due), not as a scheduled message.
    assert scenario(auto_env, "request-auto")["runs"] == []
    assert _runs(drill_db) == []

    _restart(private_redis)
    wait_until(
        lambda: worker.log().count("Connected to redis://") >= 2,
        timeout=60,
        what="the worker to reconnect",
    )
    time.sleep(1)
    assert worker.proc.poll() is None, worker.log()[-3000:]
    # It consumes: a researcher's run is computed.
    scenario(drill_env, "enqueue", "--resamples", "100")
    wait_until(lambda: _done(drill_db, "manual"), timeout=90, what=f"the run: {_runs(drill_db)}")

    # The debounce has passed: the beat job asks for the run, the worker computes it.
    assert len(scenario(auto_env, "request-auto", "--later", str(DELAY + 1))["runs"]) == 1
    wait_until(lambda: _done(drill_db, "auto"), timeout=90, what=f"the run: {_runs(drill_db)}")
    # Once: later ticks of both beat jobs ask for nothing and send nothing again.
    assert scenario(auto_env, "request-auto", "--later", str(DELAY + 120))["runs"] == []
    assert scenario(auto_env, "recover", "--later", "7200") == {"dispatched": 0, "failed": 0}
    time.sleep(2)
    assert _runs(drill_db) == [("manual", "done", 1, 1, ""), ("auto", "done", 1, 1, "")]
    assert worker.proc.poll() is None
    assert "Unrecoverable error" not in worker.log()


def test_a_run_lost_with_the_broker_is_sent_again_and_computed_once(
    drill_env, drill_db, private_redis, celery_worker
):
    scenario(drill_env, *STUDY)
    env = {
        **drill_env,
        "ANALYSIS_AUTO_RUN": "true",
        "ANALYSIS_AUTO_DELAY": str(DELAY),
        "ANALYSIS_DISPATCH_TIMEOUT": str(DISPATCH_TIMEOUT),
    }
    # No worker yet: the automatic run's message waits in Redis, which then restarts
    # without it.
    assert len(scenario(env, "request-auto", "--later", str(DELAY + 1))["runs"]) == 1
    assert _runs(drill_db) == [("auto", "queued", 0, 1, "")]
    _restart(private_redis)
    worker = celery_worker(**env)
    time.sleep(3)
    assert _runs(drill_db) == [("auto", "queued", 0, 1, "")], "the message was not lost"

    # Within the timeout the run may just be waiting: left alone. Past it: sent again.
    assert scenario(env, "recover") == {"dispatched": 0, "failed": 0}
    later = str(DISPATCH_TIMEOUT + 5)
    assert scenario(env, "recover", "--later", later) == {"dispatched": 1, "failed": 0}
    wait_until(lambda: _done(drill_db, "auto"), timeout=90, what=f"the run: {_runs(drill_db)}")
    assert scenario(env, "recover", "--later", "7200") == {"dispatched": 0, "failed": 0}
    # The debounce is free again: nothing new, nothing asked for.
    assert scenario(env, "request-auto", "--later", str(DELAY + 120))["runs"] == []
    time.sleep(2)
    assert _runs(drill_db) == [("auto", "done", 1, 2, "")]
    assert worker.proc.poll() is None
