"""The training quiz in a real browser: after the tutorial the quiz comes before the
first batch; each practice item is the batches' item panel (the same keys), its answer
swapped for the feedback by htmx; 4 of 5 right passes (80 %) and opens the batches."""

import re

import pytest
from playwright.sync_api import expect

from studies.models import TrainingAnswer, TrainingAttempt
from tests.browser.test_annotation_flow import DESKTOP
from tests.studies.training_fixtures import quiz_add

# The keys pressed for each practice item (categories: 1 malformed … 4 off-topic), and
# whether that answer is the expected one (the last is not).
KEYS = [("y", "4", True), ("n", "4", True), ("y", "5", True), ("n", "3", True), ("n", "1", False)]


@pytest.fixture
def quiz(open_study):
    return quiz_add(open_study)


def test_an_annotator_passes_the_quiz_with_the_keyboard_then_starts_a_batch(
    browser, annotator, invitation_url, quiz, tmp_path
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(invitation_url)
    page.locator("label[for=id_agree]").click()
    page.get_by_role("button", name="I agree and want to take part").click()
    page.get_by_role("button", name="I have read the tutorial — start").click()
    # The quiz comes before the first batch.
    expect(page.get_by_text("You can reopen the tutorial at any time.")).to_be_visible()
    expect(page.get_by_role("heading", name="A short practice quiz")).to_be_visible()
    page.get_by_role("button", name="Start the practice quiz").click()
    for number, (answer, key, right) in enumerate(KEYS, start=1):
        heading = page.locator("#item-heading")
        expect(heading).to_have_text(f"Practice item {number} of 5")
        expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
            "data-opened-at", re.compile(r"^\d+$")
        )
        expect(page.locator("#item-panel .candidate")).to_have_text(quiz[number - 1].text)
        page.keyboard.press(answer)
        page.keyboard.press(key)
        page.keyboard.press("Enter")
        feedback = page.locator("#item-panel .feedback")
        expect(feedback).to_contain_text("Right ✓" if right else "Not quite ✗")
        expect(page.locator("#item-panel")).to_contain_text(quiz[number - 1].explanation)
        if number == 5:
            page.screenshot(path=tmp_path / "training-feedback.png")
        page.locator("#item-panel [data-next]").click()
    expect(page.get_by_role("heading", name="You passed the practice quiz")).to_be_visible()
    expect(page.locator(".training-score")).to_contain_text("4 of 5")
    page.get_by_role("link", name="Go to your first batch").click()
    page.get_by_role("button", name="Start a batch").click()
    expect(page.locator("#item-heading")).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    attempt = TrainingAttempt.objects.get(annotator=annotator)
    assert (attempt.status, attempt.n_right) == ("passed", 4)
    answers = TrainingAnswer.objects.filter(attempt=attempt).order_by("item__position")
    assert [a.is_right for a in answers] == [right for _, _, right in KEYS]
    assert answers[0].empathy == 4 and answers[0].seconds_spent is not None
