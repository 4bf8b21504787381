"""Drill: Redis (the task queue) is down. Annotators still submit batches (their
judgements are in the database); the automatic analysis run the beat job asks for and
a researcher's run are recorded queued, undispatched, and the researcher sees a page,
not an error; once Redis is back the recovery job sends them and a worker computes
them."""

import time

import httpx
import pytest

from .conftest import Annotator, answer_for, scenario, wait_until

pytestmark = pytest.mark.drill

N_ITEMS = 4


def _runs(db) -> list[tuple]:
    return db.query(
        "SELECT trigger, status, dispatched_at IS NOT NULL, error FROM analysis_analysisrun "
        "ORDER BY id"
    )


def test_submissions_and_runs_wait_for_the_broker(
    drill_env, drill_db, private_redis, gunicorn_app, celery_worker
):
    study = scenario(drill_env, "setup", "--annotators", "1")
    app = gunicorn_app(workers=2)
    annotator = Annotator(app.url, study["slug"], study["tokens"][0])
    annotator.sign_in()
    annotator.start()
    for number in range(1, N_ITEMS + 1):
        assert annotator.save(number, answer_for(0, number, 0)[0]).status_code in (200, 204)

    private_redis.stop()
    assert not private_redis.ping()

    # The annotator submits: the batch and its answers are stored, the page says so.
    started = time.monotonic()
    page = annotator.submit()
    assert page.status_code == 200, page.text[:2000]
    assert "your batch is submitted" in page.text
    assert time.monotonic() - started < 10, "submitting waited long for the broker"
    assert drill_db.query("SELECT status FROM studies_assignment") == [("submitted",)]
    assert drill_db.query("SELECT count(*) FROM studies_judgement") == [(N_ITEMS,)]
    # The beat job's automatic analysis is recorded, waiting for the queue.
    auto_env = {**drill_env, "ANALYSIS_AUTO_RUN": "true", "ANALYSIS_AUTO_DELAY": "0"}
    assert len(scenario(auto_env, "request-auto")["runs"]) == 1
    assert _runs(drill_db) == [("auto", "queued", False, "")]

    # A researcher starts a run from the dashboard: queued, not an error page.
    researcher = httpx.Client(base_url=app.url, timeout=15)
    researcher.get("/admin/login/")
    login = researcher.post(
        "/admin/login/?next=/admin/",
        data={**study["staff"], "csrfmiddlewaretoken": researcher.cookies["csrftoken"]},
    )
    assert login.status_code == 302, login.text[:1000]
    dashboard = f"/dashboard/{study['slug']}/"
    researcher.get(dashboard)
    started = time.monotonic()
    response = researcher.post(
        f"{dashboard}runs/",
        data={
            "bootstrap_resamples": "200",
            "seed": "0",
            "csrfmiddlewaretoken": researcher.cookies["csrftoken"],
        },
        follow_redirects=True,
    )
    assert response.status_code == 200, response.text[:2000]
    assert time.monotonic() - started < 10
    assert "queued" in response.text
    assert _runs(drill_db) == [("auto", "queued", False, ""), ("manual", "queued", False, "")]

    # The broker comes back; the beat job's recovery sends both; a worker computes them.
    private_redis.start()
    celery_worker()
    recovered = scenario({**drill_env, "ANALYSIS_AUTO_DELAY": "0"}, "recover", "--later", "31")
    assert recovered == {"dispatched": 2, "failed": 0}
    wait_until(
        lambda: [status for _, status, _, _ in _runs(drill_db)] == ["done", "done"],
        timeout=90,
        what=f"both runs to be computed: {_runs(drill_db)}",
    )
    assert all(dispatched for _, _, dispatched, _ in _runs(drill_db))
    annotator.close()
    researcher.close()
