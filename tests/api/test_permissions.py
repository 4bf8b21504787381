"""Who may call what: the permission matrix over every endpoint, and JSON 404s.

Each endpoint is called by every kind of caller. Refused writes must leave the
database as it was, so every refusal also compares a snapshot of the rows the write
endpoints touch.
"""

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from analysis.models import AnalysisRun
from studies.errors import ErrorCode
from studies.models import Assignment, DialogueContext, Reflection, Study
from tests.conftest import materials_doc


@dataclass(frozen=True)
class Endpoint:
    method: str
    url: Callable[[Study], str]
    body: Callable[[Study], dict] | None = None
    ok: int = 200
    content_type: str = "application/json"

    def call(self, client, study: Study):
        url = self.url(study)
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


ENDPOINTS = {
    "study list": Endpoint("get", lambda s: "/api/studies/"),
    "study detail": Endpoint("get", lambda s: f"/api/studies/{s.slug}/"),
    "stages": Endpoint("get", lambda s: f"/api/studies/{s.slug}/stages/"),
    "groups": Endpoint("get", lambda s: f"/api/studies/{s.slug}/groups/"),
    "progress": Endpoint("get", lambda s: f"/api/studies/{s.slug}/progress/"),
    "contexts": Endpoint("get", lambda s: f"/api/studies/{s.slug}/contexts/"),
    "batches": Endpoint("get", lambda s: f"/api/studies/{s.slug}/batches/"),
    "assignments": Endpoint("get", lambda s: f"/api/studies/{s.slug}/assignments/"),
    "judgements": Endpoint("get", lambda s: f"/api/studies/{s.slug}/judgements/"),
    "export": Endpoint(
        "get",
        lambda s: f"/api/studies/{s.slug}/export/?format=full",
        content_type="text/csv; charset=utf-8",
    ),
    "item export": Endpoint(
        "get",
        lambda s: f"/api/studies/{s.slug}/items/",
        content_type="text/csv; charset=utf-8",
    ),
    "analysis runs": Endpoint("get", lambda s: f"/api/studies/{s.slug}/analysis-runs/"),
    "analysis run": Endpoint("get", lambda s: f"/api/analysis-runs/{_run(s)}/"),
    "start analysis": Endpoint(
        "post",
        lambda s: f"/api/studies/{s.slug}/analysis-runs/",
        lambda s: {"bootstrap_resamples": 0},
        ok=202,
    ),
    "import materials": Endpoint(
        "post", lambda s: f"/api/studies/{s.slug}/materials/", _new_material, ok=201
    ),
    "reject assignment": Endpoint(
        "post",
        lambda s: f"/api/assignments/{_submitted(s)}/reject/",
        lambda s: {"reason": "Copied answers."},
    ),
}


# Rows of judgements or assignments: the permission the admin's list of them needs
# (studies.permissions), on top of reading studies.
ROW_LEVEL = {
    "assignments": "studies.view_assignment",
    "judgements": "studies.view_judgement",
    "export": "studies.view_judgement",
    "item export": "studies.view_judgement",
}


def snapshot() -> tuple:
    return (
        AnalysisRun.objects.filter(trigger=AnalysisRun.Trigger.MANUAL).count(),
        DialogueContext.objects.count(),
        Reflection.objects.count(),
        sorted(Assignment.objects.values_list("pk", "status")),
    )


def assert_error(response, status: int, code: ErrorCode, who: str = "") -> dict:
    """An error in the API's format with ``code`` and a message a person can read."""
    assert response.status_code == status, (who, response.content)
    assert response["Content-Type"] == "application/json", who
    body = response.json()
    assert body["code"] == code, (who, body)
    assert isinstance(body["message"], str) and body["message"], who
    return body


@pytest.mark.parametrize("name", ENDPOINTS)
def test_permission_matrix(
    name,
    small_study,
    anonymous,
    annotator_client,
    non_staff,
    staff_without_permissions,
    reader,
    row_reader,
    api,
):
    """Anonymous callers and annotators (a session through their invitation link, no
    user) get 401 with the token challenge; users who are not staff, and staff who may
    not see studies, 403; staff who may only see studies read the study and its
    aggregates but neither rows of judgements or assignments nor write; with the
    admin's view permissions on judgements and assignments they read those rows too;
    researchers with a token are served."""
    endpoint = ENDPOINTS[name]
    is_write = endpoint.method == "post"
    before = snapshot()

    response = endpoint.call(anonymous, small_study)
    body = assert_error(response, 401, ErrorCode.NOT_AUTHENTICATED, "anonymous")
    assert body == {
        "message": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }
    assert response["WWW-Authenticate"] == "Token"

    assert_error(
        endpoint.call(annotator_client, small_study), 401, ErrorCode.NOT_AUTHENTICATED, "annotator"
    )

    body = assert_error(
        endpoint.call(non_staff, small_study), 403, ErrorCode.PERMISSION_DENIED, "non-staff"
    )
    assert body["message"].startswith("Only researchers")

    assert_error(
        endpoint.call(staff_without_permissions, small_study),
        403,
        ErrorCode.PERMISSION_DENIED,
        "staff, no perms",
    )

    response = endpoint.call(reader, small_study)
    if is_write:
        body = assert_error(response, 403, ErrorCode.PERMISSION_DENIED, "reader")
        assert "lacks the permission" in body["message"]
    elif name in ROW_LEVEL:
        body = assert_error(response, 403, ErrorCode.PERMISSION_DENIED, "reader")
        assert body["message"] == f"Your account lacks the permission {ROW_LEVEL[name]}."
    else:
        assert response.status_code == endpoint.ok, response.content

    response = endpoint.call(row_reader, small_study)
    if is_write:
        assert_error(response, 403, ErrorCode.PERMISSION_DENIED, "row reader")
    else:
        assert response.status_code == endpoint.ok, response.content

    assert snapshot() == before, "a refused call wrote something"

    response = endpoint.call(api, small_study)
    assert response.status_code == endpoint.ok, response.content
    assert response["Content-Type"] == endpoint.content_type
    assert (snapshot() != before) == is_write


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


PERMISSION_SETS = [
    (),
    ("view_study",),
    ("view_study", "view_judgement"),
    ("view_study", "change_judgement"),
    ("view_study", "view_assignment"),
    ("change_study", "change_assignment"),
    ("view_judgement", "view_assignment"),
]


@pytest.mark.parametrize("codenames", PERMISSION_SETS, ids=lambda c: "+".join(c) or "none")
def test_the_api_answers_as_the_admins_lists_do(small_study, codenames):
    """One rule, one answer: whoever the admin shows the judgement (assignment) list
    to reads judgement (assignment) rows through the API, and nobody else."""
    from django.contrib.admin import site
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.test import RequestFactory

    from studies.models import Judgement
    from tests.api.conftest import token_client

    user = get_user_model().objects.create_user("someone", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = token_client(user)
    request = RequestFactory().get("/")
    request.user = user
    may_see_studies = site._registry[Study].has_view_permission(request)
    for model, endpoint in ((Judgement, "judgements"), (Assignment, "assignments")):
        admin_says = may_see_studies and site._registry[model].has_view_permission(request)
        response = ENDPOINTS[endpoint].call(client, small_study)
        assert response.status_code == (200 if admin_says else 403), (endpoint, codenames)
    judgements_allowed = may_see_studies and site._registry[Judgement].has_view_permission(request)
    for endpoint in ("export", "item export"):
        response = ENDPOINTS[endpoint].call(client, small_study)
        assert response.status_code == (200 if judgements_allowed else 403), (endpoint, codenames)
