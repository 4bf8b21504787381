"""Every error the API can answer with carries a ``code`` from the enum its schema
documents, beside a message a person can read; each documented code is one the API
really gives (the error paths are walked one by one)."""

import pytest
from django.utils import timezone

from studies.errors import API_ERROR_CODES, ErrorCode
from studies.models import Study
from tests.api.test_schema import generated_schema


def _invalid_filter(api, study):
    return api.get("/api/studies/pilot/judgements/?stage=-1")


def _malformed_json(api, study):
    return api.post(
        "/api/studies/pilot/analysis-runs/", '{"note": ', content_type="application/json"
    )


def _no_credentials(api, study):
    return api.__class__().get("/api/studies/")


def _unknown_token(api, study):
    client = api.__class__()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    return client.get("/api/studies/")


def _not_a_researcher(api, study):
    from django.contrib.auth import get_user_model

    from tests.api.conftest import token_client

    return token_client(get_user_model().objects.create_user("participant")).get("/api/studies/")


def _unknown_study(api, study):
    return api.get("/api/studies/nope/")


def _unknown_path(api, study):
    return api.get("/api/no-such-endpoint/")


def _nul_in_path(api, study):
    return api.get("/api/studies/pi%00lot/")


def _nul_in_query(api, study):
    return api.get("/api/studies/?a%00b=1")


def _wrong_method(api, study):
    return api.delete("/api/studies/pilot/")


def _html_wanted(api, study):
    return api.get("/api/studies/", HTTP_ACCEPT="text/html")


def _too_large(api, study):
    return api.post(
        "/api/studies/pilot/analysis-runs/",
        '{"note": "' + "x" * 2000 + '"}',
        content_type="application/json",
    )


def _not_json(api, study):
    return api.post("/api/studies/pilot/materials/", "a,b\n1,2\n", content_type="text/csv")


def _materials_with_problems(api, study):
    return api.post("/api/studies/pilot/materials/", {"contexts": "x"}, format="json")


def _open_unready(api, study):
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT)
    return api.post("/api/studies/pilot/open/")


def _open_purged(api, study):
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED, purged_at=timezone.now())
    return api.post("/api/studies/pilot/open/")


ERROR_PATHS = [
    (_invalid_filter, 400, ErrorCode.INVALID),
    (_materials_with_problems, 400, ErrorCode.INVALID),
    (_nul_in_query, 400, ErrorCode.INVALID),
    (_malformed_json, 400, ErrorCode.PARSE_ERROR),
    (_open_unready, 400, ErrorCode.STUDY_NOT_READY),
    (_open_purged, 400, ErrorCode.STUDY_PURGED),
    (_no_credentials, 401, ErrorCode.NOT_AUTHENTICATED),
    (_unknown_token, 401, ErrorCode.AUTHENTICATION_FAILED),
    (_not_a_researcher, 403, ErrorCode.PERMISSION_DENIED),
    (_unknown_study, 404, ErrorCode.NOT_FOUND),
    (_unknown_path, 404, ErrorCode.NOT_FOUND),
    (_nul_in_path, 404, ErrorCode.NOT_FOUND),
    (_wrong_method, 405, ErrorCode.METHOD_NOT_ALLOWED),
    (_html_wanted, 406, ErrorCode.NOT_ACCEPTABLE),
    (_too_large, 413, ErrorCode.REQUEST_TOO_LARGE),
    (_not_json, 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE),
]


def documented_codes() -> list[str]:
    return generated_schema()["components"]["schemas"]["ErrorCodeEnum"]["enum"]


@pytest.mark.parametrize(
    "call, status, code", ERROR_PATHS, ids=[call.__name__.strip("_") for call, *_ in ERROR_PATHS]
)
def test_an_error_carries_its_documented_code_and_a_message(
    api, small_study, settings, call, status, code
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = call(api, small_study)
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == code and body["code"] in documented_codes(), body
    assert isinstance(body["message"], str) and body["message"]
    assert ("errors" in body) == (status == 400), body


def test_the_schema_documents_exactly_the_codes_the_api_gives():
    assert documented_codes() == [code.value for code in API_ERROR_CODES]
    assert {code for *_, code in ERROR_PATHS} == set(API_ERROR_CODES)


def test_every_error_response_of_the_schema_has_a_code():
    schema = generated_schema()
    components = schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if not status.startswith("4"):
                    continue
                ref = response["content"]["application/json"]["schema"]["$ref"]
                component = components[ref.rsplit("/", 1)[-1]]
                assert "code" in component["required"], (method, path, status)
                code = component["properties"]["code"]
                assert code["allOf"] == [{"$ref": "#/components/schemas/ErrorCodeEnum"}], (
                    method,
                    path,
                    status,
                )
