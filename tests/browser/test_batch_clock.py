"""The batch page's clock in a real browser: before the first answer it counts down
the time to save one and the note under the bar says so, with both numbers of
minutes; once the first answer is saved (htmx, no reload) it counts down the rest
of the batch's time limit and the note says that instead."""

import re

from playwright.sync_api import expect

from studies.models import Assignment, Reflection
from tests.browser.test_annotation_flow import (
    DESKTOP,
    _choice,
    _consent_and_tutorial,
    _expect_item,
    _save,
)


def test_the_clock_says_what_it_counts_down(browser, annotator, invitation_url, settings):
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 600
    page = browser.new_context(viewport=DESKTOP).new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment = Assignment.objects.get(annotator=annotator)
    n = len(assignment.order)
    _expect_item(page, 1, n)
    timer = page.locator("#timer")
    first_note = page.locator("#clock-first-answer")
    limit_note = page.locator("#clock-time-limit")
    expect(timer).to_have_text(re.compile(r"^Time to save a first answer: (9:[0-5]\d|10:00)$"))
    expect(first_note).to_be_visible()
    expect(first_note).to_contain_text(
        "The clock first counts down the 10 minutes you have to save your first answer"
    )
    expect(first_note).to_contain_text("the batch's full time limit, 30 minutes")
    expect(limit_note).to_be_hidden()

    kind = Reflection.objects.get(pk=assignment.order[0]).kind
    if kind == Reflection.Kind.ATTENTION_CHECK:
        _choice(page, "coherent", "no").click()
        _choice(page, "categories", "off_topic").click()
    else:
        _choice(page, "coherent", "yes").click()
        _choice(page, "empathy", "4").click()
    _save(page).click()
    _expect_item(page, 2, n)
    expect(timer).to_have_text(re.compile(r"^Time left: (29:[0-5]\d|30:00)$"))
    expect(limit_note).to_be_visible()
    expect(limit_note).to_contain_text("the rest of the batch's time limit, 30 minutes")
    expect(first_note).to_be_hidden()
