"""Keyboard and phone details of the annotation page, in a real browser: the next
candidate comes into view after a save on a phone, below the clock, which stays in
view; the tutorial's keyboard section only where there is a keyboard; the disabled
Save button stays legible, and single-key shortcuts can be switched off (and stay
off)."""

import re

import pytest
from playwright.sync_api import expect

from studies.models import DialogueContext, Judgement
from tests.browser.test_annotation_flow import (
    DESKTOP,
    PHONE,
    _choice,
    _consent_and_tutorial,
    _expect_item,
    _plan,
    _save,
)


def _luminance(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", rgb)[:3])

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(foreground: str, background: str) -> float:
    lighter, darker = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_contrast_formula_matches_wcag_examples():
    assert contrast("rgb(0, 0, 0)", "rgb(255, 255, 255)") == 21
    assert round(contrast("rgb(118, 118, 118)", "rgb(255, 255, 255)"), 2) == 4.54


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "plain-forms"])
def test_on_a_phone_each_next_candidate_is_in_view_after_saving(
    browser, annotator, invitation_url, javascript
):
    # Conversations are long (about 14 turns): on a phone the candidate sits far below.
    long_turns = [
        {"role": ("therapist", "client")[i % 2], "text": f"Turn {i}: " + "so I said that " * 12}
        for i in range(14)
    ]
    DialogueContext.objects.filter(study=annotator.study).update(turns=long_turns)
    context = browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, java_script_enabled=javascript
    )
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url, tap=True)
    _, order, attention_at = _plan(annotator)
    n = len(order)
    # The first candidate comes after the conversation, which is read first.
    expect(page.locator("#item-panel .candidate")).not_to_be_in_viewport()
    for number in range(1, n):
        if javascript:
            _expect_item(page, number, n)
        if number == attention_at:
            _choice(page, "coherent", "no").tap()
            _choice(page, "categories", "off_topic").tap()
        else:
            _choice(page, "coherent", "yes").tap()
            _choice(page, "empathy", "4").tap()
        _save(page).scroll_into_view_if_needed()
        _save(page).tap()
        if javascript:
            _expect_item(page, number + 1, n)
            expect(page.locator("#item-heading")).to_be_focused()
        else:
            expect(page.locator("#item-heading")).to_have_text(
                f"Response candidate {number + 1} of {n}"
            )
        # The new candidate's text and its first question are on screen, not below.
        expect(page.locator("#item-panel .candidate")).to_be_in_viewport(ratio=1)
        expect(page.locator("#item-panel .q-coherent")).to_be_in_viewport(ratio=1)
        # The clock stays in view far down the page, and covers nothing of the item.
        expect(page.locator("#timer")).to_be_in_viewport(ratio=1)
        bar = page.locator(".batch-bar").bounding_box()
        assert page.locator("#item-heading").bounding_box()["y"] >= bar["y"] + bar["height"]
    context.close()
    assert Judgement.objects.filter(assignment__annotator=annotator).count() == n - 1


def test_the_tutorials_keyboard_section_is_not_shown_on_a_phone(browser, invitation_url):
    phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True).new_page()
    phone.goto(invitation_url)
    phone.locator("label[for=id_agree]").tap()
    phone.get_by_role("button", name="I agree and want to take part").tap()
    expect(phone.get_by_role("heading", name="When it is coherent")).to_be_visible()
    expect(phone.get_by_role("heading", name="Keyboard")).to_be_hidden()
    desktop = browser.new_context(viewport=DESKTOP).new_page()
    desktop.goto(invitation_url)
    expect(desktop.get_by_role("heading", name="Keyboard")).to_be_visible()
    # A narrow window, even without touch, is taken for a phone too.
    desktop.set_viewport_size(PHONE)
    expect(desktop.get_by_role("heading", name="Keyboard")).to_be_hidden()


def test_the_disabled_save_button_is_legible_and_looks_disabled(browser, annotator, invitation_url):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url)
    _expect_item(page, 1, len(_plan(annotator)[1]))
    save = _save(page)
    expect(save).to_be_disabled()

    def colours():
        return save.evaluate(
            "b => { const s = getComputedStyle(b);"
            " return [s.color, s.backgroundColor, s.opacity, s.borderStyle]; }"
        )

    colour, background, opacity, border = colours()
    assert float(opacity) == 1  # no fading: the colours below are what is seen
    assert contrast(colour, background) >= 4.5
    assert border == "dashed"
    _choice(page, "coherent", "yes").click()
    _choice(page, "empathy", "4").click()
    expect(save).to_be_enabled()
    enabled_colour, enabled_background, _, enabled_border = colours()
    assert enabled_background != background and enabled_border == "solid"
    assert contrast(enabled_colour, enabled_background) >= 4.5
    context.close()


def test_single_key_shortcuts_can_be_switched_off_and_stay_off(browser, annotator, invitation_url):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url)
    n = len(_plan(annotator)[1])
    _expect_item(page, 1, n)
    toggle = page.get_by_label("Single-key shortcuts")
    expect(toggle).to_be_checked()
    page.locator("#item-heading").focus()
    page.keyboard.press("y")
    expect(page.locator("#item-panel input[name=coherent][value=yes]")).to_be_checked()

    toggle.uncheck()
    expect(page.locator("#item-panel .shortcut-keys")).to_be_hidden()
    page.locator("#item-heading").focus()
    page.keyboard.press("n")
    page.keyboard.press("3")
    # Nothing changed: still Yes, no rating chosen.
    expect(page.locator("#item-panel input[name=coherent][value=yes]")).to_be_checked()
    expect(page.locator("#item-panel input[name=empathy]:checked")).to_have_count(0)

    # Remembered across pages (and the next items htmx swaps in).
    page.reload()
    _expect_item(page, 1, n)
    toggle = page.get_by_label("Single-key shortcuts")
    expect(toggle).not_to_be_checked()
    page.locator("#item-heading").focus()
    page.keyboard.press("y")
    expect(page.locator("#item-panel input[name=coherent]:checked")).to_have_count(0)
    _choice(page, "coherent", "yes").click()
    _choice(page, "empathy", "4").click()
    _save(page).click()
    _expect_item(page, 2, n)
    expect(page.get_by_label("Single-key shortcuts")).not_to_be_checked()
    page.locator("#item-heading").focus()
    page.keyboard.press("y")
    expect(page.locator("#item-panel input[name=coherent]:checked")).to_have_count(0)

    # Switched on again, the keys work again.
    page.get_by_label("Single-key shortcuts").check()
    page.locator("#item-heading").focus()
    page.keyboard.press("y")
    expect(page.locator("#item-panel input[name=coherent][value=yes]")).to_be_checked()
    context.close()
    stored = Judgement.objects.get(assignment__annotator=annotator)
    assert (stored.coherent, stored.empathy) == (True, 4)
