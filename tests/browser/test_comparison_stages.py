"""Pairwise and ranking stages in a real browser: a pairwise batch with the keyboard
alone, on a 390-pixel phone (A above B) and without JavaScript; a ranking put in
order with the keyboard (and a tie), by dragging, with the buttons on a phone, and by
typing rank numbers without JavaScript; each batch submitted and its attention check
decided as the stage says."""

import re

import pytest
from playwright.sync_api import expect

from studies.models import Assignment, Judgement, Reflection, Stage
from studies.protocol import pair_winner
from tests.browser.test_annotation_flow import DESKTOP, PHONE


@pytest.fixture
def pairwise_stage(open_study):
    stage = Stage.objects.get(study=open_study, position=1)
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.PAIRWISE, asks_reason=True)
    return stage


@pytest.fixture
def ranking_stage(open_study):
    stage = Stage.objects.get(study=open_study, position=1)
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.RANKING)
    return stage


def _start(page, invitation_url: str, heading: re.Pattern, *, tap: bool = False) -> None:
    press = (lambda locator: locator.tap()) if tap else (lambda locator: locator.click())
    page.goto(invitation_url)
    press(page.locator("label[for=id_agree]"))
    press(page.get_by_role("button", name="I agree and want to take part"))
    expect(page.get_by_role("heading", name="How to judge the response candidates")).to_be_visible()
    press(page.get_by_role("button", name="I have read the tutorial — start"))
    press(page.get_by_role("button", name="Start a batch"))
    expect(page.locator("#item-heading")).to_have_text(heading)


def _submitted(page, annotator) -> Assignment:
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()
    expect(page.get_by_text("Thank you: your batch is submitted.")).to_be_visible()
    assignment = Assignment.objects.get(annotator=annotator)
    assert assignment.status == Assignment.Status.SUBMITTED
    return assignment


def _is_check(reflection_id) -> bool:
    return Reflection.objects.get(pk=reflection_id).kind == Reflection.Kind.ATTENTION_CHECK


def _winning_key(entry) -> str:
    """The key that makes the real candidate of the attention pair win."""
    _, _, swapped = entry
    return next(c for c in "ab" if pair_winner(c.upper(), swapped) == 1)


def _ready(page, number: int, n: int) -> None:
    expect(page.locator("#item-heading")).to_have_text(f"Pair {number} of {n}")
    expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
        "data-opened-at", re.compile(r"^\d+$")
    )


def test_a_pairwise_batch_with_the_keyboard_alone(
    browser, annotator, invitation_url, pairwise_stage
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    _start(page, invitation_url, re.compile(r"^Pair 1 of \d+$"))
    assignment = Assignment.objects.get(annotator=annotator)
    n = len(assignment.order)
    save = page.locator("#item-panel").get_by_role("button", name="Save and next")
    expected = {}
    for number, entry in enumerate(assignment.order, start=1):
        _ready(page, number, n)
        expect(save).to_be_disabled()
        # The two responses side by side: A on the left.
        a, b = page.locator(".pair-side").all()
        assert a.bounding_box()["x"] < b.bounding_box()["x"]
        key = _winning_key(entry) if _is_check(entry[0]) else "abt"[number % 3]
        page.keyboard.press(key)
        expected[number] = {"a": "A", "b": "B", "t": "Tie"}[key]
        expect(save).to_be_enabled()
        if number == 1:  # typing a reason triggers no key
            page.locator("#id_reason").click()
            page.keyboard.type("Both fine, but B is warmer.")
            expect(page.locator("input[name=choice][value=" + expected[1] + "]")).to_be_checked()
            page.locator("#id_reason").press("Tab")
        page.keyboard.press("Enter")
    assignment = _submitted(page, annotator)
    assert assignment.attention_passed is True
    stored = {
        number: Judgement.objects.get(
            assignment=assignment, reflection_id=entry[0], opponent_id=entry[1]
        )
        for number, entry in enumerate(assignment.order, start=1)
    }
    assert {number: j.choice for number, j in stored.items()} == expected
    assert stored[1].reason == "Both fine, but B is warmer."


def test_a_pairwise_batch_on_a_phone_and_without_javascript(
    browser, annotator, invitation_url, pairwise_stage
):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    _start(page, invitation_url, re.compile(r"^Pair 1 of \d+$"), tap=True)
    assignment = Assignment.objects.get(annotator=annotator)
    entry = assignment.order[0]
    a, b = page.locator(".pair-side").all()
    assert a.bounding_box()["y"] < b.bounding_box()["y"]  # A above B
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    choice = "A" if not _is_check(entry[0]) else _winning_key(entry).upper()
    page.locator(f"#item-panel label:has(> input[name=choice][value={choice}])").tap()
    page.locator("#item-panel").get_by_role("button", name="Save and next").tap()
    expect(page.locator("#item-heading")).to_have_text(re.compile(r"^Pair 2 of"))
    assert Judgement.objects.get(assignment=assignment).choice == choice
    # The rest without JavaScript: plain forms, checked by the server.
    plain = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = plain.new_page()
    page.goto(invitation_url)
    page.goto(
        invitation_url.split("/i/")[0] + f"/s/{assignment.stage.study.slug}/b/{assignment.pk}/"
    )
    n = len(assignment.order)
    expect(page.locator("#item-heading")).to_have_text(f"Pair 2 of {n}")
    page.locator("#item-panel").get_by_role("button", name="Save and next").click()
    expect(page.locator("#item-panel").get_by_role("alert")).to_contain_text("Choose A, B or Tie.")
    assert Judgement.objects.filter(assignment=assignment).count() == 1
    for number in range(2, n + 1):
        entry = assignment.order[number - 1]
        choice = _winning_key(entry).upper() if _is_check(entry[0]) else "Tie"
        page.locator(f"#item-panel label:has(> input[name=choice][value={choice}])").click()
        page.locator("#item-panel").get_by_role("button", name="Save and next").click()
    assert _submitted(page, annotator).attention_passed is True


def _ranked(assignment) -> list[tuple[int, int]]:
    """(reflection, rank) in the order the page showed them."""
    ranks = dict(Judgement.objects.filter(assignment=assignment).values_list("reflection", "rank"))
    return [(rid, ranks.get(rid)) for rid in assignment.order]


def test_a_ranking_with_the_keyboard_and_by_dragging(
    browser, annotator, invitation_url, ranking_stage
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    _start(page, invitation_url, re.compile(r"^Rank the \d+ responses$"))
    assignment = Assignment.objects.get(annotator=annotator)
    items = page.locator(".ranking-item")
    n = items.count()
    assert n == len(assignment.order)
    expect(page.locator(".rank-field").first).to_be_hidden()  # the order is the ranking
    # Move the off-topic response to the bottom with the keyboard alone.
    check = next(i for i, rid in enumerate(assignment.order) if _is_check(rid))
    page.keyboard.press("ArrowDown")
    expect(items.nth(0)).to_be_focused()
    for _ in range(check):
        page.keyboard.press("ArrowDown")
    expect(items.nth(check)).to_be_focused()
    for _ in range(n - 1 - check):
        page.keyboard.press("d")
    expect(items.nth(n - 1)).to_have_attribute("data-id", str(assignment.order[check]))
    expect(items.nth(n - 1)).to_be_focused()
    # Tie the third with the second (n = 4: the off-topic one is last).
    assert n == 4
    page.keyboard.press("ArrowUp")
    expect(items.nth(2)).to_be_focused()
    page.keyboard.press("t")
    expect(items.nth(2).locator("[data-place]")).to_have_text("=2")
    expect(items.nth(3).locator("[data-place]")).to_have_text("4")
    # Drag the second below the third (above the last): the third, tied with it, is
    # not tied with the one now above it.
    second = items.nth(1).get_attribute("data-id")
    items.nth(1).drag_to(items.nth(3), target_position={"x": 20, "y": 5})
    expect(items.nth(2)).to_have_attribute("data-id", second)
    expect(page.locator(".ranking-item.tied")).to_have_count(0)
    expect(items.locator("[data-place]")).to_have_text(["1", "2", "3", "4"])
    # Drag the third response to the top.
    third = items.nth(2).get_attribute("data-id")
    items.nth(2).drag_to(items.nth(0), target_position={"x": 20, "y": 5})
    expect(items.nth(0)).to_have_attribute("data-id", third)
    items.nth(0).focus()
    page.keyboard.press("Enter")
    assignment = _submitted(page, annotator)
    assert assignment.attention_passed is True
    ranks = dict(_ranked(assignment))
    assert ranks[int(third)] == 1
    assert ranks[assignment.order[check]] == n


def test_a_ranking_on_a_phone_and_without_javascript(
    browser, annotator, invitation_url, ranking_stage
):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    _start(page, invitation_url, re.compile(r"^Rank the \d+ responses$"), tap=True)
    assignment = Assignment.objects.get(annotator=annotator)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    first = page.locator(".ranking-item").first
    first.get_by_role("button", name=re.compile("^Down")).tap()
    expect(page.locator(".ranking-item").nth(1)).to_have_attribute(
        "data-id", str(assignment.order[0])
    )
    # Without JavaScript: rank numbers typed (the browser keeps them within 1 to n),
    # checked by the server: in a stage that allows no ties, equal numbers are refused.
    Stage.objects.filter(pk=ranking_stage.pk).update(allows_ties=False)
    plain = browser.new_context(viewport=DESKTOP, java_script_enabled=False).new_page()
    plain.goto(invitation_url)
    plain.goto(
        invitation_url.split("/i/")[0] + f"/s/{assignment.stage.study.slug}/b/{assignment.pk}/"
    )
    n = len(assignment.order)
    fields = {rid: plain.locator(f"input[name=rank_{rid}]") for rid in assignment.order}
    for field in fields.values():
        field.fill("1")
    plain.get_by_role("button", name="Save and review").click()
    expect(plain.get_by_role("alert")).to_have_text(
        "This stage allows no ties: give each candidate its own rank."
    )
    assert not Judgement.objects.filter(assignment=assignment).exists()
    real = [rid for rid in assignment.order if not _is_check(rid)]
    for place, rid in enumerate(reversed(real), start=1):
        fields[rid].fill(str(place))
    fields[next(rid for rid in assignment.order if _is_check(rid))].fill(str(n))
    plain.get_by_role("button", name="Save and review").click()
    assignment = _submitted(plain, annotator)
    assert assignment.attention_passed is True
    ranks = dict(_ranked(assignment))
    assert [ranks[rid] for rid in reversed(real)] == list(range(1, len(real) + 1))
