"""The training quiz in a real browser: after the tutorial the quiz comes before the
first batch; each practice item is the batches' item panel (the same keys), its answer
swapped for the feedback by htmx; 4 of 5 right passes (80 %) and opens the batches.
A retry draws practice items not shown before when the study has enough, so only then
does the feedback show the expected answer and why."""

import re

import pytest
from playwright.sync_api import expect

from studies.models import TrainingAnswer, TrainingAttempt
from studies.services.training import training_attempt_items
from tests.browser.test_annotation_flow import DESKTOP, _save
from tests.studies.training_fixtures import quiz_add

# The keys pressed for each practice item (categories: 1 malformed … 4 off-topic), and
# whether that answer is the expected one (the last is not).
KEYS = [("y", "4", True), ("n", "4", True), ("y", "5", True), ("n", "3", True), ("n", "1", False)]
# A right answer to each of the five kinds of practice item (``quiz_add``), by position.
RIGHT_KEYS = [("y", "4"), ("n", "4"), ("y", "5"), ("n", "3"), ("y", "3")]
WITHHELD = "This practice item may come back in a later attempt"


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
        # Five items for two attempts: they may come back, so the answer is kept back.
        expect(page.locator("#item-panel")).to_contain_text(WITHHELD)
        expect(page.locator("#item-panel")).not_to_contain_text(quiz[number - 1].explanation)
        if number == 5:
            page.screenshot(path=tmp_path / "training-feedback.png")
        page.locator("#item-panel [data-next]").click()
    expect(page.get_by_role("heading", name="You passed the practice quiz")).to_be_visible()
    expect(page.locator(".training-score")).to_contain_text("4 of 5")
    page.get_by_role("button", name="Go to your first batch").click()  # starts it
    expect(page.locator("#item-heading")).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    attempt = TrainingAttempt.objects.get(annotator=annotator)
    assert (attempt.status, attempt.n_right) == ("passed", 4)
    answers = TrainingAnswer.objects.filter(attempt=attempt).order_by("item__position")
    assert [a.is_right for a in answers] == [right for _, _, right in KEYS]
    assert answers[0].empathy == 4 and answers[0].seconds_spent is not None


def _start(page, invitation_url) -> None:
    page.goto(invitation_url)
    page.locator("label[for=id_agree]").click()
    page.get_by_role("button", name="I agree and want to take part").click()
    page.get_by_role("button", name="I have read the tutorial — start").click()
    page.get_by_role("button", name="Start the practice quiz").click()


def _answer(page, number: int, keys: tuple[str, str]) -> None:
    expect(page.locator("#item-heading")).to_have_text(f"Practice item {number} of 5")
    expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
        "data-opened-at", re.compile(r"^\d+$")
    )
    for key in keys:
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(page.locator("#item-panel .feedback")).to_be_visible()


def _tick_required_and_wrong(page, number: int) -> None:
    """No with Parroting (3, required at positions 4 and 9) and Off-topic (4, wrong
    there), Parroting the most evident."""
    expect(page.locator("#item-heading")).to_have_text(f"Practice item {number} of 5")
    for key in ("n", "3", "4"):
        page.keyboard.press(key)
    page.locator("#item-panel .q-most-evident label[data-category=parroting]").click()
    _save(page).click()
    expect(page.locator("#item-panel .feedback")).to_be_visible()


def test_a_retry_shows_new_practice_items_and_ticking_a_wrong_category_fails(
    browser, annotator, invitation_url, open_study, tmp_path
):
    """Ten items, two attempts of five. The first attempt answers every item No with
    Malformed, except one with Off-topic (wrong) besides Parroting (required): all
    wrong (if the draw left that item for the retry, the retry answers it so). Its feedback shows the expected answers (these items will not return);
    the result page lists the wrong items; the retry shows the five others."""
    quiz_add(open_study, attempts=2, items_per_attempt=5, rounds=2)
    page = browser.new_context(viewport=DESKTOP).new_page()
    _start(page, invitation_url)
    first = TrainingAttempt.objects.get(annotator=annotator)
    first_items = training_attempt_items(attempt=first)
    wrong_ticked = False
    for number, item in enumerate(first_items, start=1):
        if item.position % 5 == 4:
            _tick_required_and_wrong(page, number)
            wrong_ticked = True
        else:
            _answer(page, number, ("n", "1"))
        panel = page.locator("#item-panel")
        expect(panel.locator(".feedback")).to_contain_text("Not quite ✗")
        expect(panel).to_contain_text(item.explanation)
        expect(panel.locator("[data-expected]")).to_have_text(
            re.compile("^Yes$" if item.expected_coherent else "^No — choose: ")
        )
        expect(panel).not_to_contain_text(WITHHELD)
        panel.locator("[data-next]").click()
    expect(page.get_by_role("heading", name="Not passed yet")).to_be_visible()
    expect(page.locator("[data-wrong]")).to_have_count(5)
    expect(
        page.get_by_text("the next attempt shows practice items you have not seen yet")
    ).to_be_visible()
    page.screenshot(path=tmp_path / "training-retry.png")
    page.get_by_role("button", name="Try again (attempt 2 of 2)").click()
    second = TrainingAttempt.objects.get(annotator=annotator, number=2)
    second_items = training_attempt_items(attempt=second)
    assert {i.pk for i in first_items}.isdisjoint(i.pk for i in second_items)
    n_right = 5
    for number, item in enumerate(second_items, start=1):
        expect(page.locator("#item-panel .candidate")).to_have_text(item.text)
        if item.position % 5 == 4 and not wrong_ticked:  # not drawn in the first attempt
            _tick_required_and_wrong(page, number)
            wrong_ticked, n_right = True, 4
            expect(page.locator("#item-panel .feedback")).to_contain_text("Not quite ✗")
        else:
            _answer(page, number, RIGHT_KEYS[(item.position - 1) % 5])
            expect(page.locator("#item-panel .feedback")).to_contain_text("Right ✓")
        page.locator("#item-panel [data-next]").click()
    expect(page.get_by_role("heading", name="You passed the practice quiz")).to_be_visible()
    expect(page.locator(".training-score")).to_contain_text(f"{n_right} of 5")
    first.refresh_from_db()
    assert (first.status, first.n_right) == ("failed", 0)
    assert wrong_ticked  # positions 4 and 9 are drawn in one attempt or the other
