"""Coming back through a join link in a real browser: a worker early for stage 2, one
a screening ended and one the practice quiz ended each see a heading that says what
happened, never "This link is not valid"; a link that is wrong itself still does."""

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from studies.models import Study
from tests.browser.test_annotation_flow import DESKTOP
from tests.studies.crowd_situations import early_for_stage_2, failed_quiz, screened_out

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def crowd_study(open_study):
    cache.clear()  # the joins' rate limit counts in the cache
    Study.objects.filter(pk=open_study.pk).update(
        batches_per_stage=1, crowd_group=open_study.groups.get(name="Layperson")
    )
    open_study.refresh_from_db()
    yield open_study
    cache.clear()


@pytest.mark.parametrize(
    ("situation", "heading", "message"),
    [
        (
            early_for_stage_2,
            "Come back later: your place is kept",
            "Stage 2 opens for you at",
        ),
        (
            screened_out,
            "The screening ended your participation",
            "Your answers to this study's screening questions ended your participation",
        ),
        (
            failed_quiz,
            "The practice quiz ended your participation",
            "Your participation in this study ended with its practice quiz",
        ),
    ],
)
def test_a_returning_worker_reads_what_happened(
    browser, live_server, crowd_study, situation, heading, message
):
    link = situation(crowd_study)
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(live_server.url + link)
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    expect(page).to_have_title(heading)
    expect(page.get_by_text(message)).to_be_visible()
    assert "This link is not valid" not in page.content()
    if situation is failed_quiz:
        assert "screening" not in page.locator("main").inner_text()


def test_a_wrong_invitation_link_is_not_valid(browser, live_server, crowd_study):
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/i/not-a-real-token/")
    expect(page.get_by_role("heading", level=1)).to_have_text("This link is not valid")
