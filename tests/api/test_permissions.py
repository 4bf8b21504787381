"""Who may call what: the permission matrix over every endpoint, per role and per
study, and JSON 404s.

Each endpoint is called by every kind of caller: anonymous callers and annotators,
non-staff, staff with every global permission but no role, each role of study A (on
study A, and on study B where it has none) and a superuser. Refused calls must leave
the database as it was, so every refusal also compares a snapshot of the rows.
"""

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from analysis.models import AnalysisRun
from studies.api_framework import ROLE_NEEDED
from studies.errors import ErrorCode
from studies.models import Assignment, DialogueContext, Reflection, Role, Study
from studies.permissions import Capability
from tests.api.conftest import token_client
from tests.conftest import materials_doc
from tests.studies.roles.other_study import leaked, make_other_study, rows_snapshot
from tests.studies.roles.test_roles import EXPECTED
from tests.studies.services.test_opening import TUTORIAL


@dataclass(frozen=True)
class Endpoint:
    method: str
    url: Callable[[Study], str]
    may: Capability
    body: Callable[[Study], dict] | None = None
    ok: int = 200
    content_type: str = "application/json"
    #: Makes ``study`` one the endpoint serves (called before the calls).
    prepare: Callable[[Study], None] | None = None

    def call(self, client, study: Study, url: str | None = None):
        url = url or self.url(study)
        if self.method == "get":
            return client.get(url)
        body = self.body(study) if self.body else {}
        return client.post(url, body, content_type="application/json")


def _submitted(study: Study) -> int:
    return (
        Assignment.objects.filter(stage__study=study, status=Assignment.Status.SUBMITTED)
        .order_by("pk")
        .first()
        .pk
    )


def _run(study: Study) -> int:
    return AnalysisRun.objects.get_or_create(study=study, trigger="command")[0].pk


def _new_material(study: Study) -> dict:
    return {"contexts": materials_doc(n_contexts=4)["contexts"][3:]}  # dlg-4 is new


def _open_ready(study: Study) -> None:
    """A study the open endpoint accepts (so that allowed roles get a 200)."""
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT, **TUTORIAL)


C = Capability
#: Every endpoint but the list of studies, with what it takes.
ENDPOINTS = {
    "study detail": Endpoint("get", lambda s: f"/api/studies/{s.slug}/", C.SEE),
    "stages": Endpoint("get", lambda s: f"/api/studies/{s.slug}/stages/", C.SEE),
    "groups": Endpoint("get", lambda s: f"/api/studies/{s.slug}/groups/", C.SEE),
    "progress": Endpoint("get", lambda s: f"/api/studies/{s.slug}/progress/", C.SEE),
    "contexts": Endpoint("get", lambda s: f"/api/studies/{s.slug}/contexts/", C.SEE),
    "batches": Endpoint("get", lambda s: f"/api/studies/{s.slug}/batches/", C.SEE),
    "assignments": Endpoint("get", lambda s: f"/api/studies/{s.slug}/assignments/", C.READ_ROWS),
    "judgements": Endpoint("get", lambda s: f"/api/studies/{s.slug}/judgements/", C.READ_ROWS),
    "export": Endpoint(
        "get",
        lambda s: f"/api/studies/{s.slug}/export/?format=full",
        C.READ_ROWS,
        content_type="text/csv; charset=utf-8",
    ),
    "item export": Endpoint(
        "get",
        lambda s: f"/api/studies/{s.slug}/items/",
        C.READ_ROWS,
        content_type="text/csv; charset=utf-8",
    ),
    "analysis runs": Endpoint("get", lambda s: f"/api/studies/{s.slug}/analysis-runs/", C.ANALYSE),
    "analysis run": Endpoint("get", lambda s: f"/api/analysis-runs/{_run(s)}/", C.ANALYSE),
    "start analysis": Endpoint(
        "post",
        lambda s: f"/api/studies/{s.slug}/analysis-runs/",
        C.ANALYSE,
        lambda s: {"bootstrap_resamples": 0},
        ok=202,
    ),
    "import materials": Endpoint(
        "post", lambda s: f"/api/studies/{s.slug}/materials/", C.CONFIGURE, _new_material, ok=201
    ),
    "open study": Endpoint(
        "post", lambda s: f"/api/studies/{s.slug}/open/", C.CONFIGURE, prepare=_open_ready
    ),
    "reject assignment": Endpoint(
        "post",
        lambda s: f"/api/assignments/{_submitted(s)}/reject/",
        C.MANAGE_ANNOTATORS,
        lambda s: {"reason": "Copied answers."},
    ),
}
WRITES = {name for name, endpoint in ENDPOINTS.items() if endpoint.method == "post"}
ROLES = [role.value for role in Role]


def snapshot() -> tuple:
    return (
        AnalysisRun.objects.filter(trigger=AnalysisRun.Trigger.MANUAL).count(),
        DialogueContext.objects.count(),
        Reflection.objects.count(),
        sorted(Assignment.objects.values_list("pk", "status")),
        sorted(Study.objects.values_list("pk", "status")),
    )


def assert_error(response, status: int, code: ErrorCode, who: str = "") -> dict:
    """An error in the API's format with ``code`` and a message a person can read."""
    assert response.status_code == status, (who, response.content)
    assert response["Content-Type"] == "application/json", who
    body = response.json()
    assert body["code"] == code, (who, body)
    assert isinstance(body["message"], str) and body["message"], who
    return body


def refusal(role: str, capability: Capability) -> str:
    return (
        f"Your role in this study ({role}) does not allow this: it takes a role that may "
        f"{capability.value}."
    )


@pytest.mark.parametrize("name", ENDPOINTS)
def test_callers_without_a_role_are_refused(
    name, small_study, anonymous, annotator_client, non_staff, staff_without_roles, api
):
    """Anonymous callers and annotators (a session through their invitation link, no
    user) get 401 with the token challenge; users who are not staff, and staff with
    every global permission of studies and analysis but no role, 403 saying who may use
    the API; superusers are served."""
    endpoint = ENDPOINTS[name]
    if endpoint.prepare:
        endpoint.prepare(small_study)
    url = endpoint.url(small_study)
    before = snapshot()

    response = endpoint.call(anonymous, small_study, url)
    body = assert_error(response, 401, ErrorCode.NOT_AUTHENTICATED, "anonymous")
    assert body == {
        "message": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }
    assert response["WWW-Authenticate"] == "Token"

    assert_error(
        endpoint.call(annotator_client, small_study, url),
        401,
        ErrorCode.NOT_AUTHENTICATED,
        "annotator",
    )
    for who, client in (("non-staff", non_staff), ("staff without roles", staff_without_roles)):
        body = assert_error(
            endpoint.call(client, small_study, url), 403, ErrorCode.PERMISSION_DENIED, who
        )
        assert body["message"] == ROLE_NEEDED

    assert snapshot() == before, "a refused call wrote something"

    response = endpoint.call(api, small_study, url)
    assert response.status_code == endpoint.ok, response.content
    assert response["Content-Type"] == endpoint.content_type
    assert (snapshot() != before) == (name in WRITES)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", ENDPOINTS)
def test_each_role_may_what_it_allows_in_its_own_study_only(name, role, small_study, role_client):
    """A role in study A: served where it allows the endpoint's capability, else a 403
    saying which role it takes; for study B, where it has no role, a 404 as for no such
    study (or object), however the role stands in A. Refusals write nothing."""
    endpoint = ENDPOINTS[name]
    other = Study.objects.get(pk=make_other_study().study)
    if endpoint.prepare:
        endpoint.prepare(small_study)
    client = role_client(small_study, role)

    url = endpoint.url(other)
    before = rows_snapshot()
    response = endpoint.call(client, other, url)
    body = assert_error(response, 404, ErrorCode.NOT_FOUND, f"{role} on study B")
    assert not leaked(response.content.decode()), body
    if other.slug in url:  # the same answer as for a study that does not exist
        unknown = endpoint.call(client, other, url.replace(other.slug, "no-such-study"))
        assert body == {**unknown.json(), "message": body["message"]}
        assert body["message"] == unknown.json()["message"].replace("no-such-study", other.slug)
    assert rows_snapshot() == before, "a call on study B wrote something"

    url = endpoint.url(small_study)
    before = snapshot()
    response = endpoint.call(client, small_study, url)
    if endpoint.may in EXPECTED[role]:
        assert response.status_code == endpoint.ok, (role, response.content)
        assert response["Content-Type"] == endpoint.content_type
        assert (snapshot() != before) == (name in WRITES)
    else:
        body = assert_error(response, 403, ErrorCode.PERMISSION_DENIED, role)
        assert body["message"] == refusal(role, endpoint.may)
        assert snapshot() == before, "a refused call wrote something"


@pytest.mark.parametrize("role", ROLES)
def test_the_study_list_holds_the_studies_a_role_may_see(role, small_study, role_client):
    make_other_study()
    response = role_client(small_study, role).get("/api/studies/")
    assert response.status_code == 200
    slugs = [study["slug"] for study in response.json()["results"]]
    assert slugs == (["pilot"] if Capability.SEE in EXPECTED[role] else [])


def test_superusers_list_every_study(api, small_study):
    make_other_study()
    slugs = {study["slug"] for study in api.get("/api/studies/").json()["results"]}
    assert slugs == {"pilot", Study.objects.exclude(pk=small_study.pk).get().slug}


def test_ids_of_study_b_under_study_a_select_nothing(small_study, role_client):
    """Filters by id take the study of the URL: study B's stage and group ids under
    study A's slug select no row of either."""
    b = make_other_study()
    client = role_client(small_study, Role.OWNER)
    for path in ("assignments", "judgements", "batches"):
        for key, value in (("stage", b.stage), ("group", b.group)):
            if path == "batches" and key == "group":
                continue
            response = client.get(f"/api/studies/pilot/{path}/?{key}={value}")
            assert response.status_code == 200, response.content
            assert response.json()["results"] == [], (path, key)


def test_rejecting_study_bs_assignment_is_a_404_and_writes_nothing(small_study, role_client):
    b = make_other_study()
    clients = [role_client(small_study, role) for role in (Role.OWNER, Role.COLLABORATOR)]
    before = rows_snapshot()
    for client in clients:
        response = client.post(
            f"/api/assignments/{b.assignment}/reject/", {"reason": "x"}, format="json"
        )
        body = assert_error(response, 404, ErrorCode.NOT_FOUND)
        assert body["message"] == f"No assignment {b.assignment}."
    assert rows_snapshot() == before
    assert Assignment.objects.get(pk=b.assignment).status == Assignment.Status.SUBMITTED


def test_a_token_acts_as_its_user(small_study):
    """The same account through a token and through a session gets the same answers:
    its role's."""
    from django.test import Client

    from tests.factories import user_with_role

    user = user_with_role(small_study, Role.VIEWER)
    session = Client()
    session.force_login(user)
    for client in (token_client(user), session):
        assert client.get("/api/studies/pilot/progress/").status_code == 200
        response = client.get("/api/studies/pilot/judgements/")
        assert response.status_code == 403
        assert response.json()["message"] == refusal("viewer", Capability.READ_ROWS)


def test_a_wrong_token_is_refused_with_401(small_study):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    body = assert_error(client.get("/api/studies/"), 401, ErrorCode.AUTHENTICATION_FAILED)
    assert body == {"message": "Invalid token.", "code": "authentication_failed"}


def test_a_staff_session_from_the_admin_works_too(client, staff, small_study):
    client.force_login(staff)
    assert client.get(f"/api/studies/{small_study.slug}/").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/studies/nope/",
        "/api/studies/nope/stages/",
        "/api/studies/nope/groups/",
        "/api/studies/nope/progress/",
        "/api/studies/nope/contexts/",
        "/api/studies/nope/batches/",
        "/api/studies/nope/assignments/",
        "/api/studies/nope/judgements/",
        "/api/studies/nope/analysis-runs/",
        "/api/analysis-runs/999999/",
        "/api/analysis-runs/99999999999999999999999999/",
        "/api/no-such-endpoint/",
        "/api/",
    ],
)
def test_unknown_ids_and_paths_are_json_404s(url, api, small_study):
    body = assert_error(api.get(url), 404, ErrorCode.NOT_FOUND)
    assert set(body) == {"message", "code"}


@pytest.mark.parametrize(
    "url, body",
    [
        ("/api/studies/nope/materials/", {"contexts": []}),
        ("/api/studies/nope/analysis-runs/", {}),
        ("/api/assignments/999999/reject/", {"reason": "x"}),
        ("/api/assignments/99999999999999999999999999/reject/", {"reason": "x"}),
    ],
)
def test_writes_to_unknown_ids_are_json_404s_and_write_nothing(url, body, api, small_study):
    before = snapshot()
    assert_error(api.post(url, body, format="json"), 404, ErrorCode.NOT_FOUND)
    assert snapshot() == before


def test_unknown_paths_ask_anonymous_callers_to_authenticate_first(anonymous, db):
    assert_error(anonymous.get("/api/no-such-endpoint/"), 401, ErrorCode.NOT_AUTHENTICATED)


def test_a_method_an_endpoint_lacks_is_a_json_405(api, small_study):
    body = assert_error(
        api.delete(f"/api/studies/{small_study.slug}/"), 405, ErrorCode.METHOD_NOT_ALLOWED
    )
    assert body == {"message": 'Method "DELETE" not allowed.', "code": "method_not_allowed"}


def test_the_study_list_needs_a_role_somewhere(small_study, anonymous, staff_without_roles):
    assert_error(anonymous.get("/api/studies/"), 401, ErrorCode.NOT_AUTHENTICATED)
    body = assert_error(staff_without_roles.get("/api/studies/"), 403, ErrorCode.PERMISSION_DENIED)
    assert body["message"] == ROLE_NEEDED
