"""A NUL character (%00) in an API request's path, query or form body: a 404 or 400 in
the API's JSON error format (studies.unstorable); the API still reads the bodies it
reads itself. NUL characters inside a JSON body are the fields' to refuse
(test_writes)."""

from urllib.parse import urlencode

from analysis.models import AnalysisRun
from studies.errors import ErrorCode
from studies.models import Assignment

FORM = "application/x-www-form-urlencoded"


def test_a_nul_in_an_api_path_is_a_json_404(api, anonymous, small_study):
    for caller in (api, anonymous):
        response = caller.get("/api/studies/pi%00lot/progress/")
        assert response.status_code == 404
        assert response.json() == {
            "message": "This address contains a NUL character, so it is not the address of "
            "any page.",
            "code": "not_found",
        }


def test_a_nul_in_an_api_query_is_a_json_400_naming_the_parameter(api, small_study):
    response = api.get("/api/studies/pilot/judgements/?cursor=%00")
    assert response.status_code == 400
    assert response.json() == {
        "message": 'The link\'s parameter "cursor" contains a NUL character, which cannot '
        "be stored.",
        "code": "invalid",
        "errors": {"cursor": ["contains a NUL character"]},
    }


def test_a_nul_in_a_parameter_name_is_named_escaped(api, small_study):
    response = api.get("/api/studies/?a%00b=1")
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == {"a\x00b": ["contains a NUL character"]}
    assert '"a\\u0000b" contains a NUL character' in body["message"]


def test_a_nul_in_a_form_body_is_a_json_400_and_starts_nothing(api, small_study):
    response = api.post("/api/studies/pilot/analysis-runs/", {"note": "a\x00b"}, format="multipart")
    assert response.status_code == 400
    assert response.json()["code"] == ErrorCode.INVALID
    assert response.json()["errors"] == {"note": ["contains a NUL character"]}
    assert not AnalysisRun.objects.exists()


def test_form_bodies_without_nul_are_still_refused_as_not_json(api, small_study):
    """The check parses a copy of the body: the API still sees it, and refuses it."""
    submitted = Assignment.objects.get(status=Assignment.Status.SUBMITTED)
    for url, body in (
        ("/api/studies/pilot/analysis-runs/", {"note": "x"}),
        ("/api/studies/pilot/materials/", {"contexts": "x"}),
        (f"/api/assignments/{submitted.pk}/reject/", {"reason": "Not a real answer."}),
    ):
        multipart = api.post(url, body, format="multipart")
        urlencoded = api.post(url, urlencode(body), content_type=FORM)
        for response in (multipart, urlencoded):
            assert response.status_code == 415, (url, response.content[:300])
            assert response.json()["code"] == ErrorCode.UNSUPPORTED_MEDIA_TYPE
            assert response.json()["message"].startswith("Unsupported media type")
    assert not AnalysisRun.objects.exists()
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.SUBMITTED


def test_form_bodies_too_large_or_malformed_are_still_the_apis_to_refuse(
    api, small_study, settings
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    url = "/api/studies/pilot/analysis-runs/"
    too_large = api.post(url, {"note": "x" * 2000}, format="multipart")
    malformed = api.post(url, "--x\r\nno headers", content_type="multipart/form-data; boundary=x")
    for response in (too_large, malformed):
        assert response.status_code == 415, response.content[:300]
        assert response.json()["code"] == ErrorCode.UNSUPPORTED_MEDIA_TYPE
        assert response.json()["message"].startswith("Unsupported media type")
    assert not AnalysisRun.objects.exists()
