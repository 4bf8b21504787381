"""A free-text stage in a real browser, with the keyboard: No, then a description typed
into the box (whose letters, "y", "n" and digits included, never trigger the single-key
shortcuts), Save enabled only once the description is long enough; the description is
stored as typed (trimmed). No puts the cursor in the box; Tab from it reaches Save
before "← Back", which asks before throwing an unsaved answer away."""

import pytest
from playwright.sync_api import expect

from studies.models import Judgement, Stage
from studies.protocol import NO_ANSWER_FREE_TEXT
from tests.browser.test_annotation_flow import (
    DESKTOP,
    _choice,
    _consent_and_tutorial,
    _expect_item,
    _plan,
    _save,
)

# Letters that are shortcuts outside the box: Y (Yes), N (No), 1–5.
DESCRIPTION = "Says yes, 1 to 5 nights a week; nothing in the dialogue says so."


@pytest.fixture
def free_text_stage(open_study):
    Stage.objects.filter(study=open_study, position=1).update(no_answer=NO_ANSWER_FREE_TEXT)


def test_free_text_answer_with_the_keyboard(
    browser, annotator, invitation_url, free_text_stage, tmp_path
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, _ = _plan(annotator)
    n = len(order)
    _expect_item(page, 1, n)
    panel = page.locator("#item-panel")
    expect(panel.locator("input[name='categories']")).to_have_count(0)
    description = panel.locator("textarea[name='description']")
    expect(description).to_be_hidden()  # until No
    page.keyboard.press("n")
    expect(description).to_be_visible()
    expect(_save(page)).to_be_disabled()
    description.focus()
    page.keyboard.type("Too short")
    expect(_save(page)).to_be_disabled()
    expect(panel.locator("[data-save-hint]")).to_contain_text("at least 10 characters")
    page.keyboard.press("Control+a")
    page.keyboard.type(DESCRIPTION)
    # Typing "y", "n" and digits in the box changed no answer.
    expect(_choice(page, "coherent", "no").locator("input")).to_be_checked()
    expect(description).to_have_value(DESCRIPTION)
    expect(_save(page)).to_be_enabled()
    page.screenshot(path=tmp_path / "free-text.png")
    page.keyboard.press("Tab")  # out of the box (Enter there is a new line)
    page.keyboard.press("Enter")
    _expect_item(page, 2, n)
    judgement = Judgement.objects.get(assignment=assignment)
    assert judgement.coherent is False and judgement.error_description == DESCRIPTION
    assert judgement.error_flags == 0 and judgement.empathy is None


def test_no_focuses_the_box_tab_reaches_save_and_back_asks_first(
    browser, annotator, invitation_url, free_text_stage
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, _ = _plan(annotator)
    n = len(order)
    _expect_item(page, 1, n)
    panel = page.locator("#item-panel")
    description = panel.locator("textarea[name='description']")
    page.keyboard.press("n")
    expect(description).to_be_focused()
    page.keyboard.type(DESCRIPTION)  # straight away: its "y" is no Yes
    expect(_choice(page, "coherent", "no").locator("input")).to_be_checked()
    expect(description).to_have_value(DESCRIPTION)
    page.keyboard.press("Tab")
    expect(_save(page)).to_be_focused()
    page.keyboard.press("Enter")
    _expect_item(page, 2, n)

    # Item 2: Back is shown before Save but comes after it in the focus order.
    back = panel.get_by_role("link", name="← Back")
    assert back.bounding_box()["x"] < _save(page).bounding_box()["x"]
    _choice(page, "coherent", "no").click()  # the mouse too
    expect(description).to_be_focused()
    page.keyboard.type("Not saved yet, and then")
    page.keyboard.press("Tab")
    expect(_save(page)).to_be_focused()
    page.keyboard.press("Tab")
    expect(back).to_be_focused()
    asked: list[str] = []

    def dismiss(dialog):
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.keyboard.press("Enter")
    expect(description).to_have_value("Not saved yet, and then")  # still item 2
    _expect_item(page, 2, n)
    assert asked == [
        "Your answer to this response candidate is not saved yet. Go back anyway and lose it?"
    ]
    page.once("dialog", lambda dialog: dialog.accept())
    back.click()
    _expect_item(page, 1, n)
    expect(description).to_have_value(DESCRIPTION)
    assert Judgement.objects.filter(assignment=assignment).count() == 1
    # Back from an unchanged item asks nothing (a dialog would fail the test: no handler).
    _save(page).click()
    _expect_item(page, 2, n)
    back.click()
    _expect_item(page, 1, n)
