"""The study page in a real browser at 1280 pixels: nothing wider than the screen (the
stages with their codes and join links), the object tools clear of the title, and the
join links on the address the page was asked at (the live server's port, not 8000); the
annotators list with every column on the screen."""

import pytest
from django.utils import timezone

from studies.models import Annotator
from studies.services import annotators_create
from tests.factories import StaffUserFactory

DESKTOP = {"width": 1280, "height": 900}
PASSWORD = "pw-for-tests-only"  # StaffUserFactory's


@pytest.fixture
def researcher(db):
    return StaffUserFactory(username="layout-researcher")


@pytest.fixture
def study_page(browser, live_server, loaded_study, researcher):
    page = browser.new_page(viewport=DESKTOP)
    url = f"/admin/studies/study/{loaded_study.pk}/change/"
    page.goto(f"{live_server.url}/admin/login/?next={url}")
    page.get_by_label("Username").fill(researcher.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#stages-group")
    yield page
    page.close()


def box(page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not shown"
    return found


def overlaps(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_the_study_page_fits_1280_pixels(study_page, loaded_study):
    page = study_page
    assert page.evaluate("document.documentElement.scrollWidth") <= DESKTOP["width"]
    stages = box(page, "#stages-group")
    assert stages["x"] + stages["width"] <= DESKTOP["width"]
    # Every stage's codes and join links are on the screen, not off to the right.
    for selector in (
        "input[name$='-completion_code']",
        "input[name$='-partial_completion_code']",
        "input[name$='-screened_out_code']",
        "input[name$='-platform_task_ids']",
        ".join-links input",
    ):
        # (not the hidden template of a new stage)
        fields = page.locator(f"#stages-group .inline-related:not(.empty-form) {selector}")
        assert fields.count() >= loaded_study.stages.count()
        for i in range(fields.count()):
            field = fields.nth(i).bounding_box()
            assert field["x"] >= 0 and field["x"] + field["width"] <= DESKTOP["width"], selector


def test_the_object_tools_leave_the_title_readable(study_page):
    page = study_page
    tools = [page.locator(".object-tools li").nth(i) for i in range(6)]
    assert [t.inner_text().strip().lower() for t in tools[:2]] == [
        "dashboard",
        "import materials",
    ]
    for heading in ("#content h1", "#content h2"):
        title = box(page, heading)
        for tool in tools:
            assert not overlaps(title, tool.bounding_box()), heading
    for tool in tools:
        right = tool.bounding_box()
        assert right["x"] + right["width"] <= DESKTOP["width"]


def test_the_join_links_name_the_address_the_page_was_asked_at(study_page, live_server):
    links = study_page.locator("#stages-group .join-links input")
    values = [links.nth(i).input_value() for i in range(links.count())]
    assert values and all(v.startswith(f"{live_server.url}/s/pilot/join/") for v in values)


def test_the_annotators_list_fits_1280_pixels(browser, live_server, loaded_study, researcher):
    group = loaded_study.groups.get(name="Layperson")
    for annotator in annotators_create(group=group, count=3):
        Annotator.objects.filter(pk=annotator.pk).update(last_seen_at=timezone.now())
    page = browser.new_page(viewport=DESKTOP)
    url = "/admin/studies/annotator/"
    page.goto(f"{live_server.url}/admin/login/?next={url}")
    page.get_by_label("Username").fill(researcher.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#result_list")
    assert page.evaluate("document.documentElement.scrollWidth") <= DESKTOP["width"]
    headers = page.locator("#result_list thead th")
    names = [headers.nth(i).inner_text().strip().lower() for i in range(headers.count())]
    for column in ("created", "last seen", "active"):
        assert column in names, names
    # Every column, the last included, is on the screen beside the filters.
    filters = box(page, "#changelist-filter")
    for i in range(headers.count()):
        cell = headers.nth(i).bounding_box()
        assert cell["x"] + cell["width"] <= DESKTOP["width"], names[i]
        assert not overlaps(cell, filters), names[i]
    page.close()
