"""The single-key shortcuts with more categories than digits, in a real browser: each
category shows its key (1–9, then letters) and ticks with it, "M" then a ticked
category's key chooses the most evident error, and typing in the description box
triggers none of them."""

import pytest
from playwright.sync_api import expect

from studies.models import ErrorCategory, Judgement, Stage
from studies.protocol import NO_ANSWER_BOTH
from studies.shortcuts import CATEGORY_KEYS
from tests.browser.test_annotation_flow import (
    DESKTOP,
    _choice,
    _consent_and_tutorial,
    _expect_item,
    _plan,
    _save,
)

N_CATEGORIES = 12


@pytest.fixture
def many_categories(open_study) -> list[ErrorCategory]:
    """The study's categories topped up to twelve, in display order."""
    existing = list(open_study.categories.order_by("order", "bit"))
    next_bit = max(c.bit for c in existing) + 1
    for i in range(N_CATEGORIES - len(existing)):
        ErrorCategory.objects.create(
            study=open_study,
            slug=f"extra_{i}",
            label=f"Extra problem {i}",
            definition=f"Definition of extra problem {i}.",
            order=100 + i,
            bit=next_bit + i,
        )
    return list(open_study.categories.order_by("order", "bit"))


def _categories_ticked(page) -> list[str]:
    return page.locator("#item-panel input[name=categories]:checked").evaluate_all(
        "boxes => boxes.map(b => b.value)"
    )


def test_every_category_has_a_key_and_m_chooses_the_most_evident(
    browser, annotator, invitation_url, many_categories
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(error))
    _consent_and_tutorial(page, invitation_url)
    assignment, order, _ = _plan(annotator)
    n = len(order)
    _expect_item(page, 1, n)
    page.locator("#item-heading").focus()
    page.keyboard.press("n")
    for key in ('"', "\\", "]", "F2"):  # not shortcuts: ignored, no script error
        page.keyboard.press(key)
    # Each checkbox shows its key: the digits, then letters.
    keys = page.locator("#item-panel .q-categories label.category kbd")
    expect(keys).to_have_text(["1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C"])
    second, tenth, twelfth = many_categories[1], many_categories[9], many_categories[11]
    for key in ("a", "C", "2"):  # a letter key works in either case
        page.keyboard.press(key)
    assert sorted(_categories_ticked(page)) == sorted([second.slug, tenth.slug, twelfth.slug])
    save = _save(page)
    expect(save).to_be_disabled()
    most_evident = page.locator("#item-panel .q-most-evident")
    expect(most_evident.locator("label.choice:visible")).to_have_count(3)
    expect(most_evident.locator(f"label[data-category={twelfth.slug}]")).to_contain_text("M C")

    # M, then a category that is not ticked: nothing is chosen and nothing is ticked.
    page.keyboard.press("m")
    expect(page.locator("#item-panel [data-key-pending]")).to_contain_text("most evident")
    page.keyboard.press("5")
    expect(page.locator("#item-panel [data-key-pending]")).to_have_text("")
    expect(page.locator("#item-panel input[name=most_evident]:checked")).to_have_count(0)
    assert len(_categories_ticked(page)) == 3
    # M, then a ticked category's key: the most evident error. "C" alone unticks again.
    page.keyboard.press("m")
    page.keyboard.press("c")
    expect(_choice(page, "most_evident", twelfth.slug).locator("input")).to_be_checked()
    expect(save).to_be_enabled()
    page.keyboard.press("m")
    page.keyboard.press("Escape")  # cancels the M
    expect(page.locator("#item-panel [data-key-pending]")).to_have_text("")
    page.keyboard.press("a")  # unticks the tenth; the most evident stays
    assert sorted(_categories_ticked(page)) == sorted([second.slug, twelfth.slug])
    expect(_choice(page, "most_evident", twelfth.slug).locator("input")).to_be_checked()
    page.keyboard.press("Enter")
    _expect_item(page, 2, n)

    assert errors == []
    judgement = Judgement.objects.get(assignment=assignment)
    assert judgement.coherent is False
    assert judgement.error_flags == (1 << second.bit) | (1 << twelfth.bit)
    assert judgement.most_evident_bit == twelfth.bit


def test_typing_a_description_triggers_no_category_key(
    browser, annotator, invitation_url, many_categories
):
    Stage.objects.filter(study=annotator.study, position=1).update(no_answer=NO_ANSWER_BOTH)
    page = browser.new_context(viewport=DESKTOP).new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, _ = _plan(annotator)
    _expect_item(page, 1, len(order))
    page.locator("#item-heading").focus()
    for key in ("n", "1", "b", "m", "b"):
        page.keyboard.press(key)
    first, eleventh = many_categories[0], many_categories[10]
    expect(_choice(page, "most_evident", eleventh.slug).locator("input")).to_be_checked()
    description = page.locator("#item-panel textarea[name=description]")
    description.focus()
    # Every category key, "M", "Y" and "N" typed into the box.
    text = "My words: " + " ".join(CATEGORY_KEYS[:N_CATEGORIES]) + " yes no maybe."
    page.keyboard.type(text)
    expect(description).to_have_value(text)
    assert sorted(_categories_ticked(page)) == sorted([first.slug, eleventh.slug])
    expect(_choice(page, "most_evident", eleventh.slug).locator("input")).to_be_checked()
    expect(_choice(page, "coherent", "no").locator("input")).to_be_checked()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    _expect_item(page, 2, len(order))
    judgement = Judgement.objects.get(assignment=assignment)
    assert judgement.error_flags == (1 << first.bit) | (1 << eleventh.bit)
    assert judgement.most_evident_bit == eleventh.bit
    assert judgement.error_description == text
