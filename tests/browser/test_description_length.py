"""The description counter counts characters as the server does (Python's ``len``: an
emoji is one character, not two UTF-16 units): in a real browser, a description one
character short with emoji keeps Save disabled, and at the minimum it is saved."""

import pytest
from playwright.sync_api import expect

from studies.models import Judgement
from studies.protocol import DESCRIPTION_MIN_LENGTH
from tests.browser.test_annotation_flow import (
    DESKTOP,
    _consent_and_tutorial,
    _expect_item,
    _plan,
    _save,
)
from tests.browser.test_free_text_stage import free_text_stage  # noqa: F401 (fixture)

EMOJI = "\U0001f622"  # one character for Python, two UTF-16 units for JavaScript


@pytest.mark.usefixtures("free_text_stage")
def test_the_counter_counts_an_emoji_as_one_character(browser, annotator, invitation_url):
    short = "Sad " + EMOJI * (DESCRIPTION_MIN_LENGTH - 5)  # one character short
    assert len(short) == DESCRIPTION_MIN_LENGTH - 1
    page = browser.new_context(viewport=DESKTOP).new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, _ = _plan(annotator)
    _expect_item(page, 1, len(order))
    panel = page.locator("#item-panel")
    page.keyboard.press("n")
    description = panel.locator("textarea[name='description']")
    description.fill(short)
    expect(panel.locator("[data-description-count]")).to_have_text(f"{len(short)} typed.")
    expect(_save(page)).to_be_disabled()
    expect(panel.locator("[data-save-hint]")).to_contain_text("at least")
    assert not Judgement.objects.exists()
    enough = short + EMOJI
    description.fill(enough)
    expect(panel.locator("[data-description-count]")).to_have_text(f"{len(enough)} typed.")
    expect(_save(page)).to_be_enabled()
    _save(page).click()
    _expect_item(page, 2, len(order))
    assert Judgement.objects.get(assignment=assignment).error_description == enough
