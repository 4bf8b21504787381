"""A scheme from coding in a real browser: a researcher turns codes into the categories
of a stage, which then stays closed to annotators (the home page says why) until the
researcher marks its scheme final; the stage then offers those categories only (and the
one catching the attention check), not the study's defaults."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from studies.models import Stage
from studies.services.coding import code_create
from tests.browser.test_annotation_flow import DESKTOP, _expect_item, _heading

PASSWORD = "pw-for-tests-only"


@pytest.fixture
def researcher(open_study):
    code_create(
        study=open_study, slug="lost_context", label="Lost the context", definition="Forgets."
    )
    code_create(study=open_study, slug="parrots", label="Parrots the client", definition="Echo.")
    return get_user_model().objects.create_superuser("researcher", password=PASSWORD)


def _admin(browser, live_server):
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/admin/login/?next=/admin/studies/code/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    return page


def _run_action(page, label: str) -> None:
    page.locator("select[name=action]").select_option(label=label)
    page.locator("button[name=index]").click()


def test_a_stage_opens_with_the_coded_categories_once_its_scheme_is_final(
    browser, live_server, researcher, open_study, invitation_url
):
    admin = _admin(browser, live_server)
    admin.locator("#action-toggle").check()
    _run_action(admin, "Make the selected codes error categories…")
    admin.get_by_label("Offer them in").select_option(label="GPT-2 stage")
    admin.get_by_role("button", name="Make error categories").click()
    expect(admin.locator(".messagelist")).to_contain_text(
        "GPT-2 stage offers them, and stays closed to annotators until you mark its error "
        "scheme final"
    )
    expect(admin.locator("#content")).to_contain_text("GPT-2 stage is closed to annotators")

    annotator = browser.new_context(viewport=DESKTOP).new_page()
    annotator.goto(invitation_url)
    annotator.locator("label[for=id_agree]").click()
    annotator.get_by_role("button", name="I agree and want to take part").click()
    annotator.get_by_role("button", name="I have read the tutorial — start").click()
    expect(annotator.locator(".next-step")).to_contain_text(
        "Stage 1 opens once the researchers have finalised its error categories."
    )
    expect(annotator.get_by_role("button", name="Start a batch")).to_have_count(0)
    expect(annotator.locator(".stages")).to_contain_text(
        "opens once its error categories are final"
    )

    admin.goto(f"{live_server.url}/admin/studies/stage/")
    expect(admin.locator("#result_list")).to_contain_text("from coding: not final")
    admin.locator("tr", has_text="GPT-2 stage").locator("input.action-select").check()
    _run_action(
        admin, "Mark the error scheme final (opens a stage whose categories come from coding)"
    )
    expect(admin.locator(".messagelist")).to_contain_text("The error scheme of GPT-2 stage")
    expect(admin.locator("#result_list")).to_contain_text(re.compile(r"final since .*researcher"))
    stage = Stage.objects.get(study=open_study, position=1)
    assert stage.scheme_final_by.username == "researcher"

    annotator.reload()
    annotator.get_by_role("button", name="Start a batch").click()
    expect(_heading(annotator)).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    n = int(_heading(annotator).inner_text().rsplit(" ", 1)[1])
    _expect_item(annotator, 1, n)
    offered = annotator.locator("#item-panel .q-categories label.category strong")
    catching = open_study.categories.get(catches_attention_check=True).label
    # The study's display order: its default categories come before the coded ones.
    expect(offered).to_have_text([catching, "Lost the context", "Parrots the client"])
