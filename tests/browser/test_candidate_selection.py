"""The candidate selection page in a real browser: started from the form, the list of
selections follows the worker's progress by itself, and the form keeps what the
researcher was typing meanwhile."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from analysis.candidates.selection import candidate_selection_run
from analysis.models import CandidateSelection
from studies.services import study_create
from tests.analysis.candidates.test_selection import import_pool, pool_doc
from tests.browser.test_annotation_flow import DESKTOP

PASSWORD = "pw-for-tests-only"


@pytest.fixture
def pooled(transactional_db):
    study = study_create(
        slug="pooled",
        title="Pooled",
        stages=[("Selected", timedelta(0)), ("Later", timedelta(0))],
        groups=["Layperson"],
    )
    import_pool(study, pool_doc(ids=("d1", "d2", "d3")))
    get_user_model().objects.create_superuser("researcher", password=PASSWORD)
    return study


def test_the_list_follows_a_selection_and_the_form_keeps_its_input(browser, live_server, pooled):
    page = browser.new_context(viewport=DESKTOP).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/admin/login/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/admin/analysis/candidateselection/study/{pooled.pk}/")
    expect(page.get_by_text("18 candidates in 3 contexts.")).to_be_visible()
    page.get_by_label("Stage").select_option(value=str(pooled.stages.get(name="Selected").pk))
    page.get_by_label("Clusters per context").fill("2")
    # No worker here: the selection waits, queued, and the list says so.
    page.get_by_role("button", name="Select candidates").click()
    expect(page.locator("#selections-list")).to_contain_text("Queued")
    page.get_by_label("Clusters per context").fill("5")  # typing while it waits
    selection = CandidateSelection.objects.get()
    candidate_selection_run(selection_id=selection.pk)  # what the worker would do
    expect(page.locator("#selections-list")).to_contain_text("Done", timeout=15_000)
    expect(page.get_by_label("Clusters per context")).to_have_value("5")
    page.get_by_role("link", name="Reload the page").click()
    expect(page.get_by_text("Diversity of selection")).to_be_visible()
    expect(page.locator(".diversity-table")).to_contain_text("Self-BLEU-2")
    assert not errors, errors
