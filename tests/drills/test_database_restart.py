"""Drill: PostgreSQL restarts while annotators save answers. While it is down, requests
fail fast with the friendly error page (5xx, no traceback, SQL or settings); once it
is back the same gunicorn serves again (dead persistent connections are dropped by
CONN_HEALTH_CHECKS); nothing acknowledged is lost."""

import time

import httpx
import pytest

from .conftest import Annotator, judgements_by_item, scenario, wait_until
from .load import run_load

pytestmark = pytest.mark.drill

N_ANNOTATORS = 3
N_ITEMS = 4
DOWN_FOR = 4.0  # seconds
FRIENDLY = "Something went wrong on our side"
LEAKS = ("Traceback", "psycopg", "OperationalError", "SELECT", "INSERT", "DATABASES", "settings")


def test_app_survives_a_database_restart(drill_env, drill_db, gunicorn_app):
    study = scenario(drill_env, "setup", "--annotators", str(N_ANNOTATORS))
    app = gunicorn_app(workers=2)
    annotators = [Annotator(app.url, study["slug"], token) for token in study["tokens"]]
    for annotator in annotators:
        annotator.sign_in()
        annotator.start()
    cluster = drill_db.cluster
    pid_before = app.proc.pid
    workers_before = set(app.worker_pids())
    down_pages: list[httpx.Response] = []

    def restart_database():
        time.sleep(1.0)  # persistent connections are open and in use
        cluster.stop("fast")
        try:
            # A page asked for while the database is down: answered, quickly, 5xx.
            probe = Annotator(app.url, study["slug"], study["tokens"][0])
            probe.client.cookies = annotators[0].client.cookies
            started = time.monotonic()
            down_pages.append(probe.client.get(f"/s/{study['slug']}/"))
            assert time.monotonic() - started < 5
            time.sleep(DOWN_FOR)
        finally:
            cluster.start()
        time.sleep(1.5)  # load goes on against the restarted database

    outcomes = run_load(annotators, N_ITEMS, restart_database)

    # While down: the friendly page, never a hang or a leak.
    error_pages = [r.text for r in down_pages] + [p for o in outcomes for p in o.error_pages]
    assert down_pages and down_pages[0].status_code == 500
    assert error_pages, "no request reached the app while the database was down"
    for page in error_pages:
        assert FRIENDLY in page
        assert not any(leak in page for leak in LEAKS), page[:2000]
    assert all(o.slowest < 30 for o in outcomes), [o.slowest for o in outcomes]
    statuses = {s for o in outcomes for s in o.statuses}
    assert statuses <= {200, 204, 500}, statuses

    # Back without restarting the app: same master and workers, requests succeed.
    assert app.proc.pid == pid_before and app.proc.poll() is None
    assert set(app.worker_pids()) == workers_before, "gunicorn workers were replaced"
    assert all(not o.gave_up for o in outcomes), [o.gave_up for o in outcomes]
    wait_until(lambda: annotators[0].resume().status_code == 200, timeout=10, what="recovery")

    # Nothing acknowledged is lost.
    stored = judgements_by_item(drill_db)
    for annotator, outcome in zip(annotators, outcomes, strict=True):
        assert len(outcome.acknowledged) == N_ITEMS
        for number, value in outcome.acknowledged.items():
            assert stored.get((annotator.assignment, number)) == [value]
    for annotator in annotators:
        assert "your batch is submitted" in annotator.submit().text
        annotator.close()
    assert drill_db.query("SELECT count(*) FROM studies_assignment WHERE status = 'submitted'") == [
        (N_ANNOTATORS,)
    ]
