"""Drill: gunicorn workers are killed (``kill -9``) while annotators save answers.
Afterwards every acknowledged answer is in the database exactly once, with the value
acknowledged last, and every annotator resumes their batch and submits it."""

import os
import signal
import time

import pytest

from .conftest import Annotator, judgements_by_item, scenario, wait_until
from .load import run_load

pytestmark = pytest.mark.drill

N_ANNOTATORS = 4
N_ITEMS = 4  # human + 2 synthetic + attention check (tests.conftest.materials_doc)
KILLS = 4


def test_acknowledged_answers_survive_killed_web_workers(drill_env, drill_db, gunicorn_app):
    study = scenario(drill_env, "setup", "--annotators", str(N_ANNOTATORS))
    app = gunicorn_app(workers=2)
    annotators = [Annotator(app.url, study["slug"], token) for token in study["tokens"]]
    for annotator in annotators:
        annotator.sign_in()
        annotator.start()

    killed: list[int] = []

    def kill_workers():
        for _ in range(KILLS):
            time.sleep(0.7)
            workers = wait_until(
                lambda: len(app.worker_pids()) >= 2 and app.worker_pids(),
                timeout=30,
                what="gunicorn to respawn its workers",
            )
            victim = workers[len(killed) % len(workers)]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
        time.sleep(0.7)

    outcomes = run_load(annotators, N_ITEMS, kill_workers)

    assert len(set(killed)) == KILLS
    assert app.proc.poll() is None, "the gunicorn master died"
    assert all(not o.gave_up for o in outcomes), [o.gave_up for o in outcomes]
    assert sum(len(o.acknowledged) for o in outcomes) == N_ANNOTATORS * N_ITEMS

    # In the database: each acknowledged answer exactly once, with the value the
    # annotator saw acknowledged last (an unacknowledged save that did land was
    # overwritten by the retry that was acknowledged).
    stored = judgements_by_item(drill_db)
    for annotator, outcome in zip(annotators, outcomes, strict=True):
        for number, value in outcome.acknowledged.items():
            assert stored.get((annotator.assignment, number)) == [value], (
                annotator.assignment,
                number,
                [h for h in outcome.history if h[0] == number],
            )
    assert sum(len(rows) for rows in stored.values()) == N_ANNOTATORS * N_ITEMS

    # Every annotator can resume: the batch opens (at its review, all items answered),
    # and the submission goes through.
    for annotator in annotators:
        resumed = annotator.resume()
        assert resumed.status_code == 200 and str(resumed.url).endswith("/review/")
        submitted = annotator.submit()
        assert submitted.status_code == 200
        assert "your batch is submitted" in submitted.text
        annotator.close()
    statuses = drill_db.query("SELECT status FROM studies_assignment")
    assert sorted(s for (s,) in statuses) == ["submitted"] * N_ANNOTATORS
    print(
        f"killed {KILLS} workers; {sum(len(o.statuses) for o in outcomes)} answers, "
        f"{sum(len(o.failures) for o in outcomes)} broken connections"
    )
