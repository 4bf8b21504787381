"""Item drafts in a real browser: choices made on an item and never saved survive a
closed tab, come back on another device, and are never an answer."""

import re

from playwright.sync_api import expect

from studies.models import Assignment, ItemDraft, Judgement
from tests.browser.test_annotation_flow import (
    DESKTOP,
    _choice,
    _consent_and_tutorial,
    _expect_item,
    _save,
)


def _draft_sent(page):
    """Waits for the page's next draft to reach the server (after the debounce)."""
    return page.expect_response(
        lambda r: "/draft/" in r.url and r.request.method == "POST", timeout=10_000
    )


def test_a_closed_tab_keeps_the_item_in_progress_on_this_and_another_device(
    browser, open_study, annotator, invitation_url
):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment = Assignment.objects.get(annotator=annotator)
    n = len(assignment.order)
    _expect_item(page, 1, n)

    # Item 1 saved as usual; item 2 in progress: No, two categories, the most evident
    # one, and words typed; then the tab is closed without saving.
    _choice(page, "coherent", "yes").click()
    _choice(page, "empathy", "4").click()
    _save(page).click()
    _expect_item(page, 2, n)
    categories = list(open_study.categories.order_by("order", "bit"))
    first, second = categories[0].slug, categories[2].slug
    _choice(page, "coherent", "no").click()
    _choice(page, "categories", first).click()
    with _draft_sent(page) as sent:
        _choice(page, "categories", second).click()
        page.locator(f"#item-panel .q-most-evident label[data-category={second}]").click()
    assert sent.value.status == 204
    page.close()

    draft = ItemDraft.objects.get(assignment=assignment)
    assert draft.number == 2 and draft.base_revision == 0
    assert sorted(draft.fields["categories"]) == sorted([first, second])
    # Never an answer: item 2 has no judgement, the batch still needs it.
    assert Judgement.objects.filter(assignment=assignment).count() == 1

    def expect_restored(tab):
        _expect_item(tab, 2, n)
        expect(tab.locator("[data-draft-restored]")).to_be_visible()
        expect(tab.locator("#item-panel input[name=coherent][value=no]")).to_be_checked()
        for slug in (first, second):
            expect(tab.locator(f"#item-panel input[name=categories][value={slug}]")).to_be_checked()
        expect(tab.locator(f"#item-panel input[name=most_evident][value={second}]")).to_be_checked()
        expect(_save(tab)).to_be_enabled()

    # The same browser, a new tab: the batch opens at item 2 with the choices back.
    again = context.new_page()
    again.goto(f"{invitation_url}")
    again.get_by_role("link", name="Continue your batch").click()
    expect_restored(again)

    # Another device (a new browser profile) signed in through the same link.
    other = browser.new_context(viewport=DESKTOP).new_page()
    other.goto(invitation_url)
    other.get_by_role("link", name="Continue your batch").click()
    expect_restored(other)

    # Saving there makes it the answer; the draft is then stale and never shown again.
    _save(other).click()
    _expect_item(other, 3, n)
    saved = Judgement.objects.get(assignment=assignment, reflection_id=assignment.order[1])
    assert saved.coherent is False and saved.revision == 1
    again.goto(re.sub(r"/\d+/$", "/2/", again.url))
    _expect_item(again, 2, n)
    expect(again.locator("[data-draft-restored]")).to_have_count(0)
    expect(again.locator("#item-panel input[name=coherent][value=no]")).to_be_checked()
