"""Sharing a study in a real browser: a researcher who owns a study (not a superuser)
signs in to the admin, opens the study and its Roles page, makes one colleague a
collaborator and another a coder by username, sees both in the list and the audit list,
and withdraws one of them again (after the confirmation step)."""

import re

import pytest
from playwright.sync_api import expect

from studies.models import StudyRole
from studies.services.roles import study_created_by
from tests.factories import StaffMemberFactory

pytestmark = pytest.mark.django_db(transaction=True)

DESKTOP = {"width": 1280, "height": 900}
PASSWORD = "pw-for-tests-only"  # StaffMemberFactory's


@pytest.fixture
def owner(study):
    olga = StaffMemberFactory(username="olga", first_name="Olga", last_name="Owen")
    study_created_by(study=study, user=olga)
    return olga


def holder_row(page, username: str):
    return page.locator(f"#role-holders tr[data-username='{username}']")


def grant(page, username: str, role: str) -> None:
    page.get_by_label("Account").fill(username)
    page.get_by_role("radio", name=re.compile(f"^{role}:")).check()
    page.get_by_role("button", name="Grant the role").click()
    expect(page.locator(".messagelist")).to_contain_text(
        f"Role granted: {username} is now {role.lower()} of Pilot study."
    )


def test_an_owner_shares_the_study_with_a_collaborator_and_a_coder(
    browser, live_server, study, owner
):
    StaffMemberFactory(username="sam", first_name="Sam", last_name="Cole", email="sam@uni.example")
    StaffMemberFactory(username="cora", email="cora@uni.example")
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/admin/")
    page.get_by_label("Username").fill("olga")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    page.locator("#studies-study").get_by_role("link", name="Studies").click()
    page.get_by_role("link", name="Pilot study").click()
    page.locator(".object-tools").get_by_role("link", name="Roles").click()
    expect(page.get_by_role("heading", name="Roles in Pilot study")).to_be_visible()
    expect(holder_row(page, "olga").locator(".role")).to_have_text("Owner")

    grant(page, "sam", "Collaborator")
    grant(page, "cora", "Coder")
    expect(holder_row(page, "sam")).to_contain_text("sam@uni.example")
    expect(holder_row(page, "sam").locator(".role")).to_have_text("Collaborator")
    expect(holder_row(page, "cora").locator(".role")).to_have_text("Coder")
    events = page.locator("#role-events tbody tr")
    expect(events.nth(0)).to_contain_text(re.compile(r"cora\s+none\s+Coder\s+olga"))
    expect(events.nth(1)).to_contain_text(re.compile(r"sam\s+none\s+Collaborator\s+olga"))

    page.get_by_role("button", name="Withdraw the role of cora").click()
    expect(page.get_by_text("cora is coder of Pilot study.")).to_be_visible()
    page.get_by_role("button", name="Yes, withdraw the role").click()
    expect(page.locator(".messagelist")).to_contain_text(
        "Role withdrawn: cora no longer has a role in Pilot study (was coder)."
    )
    expect(holder_row(page, "cora")).to_have_count(0)
    expect(events.nth(0)).to_contain_text(re.compile(r"cora\s+Coder\s+none \(withdrawn\)\s+olga"))
    assert dict(StudyRole.objects.filter(study=study).values_list("user__username", "role")) == {
        "olga": "owner",
        "sam": "collaborator",
    }
