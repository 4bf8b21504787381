"""Coding descriptions in a real browser with the keyboard: number keys tick codes, U
marks uninformative, Enter saves and moves on (htmx), P goes back; a code added in
place gets the next number key; typing in the code form's boxes triggers nothing; no
Content-Security-Policy violation on the way. Blind by default, the codebook beside
the description stays fresh, and the last save ends in the all-coded state."""

import re

import pytest
from playwright.sync_api import expect

from studies.models import DescriptionCoding, Judgement
from studies.services.coding import code_create, coder_join, coding_save
from tests.browser.test_content_security_policy import REPORT_VIOLATIONS
from tests.studies.coding_fixtures import code_first_stage, coded_descriptions, make_coder

DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def stage(loaded_study):
    stage = code_first_stage(loaded_study)
    code_create(study=loaded_study, slug="lost_context", label="Lost the context", definition="D1")
    code_create(study=loaded_study, slug="parrots", label="Parrots the client", definition="D2")
    user = make_coder("coder", loaded_study)
    user.set_password("pw-for-tests-only")
    user.save()
    return stage


def _log_in(page, live_server, next_url: str) -> None:
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.get_by_label("Username").fill("coder")
    page.get_by_label("Password").fill("pw-for-tests-only")
    page.get_by_role("button", name="Log in").click()


def test_coding_with_the_keyboard(browser, live_server, stage):
    ids = coded_descriptions(stage)
    context = browser.new_context(viewport=DESKTOP)
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    violations = []
    page.on(
        "console",
        lambda m: (
            violations.append(m.text)
            if "Content Security Policy" in m.text or "CSP violation" in m.text
            else None
        ),
    )
    _log_in(page, live_server, "/coding/pilot/stage-1/")
    panel = page.locator("#coding-panel")
    expect(panel).to_have_attribute("data-item", str(ids[0]))
    expect(panel.locator("[data-progress]")).to_have_text("0 / 6 coded by you")
    codes = panel.locator("input[data-code]")
    uninformative = panel.locator("input[data-uninformative]")

    page.locator("h1").click()  # the page has the keyboard (headless Chromium)
    page.keyboard.press("2")
    expect(codes.nth(1)).to_be_checked()
    page.keyboard.press("1")
    expect(codes.nth(0)).to_be_checked()
    page.keyboard.press("u")  # uninformative unticks the codes
    expect(uninformative).to_be_checked()
    expect(codes.nth(0)).not_to_be_checked()
    page.keyboard.press("2")  # a code unticks uninformative
    expect(uninformative).not_to_be_checked()
    page.keyboard.press("Enter")
    expect(panel).to_have_attribute("data-item", str(ids[1]))
    expect(panel.locator("[data-progress]")).to_have_text("1 / 6 coded by you")
    assert page.url.endswith(f"?item={ids[1]}")

    # Typing in the code form never triggers a shortcut; the new code gets key 3.
    page.locator("#code-slug").fill("")
    page.locator("#code-slug").type("n2up")
    page.locator("#code-label").type("Nup 1 p")
    expect(panel).to_have_attribute("data-item", str(ids[1]))
    expect(codes.nth(0)).not_to_be_checked()
    page.get_by_role("button", name="Add the code").click()
    expect(page.locator("#code-add .saved")).to_contain_text("Added “Nup 1 p” (key 3)")
    expect(codes).to_have_count(3)
    expect(codes.nth(2)).to_be_checked()
    page.locator("#coding-heading").focus()
    page.keyboard.press("n")  # n saves too
    expect(panel).to_have_attribute("data-item", str(ids[2]))

    page.keyboard.press("p")
    expect(panel).to_have_attribute("data-item", str(ids[1]))
    expect(codes.nth(2)).to_be_checked()  # my own coding, as saved
    page.keyboard.press("3")
    page.keyboard.press("u")
    page.keyboard.press("Enter")
    expect(panel).to_have_attribute("data-item", str(ids[2]))

    codings = {c.judgement_id: c for c in DescriptionCoding.objects.all()}
    assert sorted(codings[ids[0]].codes.values_list("slug", flat=True)) == ["parrots"]
    assert codings[ids[1]].uninformative and not codings[ids[1]].codes.exists()
    # Reloading resumes at the first description not coded yet.
    page.goto(f"{live_server.url}/coding/pilot/stage-1/")
    expect(panel).to_have_attribute("data-item", str(ids[2]))
    expect(page.locator("#coding-heading")).to_have_text(re.compile("Description 3 of 6"))
    assert violations == []


@pytest.fixture
def blank_codebook_stage(loaded_study):
    """A coding stage with no codes yet, its coder, and a second coder who has coded
    the first two descriptions: the ids of the descriptions."""
    stage = code_first_stage(loaded_study)
    user = make_coder("coder", loaded_study)
    user.set_password("pw-for-tests-only")
    user.save()
    ids = coded_descriptions(stage)
    other = make_coder("other", loaded_study)
    coder = coder_join(study=loaded_study, user=other)
    for judgement in Judgement.objects.filter(pk__in=ids[:2]):
        coding_save(coder=coder, judgement=judgement, codes=[], uninformative=True, user=other)
    return ids


def test_the_codebook_stays_fresh_and_the_page_ends_all_coded(
    browser, live_server, blank_codebook_stage
):
    ids = blank_codebook_stage
    page = browser.new_context(viewport=DESKTOP).new_page()
    _log_in(page, live_server, "/coding/pilot/stage-1/")
    panel = page.locator("#coding-panel")
    codebook = page.locator("#codebook")
    expect(panel).to_have_attribute("data-item", str(ids[0]))
    # Blind coding: no source, no generation settings, no group, no source filter.
    expect(page.locator("[data-blind]")).to_contain_text("Blind coding")
    expect(panel.locator("[data-source]")).to_have_count(0)
    expect(page.locator("select[name=source]")).to_have_count(0)
    expect(codebook).to_contain_text("No codes yet")

    page.locator("#code-slug").fill("lost_context")
    page.locator("#code-label").fill("Lost the context")
    page.locator("#code-definition").fill("Ignores what the client said.")
    page.get_by_role("button", name="Add the code").click()
    expect(page.locator("#code-add-status")).to_contain_text("Added “Lost the context” (key 1)")
    # In place: the codebook list, the code filter and the coding form.
    expect(codebook).not_to_contain_text("No codes yet")
    expect(codebook).to_contain_text("Lost the context lost_context")
    expect(page.locator("#code-filter option[value=lost_context]")).to_have_count(1)
    expect(panel.locator("input[data-code]")).to_be_checked()

    page.get_by_role("button", name="Save and next").click()
    expect(panel).to_have_attribute("data-item", str(ids[1]))
    expect(page.locator("#code-add-status")).to_be_empty()  # the notice was for the last one
    expect(page.locator("#code-add-item")).to_have_value(str(ids[1]))

    page.locator("h1").click()
    for pk in ids[1:]:
        expect(panel).to_have_attribute("data-item", str(pk))
        page.keyboard.press("1")
        page.keyboard.press("Enter")
    # After the last: no wrap to description 1, but what is left to the other coder.
    expect(page.locator("#coding-heading")).to_have_text("All coded")
    expect(panel).not_to_have_attribute("data-item", re.compile("."))
    expect(panel).to_contain_text(f"You have coded all {len(ids)} descriptions.")
    expect(panel).to_contain_text(
        f"other has {len(ids) - 2} of this stage's descriptions left to code."
    )
    assert page.url.endswith("?done=1")
    assert DescriptionCoding.objects.filter(coder__user__username="coder").count() == len(ids)
    page.get_by_role("link", name="Read your codes again from the first description").click()
    expect(panel).to_have_attribute("data-item", str(ids[0]))
    expect(panel.locator("input[data-code]")).to_be_checked()
