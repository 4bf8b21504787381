"""An MTurk ExternalQuestion in a real browser: the study's annotator pages inside a
frame of another site (a tiny parent page served from a second live server), the
cookies working there, the result form posting to MTurk; and a page of a study not
shown in MTurk's frame refused in that frame."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from studies.models import Study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def parent_site():
    """Serves one page framing the URL given in its path's query (another site: the
    live server is http://localhost:…, this one http://127.0.0.1:…)."""

    class Parent(BaseHTTPRequestHandler):
        def do_GET(self):
            from html import escape
            from urllib.parse import parse_qs, urlparse

            target = parse_qs(urlparse(self.path).query).get("frame", [""])[0]
            body = (
                "<!doctype html><title>MTurk</title><h1>Parent site</h1>"
                f'<iframe id="task" src="{escape(target)}" width="1000" height="900"></iframe>'
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Parent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _frame_page(browser, parent_site, url):
    from urllib.parse import quote

    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{parent_site}/?frame={quote(url, safe='')}")
    return context, page


def test_an_mturk_worker_works_inside_the_frame_and_posts_back(
    browser, live_server, open_study, parent_site, settings
):
    settings.CROWD_FRAME_ORIGINS = [parent_site]
    Study.objects.filter(pk=open_study.pk).update(
        mturk_frame=True, batches_per_stage=1, crowd_group=open_study.groups.get(name="Layperson")
    )
    key = open_study.stages.get(position=1).join_key
    join = (
        f"{live_server.url}/s/{open_study.slug}/join/{key}?workerId=W1&assignmentId=A1"
        "&hitId=H1&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com"
    )
    context, page = _frame_page(browser, parent_site, join)
    frame = page.frame_locator("#task")
    # Consent, tutorial and a whole batch inside the frame: the session cookie works.
    frame.locator("#id_agree").check()
    frame.get_by_role("button", name="I agree and want to take part").click()
    frame.get_by_role("button", name="I have read the tutorial").click()
    frame.get_by_role("button", name="Start a batch").click()
    for n in range(1, 5):
        frame.locator("#item-heading").filter(has_text=f"candidate {n} of").wait_for()
        frame.locator('input[name="coherent"][value="no"]').check()
        frame.locator('input[name="categories"][value="off_topic"]').check()
        frame.locator("[data-save]").click()
    frame.get_by_role("button", name="Submit this batch").click()
    form = frame.locator("form[data-crowd-return]")
    form.wait_for()
    assert form.get_attribute("action") == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert form.locator('input[name="assignmentId"]').get_attribute("value") == "A1"
    assert form.locator('input[name="outcome"]').get_attribute("value") == "completed"
    # The frame refused the site's cookies (third-party, and Secure on plain HTTP):
    # every page was reached through the signed token in its URL.
    assert "ct=" in frame.locator("body").evaluate("() => window.location.search")
    context.close()


def test_the_cookies_of_a_frameable_studys_pages_are_cross_site(client, open_study, settings):
    Study.objects.filter(pk=open_study.pk).update(
        mturk_frame=True, crowd_group=open_study.groups.get(name="Layperson")
    )
    key = open_study.stages.get(position=1).join_key
    response = client.get(
        f"/s/{open_study.slug}/join/{key}?workerId=W1&assignmentId=A1&hitId=H1"
        "&turkSubmitTo=https://www.mturk.com"
    )
    for name in ("sessionid", "joined-pilot"):
        assert response.cookies[name]["samesite"] == "None" and response.cookies[name]["secure"]
    assert (
        "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com"
        in (response["Content-Security-Policy"])
    )
    assert "ct=" in response["Location"]
    # Any other page stays unframeable.
    assert "frame-ancestors 'none'" in client.get("/")["Content-Security-Policy"]


def test_a_study_not_shown_in_mturks_frame_cannot_be_framed(
    browser, live_server, open_study, parent_site, settings
):
    settings.CROWD_FRAME_ORIGINS = [parent_site]
    Study.objects.filter(pk=open_study.pk).update(
        crowd_group=open_study.groups.get(name="Layperson")
    )
    key = open_study.stages.get(position=1).join_key
    join = (
        f"{live_server.url}/s/{open_study.slug}/join/{key}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"
    )
    context, page = _frame_page(browser, parent_site, join)
    page.wait_for_timeout(1500)
    frame = page.frame(url=lambda u: u.startswith(live_server.url))
    text = frame.content() if frame is not None else ""
    assert "Accept the task" not in text  # blocked by frame-ancestors 'none'
    # The same page opened directly works.
    direct = context.new_page()
    direct.goto(join)
    assert "Accept the task" in direct.content()
    context.close()
