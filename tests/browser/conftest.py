"""Real-browser fixtures: Debian's Chromium driven by Playwright against pytest-django's
``live_server`` (which makes these tests use the transactional database).

Browsers are never downloaded. Without /usr/bin/chromium (or ``CHROMIUM_PATH``) the
tests are skipped with a reason, except in CI, where that is a failure.
"""

import os
import time
from pathlib import Path

import pytest
from django.db import connection

from studies.models import Study
from studies.services import annotators_create
from tests.conftest import _missing

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# Without these flags Chromium tries to reach Google services, which the test network
# refuses (same list as docs/screenshots/capture.py).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module; each test opens its own context (cookies, viewport).

    While Playwright's sync API is alive, its asyncio loop counts as running in this
    thread, so Django would refuse the ORM calls the tests (and the database flush
    after each test) make. DJANGO_ALLOW_ASYNC_UNSAFE lifts that check for exactly that
    lifetime; the live server answers from its own thread either way.
    https://docs.djangoproject.com/en/5.2/topics/async/#async-safety
    """
    if not Path(CHROMIUM).is_file():
        _missing(f"needs Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()


#: Other sessions of this test database still at work (the live server answering).
BUSY_SESSIONS = """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND state IN ('active', 'idle in transaction')
"""


@pytest.fixture(autouse=True)
def _requests_done_before_the_flush(browser, live_server):
    """After each test, close the pages it left open and wait until the live server
    has answered what they sent last (an item page posts its draft a moment after a
    change, and at once as it closes) before the database is emptied: emptying it
    (TRUNCATE) while a request holds a row lock deadlocks, and would leave the rows
    for the next test."""
    yield
    for context in list(browser.contexts):
        context.close()
    time.sleep(0.2)  # a request sent as a page closed reaches the server
    deadline, quiet_since = time.monotonic() + 10, None
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(BUSY_SESSIONS)
            busy = cursor.fetchone()[0]
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 0.3:
            return
        time.sleep(0.05)


@pytest.fixture
def open_study(loaded_study):
    """``loaded_study`` opened to annotators, with its tutorial filled in."""
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN,
        tutorial_intro="You will judge response candidates to a counselling dialogue.",
        tutorial_example_turns=[
            {"role": "therapist", "text": "How has your week been?"},
            {"role": "client", "text": "Exhausting. I barely slept before the exam."},
        ],
        tutorial_example_notes="A coherent reflection: the exam kept you awake.",
        tutorial_empathy_explanation="Then say how much you agree with the statement.",
    )
    loaded_study.refresh_from_db()
    return loaded_study


@pytest.fixture
def annotator(open_study):
    return annotators_create(group=open_study.groups.get(name="Layperson"), count=1)[0]


@pytest.fixture
def invitation_url(live_server, annotator) -> str:
    return f"{live_server.url}/i/{annotator.access_token}/"
