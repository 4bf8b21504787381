"""A screening questionnaire in a real browser: the invitation link leads to the
questions first; the browser's own check stops a required question left out; the
answers are sent with the keyboard and mouse, then the information sheet follows. A
second person screened out sees the polite end page, and only counts are kept."""

import pytest
from playwright.sync_api import expect

from studies.models import QuestionAnswer, QuestionnaireResponse, ScreeningTally
from studies.services import annotators_create
from tests.browser.test_annotation_flow import DESKTOP
from tests.studies.questionnaire_helpers import screening


@pytest.fixture
def screening_questionnaire(open_study):
    """Four questions, one of each kind; "No" to the first ends participation."""
    return screening(open_study)


def test_answering_the_screening_questionnaire_then_consent(
    browser, open_study, screening_questionnaire, annotator, invitation_url, live_server, tmp_path
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(invitation_url)
    expect(page.get_by_role("heading", name="A few questions before you start")).to_be_visible()
    send = page.get_by_role("button", name="Send my answers")
    send.click()  # nothing chosen: the browser's own check keeps the page
    expect(page.get_by_role("heading", name="A few questions before you start")).to_be_visible()
    assert not QuestionnaireResponse.objects.exists()
    first = page.get_by_role("group", name="1. Is English your first language?")
    first.get_by_label("Yes").check()
    page.get_by_role("group", name="2. Which have you studied? (optional)").get_by_label(
        "Linguistics"
    ).check()
    page.get_by_role("group", name="3. How often do you read online forums?").get_by_label(
        "4", exact=True
    ).check()
    page.get_by_label("Your answer").fill("I read slowly.")
    page.screenshot(path=tmp_path / "screening.png", full_page=True)
    send.click()
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    response = QuestionnaireResponse.objects.get(annotator=annotator)
    assert not response.screened_out
    assert sorted(
        (a.question.position, a.choice.text if a.choice else a.scale or a.text)
        for a in QuestionAnswer.objects.filter(response=response)
    ) == [(1, "Yes"), (2, "Linguistics"), (3, 4), (4, "I read slowly.")]

    other = annotators_create(group=open_study.groups.get(name="Expert"), count=1)[0]
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/i/{other.access_token}/")
    page.get_by_role("group", name="1. Is English your first language?").get_by_label("No").check()
    page.get_by_role("group", name="3. How often do you read online forums?").get_by_label(
        "1", exact=True
    ).check()
    page.get_by_role("button", name="Send my answers").click()
    expect(page.get_by_role("heading", name="Thank you for your interest")).to_be_visible()
    expect(page.get_by_text("We have not kept your answers.")).to_be_visible()
    assert QuestionnaireResponse.objects.get(annotator=other).screened_out
    assert QuestionAnswer.objects.filter(response__annotator=other).count() == 0
    assert ScreeningTally.objects.get(question=None).count == 1
