"""A study's Roles page in the admin: what each role sees there, granting, changing and
withdrawing (each refusal with the service's message and nothing written), and the
audit list."""

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from studies.models import Role, StudyRole, StudyRoleEvent
from studies.services.roles import LAST_OWNER, study_created_by, study_role_grant
from tests.factories import StaffMemberFactory, StaffUserFactory, StudyFactory, user_with_role

pytestmark = pytest.mark.django_db


class _Table(HTMLParser):
    """The text of each cell of the table ``table_id``, row by row (body rows only)."""

    def __init__(self, table_id: str):
        super().__init__()
        self.table_id, self.inside, self.in_body = table_id, False, False
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.rows.append([])
        elif self.in_body and tag == "td":
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table" and self.inside:
            self.inside = self.in_body = False
        elif tag == "td" and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def table(response, table_id: str) -> list[list[str]]:
    parser = _Table(table_id)
    parser.feed(response.content.decode())
    return parser.rows


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def url_of(study) -> str:
    return reverse("admin:studies_study_roles", args=[study.pk])


def written(study) -> tuple[list, list]:
    """Everything the page could write: the study's roles and its audit list."""
    return (
        list(StudyRole.objects.filter(study=study).values_list("user__username", "role")),
        list(StudyRoleEvent.objects.filter(study=study).values_list("pk", flat=True)),
    )


@pytest.fixture
def study():
    return StudyFactory(title="Reflections 2025")


@pytest.fixture
def owner(study):
    olga = StaffMemberFactory(username="olga", first_name="Olga", email="olga@example.org")
    study_created_by(study=study, user=olga)
    return type(olga).objects.get(pk=olga.pk)


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def test_the_study_page_links_its_roles_page(client, study):
    client.force_login(StaffUserFactory())
    response = client.get(reverse("admin:studies_study_change", args=[study.pk]))
    assert f'href="{url_of(study)}"' in response.content.decode()


def test_an_owner_sees_the_holders_and_the_grant_form(owner_client, owner, study):
    response = owner_client.get(url_of(study))
    assert response.status_code == 200
    assert table(response, "role-holders")[0][:5] == [
        "olga",
        "Olga",
        "olga@example.org",
        "Owner",
        "olga",
    ]
    page = response.content.decode()
    assert 'id="grant-role"' in page and 'class="role-withdraw"' in page
    # Each role is offered with what it allows, from the table of roles.
    assert "<strong>Coder</strong>: may code descriptions</label>" in page
    assert (
        "<strong>Analyst</strong>: may see the study, its progress and its dashboard; may "
        "read judgements, descriptions and row-level exports; may run and download analyses"
    ) in page


def test_an_owner_grants_by_username_and_by_email_address(owner_client, owner, study):
    alex = StaffMemberFactory(username="alex")
    kim = StaffMemberFactory(username="kim", email="Kim@Example.org")
    response = owner_client.post(
        url_of(study),
        {"action": "grant", "account": "alex", "role": "collaborator", "note": "amendment 2"},
        follow=True,
    )
    assert messages_of(response) == ["Role granted: alex is now collaborator of Reflections 2025."]
    response = owner_client.post(
        url_of(study),
        {"action": "grant", "account": "kim@example.org", "role": "coder"},
        follow=True,
    )
    assert messages_of(response) == ["Role granted: kim is now coder of Reflections 2025."]
    assert StudyRole.objects.get(study=study, user=alex).role == Role.COLLABORATOR
    assert StudyRole.objects.get(study=study, user=kim).granted_by == owner
    assert [row[:4] for row in table(response, "role-holders")] == [
        ["olga", "Olga", "olga@example.org", "Owner"],
        ["alex", "–", "–", "Collaborator"],
        ["kim", "–", "Kim@Example.org", "Coder"],
    ]


def test_an_owner_changes_a_role(owner_client, owner, study):
    alex = user_with_role(study, "coder", username="alex")
    response = owner_client.post(
        url_of(study), {"action": "change", "user": alex.pk, "role": "analyst"}, follow=True
    )
    assert messages_of(response) == [
        "Role changed: alex is now analyst of Reflections 2025 (was coder)."
    ]
    assert StudyRole.objects.get(study=study, user=alex).role == Role.ANALYST


def test_withdrawing_asks_first_and_then_withdraws(owner_client, owner, study):
    alex = user_with_role(study, "coder", username="alex")
    before = written(study)
    response = owner_client.post(url_of(study), {"action": "withdraw", "user": alex.pk})
    assert response.status_code == 200
    assert response.context["title"] == "Withdraw the role of alex in Reflections 2025?"
    assert 'value="Yes, withdraw the role"' in response.content.decode()
    assert written(study) == before  # only asked
    response = owner_client.post(
        url_of(study), {"action": "withdraw", "user": alex.pk, "confirmed": "1"}, follow=True
    )
    assert messages_of(response) == [
        "Role withdrawn: alex no longer has a role in Reflections 2025 (was coder)."
    ]
    assert not StudyRole.objects.filter(study=study, user=alex).exists()


def test_the_audit_list_shows_every_change_newest_first(owner_client, owner, study):
    alex = StaffMemberFactory(username="alex")
    owner_client.post(
        url_of(study), {"action": "grant", "account": "alex", "role": "coder", "note": "ethics ok"}
    )
    owner_client.post(url_of(study), {"action": "change", "user": alex.pk, "role": "viewer"})
    owner_client.post(url_of(study), {"action": "withdraw", "user": alex.pk, "confirmed": "1"})
    rows = table(owner_client.get(url_of(study)), "role-events")
    assert [row[1:] for row in rows] == [
        ["alex", "Viewer", "none (withdrawn)", "olga", ""],
        ["alex", "Coder", "Viewer", "olga", ""],
        ["alex", "none", "Coder", "olga", "ethics ok"],
        ["olga", "none", "Owner", "olga", "created the study"],
    ]
    assert all(row[0] for row in rows)  # when


def test_the_audit_list_names_the_system_for_the_migrations_grants(owner_client, owner, study):
    alex = StaffMemberFactory(username="alex")
    study_role_grant(study=study, user=alex, role="viewer", by=None, note="from permissions")
    response = owner_client.get(url_of(study))
    assert table(response, "role-events")[0][1:] == [
        "alex",
        "none",
        "Viewer",
        "the system",
        "from permissions",
    ]
    assert table(response, "role-holders")[0][:5] == [
        "olga",
        "Olga",
        "olga@example.org",
        "Owner",
        "olga",
    ]
    assert table(response, "role-holders")[1][4] == "the system"


@pytest.mark.parametrize("role", ["collaborator", "analyst", "viewer"])
def test_other_roles_that_see_the_study_read_the_lists_only(client, owner, study, role):
    user = user_with_role(study, role, username="reader")
    client.force_login(user)
    response = client.get(url_of(study))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="grant-role"' not in page
    assert 'class="role-change"' not in page and 'class="role-withdraw"' not in page
    assert [row[3] for row in table(response, "role-holders")] == ["Owner", role.capitalize()]
    assert table(response, "role-events")  # the audit list too
    assert "Only the study's owners grant and withdraw roles." in page
    # Posting anyway is refused, and writes nothing.
    StaffMemberFactory(username="alex")
    before = written(study)
    for data in (
        {"action": "grant", "account": "alex", "role": "owner"},
        {"action": "change", "user": user.pk, "role": "owner"},
        {"action": "withdraw", "user": owner.pk, "confirmed": "1"},
    ):
        response = client.post(url_of(study), data)
        assert response.status_code == 403
        assert response.context["reason"] == (
            f"Your role in this study ({role}) does not allow this: it takes a role that may "
            "grant and withdraw roles, purge personal data and delete the study."
        )
    assert written(study) == before


def test_a_coder_is_refused_the_roles_page(client, owner, study):
    client.force_login(user_with_role(study, "coder"))
    response = client.get(url_of(study))
    assert response.status_code == 403
    assert response.context["reason"] == (
        "Your role in this study (coder) does not allow this: it takes a role that may see "
        "the study, its progress and its dashboard."
    )


def test_without_a_role_in_the_study_the_page_is_not_found(client, owner, study):
    other = StudyFactory()
    client.force_login(user_with_role(other, "owner"))  # an owner elsewhere
    assert client.get(url_of(study)).status_code == 404
    before = written(study)
    response = client.post(url_of(study), {"action": "withdraw", "user": owner.pk, "confirmed": 1})
    assert response.status_code == 404
    assert written(study) == before
    # the same answer as for a study that does not exist
    assert (
        client.get(reverse("admin:studies_study_roles", args=[other.pk + 1000])).status_code == 404
    )


def test_a_superuser_makes_someone_owner_of_a_study_without_one(client, study):
    admin = StaffUserFactory(username="admin")
    StaffMemberFactory(username="olga")
    client.force_login(admin)
    response = client.get(url_of(study))
    assert 'id="no-owner"' in response.content.decode()
    response = client.post(
        url_of(study), {"action": "grant", "account": "olga", "role": "owner"}, follow=True
    )
    assert messages_of(response) == ["Role granted: olga is now owner of Reflections 2025."]
    assert list(StudyRole.objects.filter(study=study).values_list("user__username", "role")) == [
        ("olga", "owner")
    ]
    assert 'id="no-owner"' not in response.content.decode()
    assert table(response, "role-events")[0][1:5] == ["olga", "none", "Owner", "admin"]


def test_a_study_without_an_owner_says_so_to_its_readers_too(client, study):
    client.force_login(user_with_role(study, "viewer"))
    page = client.get(url_of(study)).content.decode()
    assert "This study has no owner, so only superusers may grant roles" in page
    assert "Make someone its owner below." not in page


# --- refusals: the service's message, and nothing written --------------------------------


def _grant_refused(client, study, data) -> str:
    before = written(study)
    response = client.post(url_of(study), {"action": "grant", **data})
    assert response.status_code == 200  # the form again, with the refusal
    assert written(study) == before
    assert (
        'class="errornote"' in response.content.decode() or "errorlist" in response.content.decode()
    )
    errors = response.context["grant_form"].errors
    return " ".join(message for messages in errors.values() for message in messages)


def test_an_unknown_account_is_refused(owner_client, study):
    message = _grant_refused(owner_client, study, {"account": "nobody", "role": "viewer"})
    assert message == (
        "No active staff account has the username or e-mail address 'nobody'. An "
        "administrator creates accounts (and marks them staff) in Users."
    )


def test_an_account_that_is_not_staff_is_refused(owner_client, study):
    StaffMemberFactory(username="pat", is_staff=False)
    message = _grant_refused(owner_client, study, {"account": "pat", "role": "viewer"})
    assert message.startswith("No active staff account has the username or e-mail address 'pat'.")


def test_a_holder_no_longer_staff_cannot_be_given_another_role(owner_client, study):
    pat = user_with_role(study, "viewer", username="pat")
    type(pat).objects.filter(pk=pat.pk).update(is_staff=False)
    before = written(study)
    response = owner_client.post(
        url_of(study), {"action": "change", "user": pat.pk, "role": "analyst"}, follow=True
    )
    assert messages_of(response) == [
        "Nothing was changed: pat is not an active staff account, so could not sign in to use a role: an "
        "administrator marks the account active and staff first."
    ]
    assert written(study) == before


def test_the_same_role_again_is_refused(owner_client, study):
    alex = user_with_role(study, "coder", username="alex")
    message = _grant_refused(owner_client, study, {"account": "alex", "role": "coder"})
    assert message == "alex is already coder of this study."
    before = written(study)
    response = owner_client.post(
        url_of(study), {"action": "change", "user": alex.pk, "role": "coder"}, follow=True
    )
    assert messages_of(response) == ["Nothing was changed: alex is already coder of this study."]
    assert written(study) == before


def test_the_last_owner_stays_owner(owner_client, owner, study):
    last_owner = LAST_OWNER.format(username="olga")
    assert last_owner.startswith("A study keeps at least one owner")
    before = written(study)
    message = _grant_refused(owner_client, study, {"account": "olga", "role": "viewer"})
    assert message == last_owner
    for data in (
        {"action": "change", "user": owner.pk, "role": "collaborator"},
        {"action": "withdraw", "user": owner.pk, "confirmed": "1"},
    ):
        response = owner_client.post(url_of(study), data, follow=True)
        assert messages_of(response) == [f"Nothing was changed: {last_owner}"]
    assert written(study) == before


def test_changing_or_withdrawing_an_account_without_a_role_here_is_refused(owner_client, study):
    stranger = user_with_role(StudyFactory(), "viewer")
    before = written(study)
    for data in (
        {"action": "change", "user": stranger.pk, "role": "owner"},
        {"action": "withdraw", "user": stranger.pk},
        {"action": "withdraw", "user": stranger.pk, "confirmed": "1"},
    ):
        response = owner_client.post(url_of(study), data, follow=True)
        assert messages_of(response) == [
            "Nothing was changed: that account has no role in this study."
        ]
    response = owner_client.post(url_of(study), {"action": "change", "user": "x"}, follow=True)
    assert messages_of(response) == ["Nothing was changed: choose one of the roles."]
    assert written(study) == before
