"""A Likert stage in a real browser: rated with the keyboard alone (digits typed as a
number, 10 and 11 included; a slider's value typed or moved with the arrows; "cannot
judge", next and previous by their keys), on a 390-pixel phone, and without
JavaScript (radio buttons and a number field); the batch submitted and its attention
check decided by the check's dimension."""

import pytest
from playwright.sync_api import expect

from studies.models import Assignment, Judgement, LikertDimension, Stage
from tests.browser.test_annotation_flow import (
    DESKTOP,
    PHONE,
    _consent_and_tutorial,
    _expect_item,
    _plan,
    _save,
)
from tests.studies.likert_fixtures import make_likert

ELEVEN = ["not at all", *[""] * 9, "completely"]


@pytest.fixture
def likert_stage(open_study):
    """Stage 1 rates fluency on 11 points (the attention check: 1 passes) and warmth on
    a slider ("cannot judge" offered)."""
    stage = Stage.objects.get(study=open_study, position=1)
    make_likert(stage)
    LikertDimension.objects.filter(stage=stage, name="fluency").update(points=11, labels=ELEVEN)
    return stage


def _ratings(assignment, number) -> dict:
    judgement = Judgement.objects.get(
        assignment=assignment, reflection_id=assignment.order[number - 1]
    )
    return {
        r.dimension.name: "cannot judge" if r.cannot_judge else r.value
        for r in judgement.ratings.select_related("dimension")
    }


def _dimension(page, name):
    return page.locator(f"#item-panel .q-dimension[data-dimension={name}]")


def _submit_review(page, assignment):
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()
    expect(page.get_by_text("Thank you: your batch is submitted.")).to_be_visible()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.attention_passed is True


def test_a_likert_batch_with_the_keyboard_alone(
    browser, annotator, invitation_url, likert_stage, tmp_path
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, attention_at = _plan(annotator)
    n = len(order)
    _expect_item(page, 1, n)
    fluency, warmth = _dimension(page, "fluency"), _dimension(page, "warmth")
    number = warmth.locator("input[type=number]")
    expect(fluency).to_have_class("question q-dimension current")
    expect(_save(page)).to_be_disabled()
    expect(page.locator("[data-save-hint]")).to_have_text(
        "Rate every statement first (0 of 2 rated)."
    )

    def ten_and_seventy_five():
        """ "1" then "0" is 10 (and moves on); "7" then "5" is 75 on the slider."""
        page.keyboard.press("1")
        expect(fluency.locator("input[value='1']")).to_be_checked()
        expect(page.locator("[data-key-pending]")).to_contain_text("1…")
        page.keyboard.press("0")
        expect(fluency.locator("input[value='10']")).to_be_checked()
        expect(warmth).to_have_class("question q-dimension current")
        page.keyboard.type("75")
        expect(number).to_have_value("75")
        expect(warmth.locator("[data-slider-range]")).to_have_value("75")
        expect(_save(page)).to_be_enabled()
        page.screenshot(path=tmp_path / "likert.png")
        return {"fluency": 10, "warmth": 75}

    def eleven_and_cannot_judge():
        """11 points reached by typing 11; "c" says "cannot judge" on the slider."""
        page.keyboard.type("11")
        expect(fluency.locator("input[value='11']")).to_be_checked()
        page.keyboard.press("c")
        expect(warmth.locator("[data-cannot-judge]")).to_be_checked()
        expect(number).to_have_value("")
        return {"fluency": 11, "warmth": "cannot judge"}

    def next_arrows_and_previous():
        """ "n" moves to the slider, whose arrows move it; "p" moves back, and a "1"
        typed just before it does not move on by itself later."""
        page.keyboard.press("1")
        page.keyboard.press("n")
        expect(warmth.locator("[data-slider-range]")).to_be_focused()
        page.keyboard.press("ArrowRight")
        expect(number).to_have_value("51")
        page.keyboard.press("p")
        expect(fluency).to_have_class("question q-dimension current")
        page.wait_for_timeout(1200)  # longer than the typing pause: the mark stays
        expect(fluency).to_have_class("question q-dimension current")
        page.keyboard.press("3")
        expect(fluency.locator("input[value='3']")).to_be_checked()
        return {"fluency": 3, "warmth": 51}

    def attention_check():
        """Rated 1 on fluency, which passes: "1", "2", "0" is 1 (12 is off the scale),
        then 20 on the slider."""
        page.keyboard.type("120")
        expect(number).to_have_value("20")
        expect(fluency.locator("input[value='1']")).to_be_checked()
        return {"fluency": 1, "warmth": 20}

    def plain():
        page.keyboard.type("620")
        return {"fluency": 6, "warmth": 20}

    scenarios = [ten_and_seventy_five, eleven_and_cannot_judge, next_arrows_and_previous]
    expected = {}
    for item in range(1, n + 1):
        _expect_item(page, item, n)
        if item == attention_at:
            expected[item] = attention_check()
        else:
            expected[item] = (scenarios.pop(0) if scenarios else plain)()
        page.keyboard.press("Enter")
    assert not scenarios
    _submit_review(page, assignment)
    assert {item: _ratings(assignment, item) for item in expected} == expected


def test_a_likert_batch_on_a_phone(browser, annotator, invitation_url, likert_stage):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url, tap=True)
    assignment, order, attention_at = _plan(annotator)
    n = len(order)
    for item in range(1, n + 1):
        _expect_item(page, item, n)
        # Eleven points wrap on a 390-pixel screen: nothing scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        point = "1" if item == attention_at else "8"
        _dimension(page, "fluency").locator(f"label:has(input[value='{point}'])").tap()
        _dimension(page, "warmth").locator("input[type=number]").fill("30")
        _save(page).tap()
    _submit_review(page, assignment)
    assert _ratings(assignment, 1)["warmth"] == 30


def test_a_likert_batch_without_javascript(browser, annotator, invitation_url, likert_stage):
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, attention_at = _plan(annotator)
    n = len(order)
    expect(page.locator("[data-slider-range]")).to_be_hidden()  # the number field instead
    # The server checks the answer: a missing rating is named, nothing is written.
    _dimension(page, "fluency").locator("label:has(input[value='5'])").click()
    _save(page).click()
    expect(_dimension(page, "warmth").get_by_role("alert")).to_have_text("Rate warmth.")
    expect(_dimension(page, "fluency").locator("input[value='5']")).to_be_checked()
    assert not Judgement.objects.filter(assignment=assignment).exists()
    for item in range(1, n + 1):
        expect(page.locator("#item-heading")).to_have_text(f"Response candidate {item} of {n}")
        point = "1" if item == attention_at else "5"
        _dimension(page, "fluency").locator(f"label:has(input[value='{point}'])").click()
        if item % 2:
            _dimension(page, "warmth").locator("input[type=number]").fill("64")
        else:
            _dimension(page, "warmth").get_by_text("Cannot judge").click()
        _save(page).click()
    _submit_review(page, assignment)
    assert _ratings(assignment, 1) == {"fluency": 1 if attention_at == 1 else 5, "warmth": 64}
