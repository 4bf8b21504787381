"""Every malformed body gets the API's JSON error format: nesting too deep for the
JSON parser is a 400, a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` a 413, on every
endpoint that reads a body; nothing is written."""

import json

import pytest

from analysis.models import AnalysisRun
from studies.api_framework import MAX_LISTED_ERRORS
from studies.models import Assignment, DialogueContext, Reflection

DEEP = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"


def write_endpoints(study) -> list[str]:
    submitted = Assignment.objects.filter(
        stage__study=study, status=Assignment.Status.SUBMITTED
    ).first()
    return [
        "/api/studies/pilot/materials/",
        f"/api/assignments/{submitted.pk}/reject/",
        "/api/studies/pilot/analysis-runs/",
    ]


def written() -> tuple:
    return (
        DialogueContext.objects.count(),
        Reflection.objects.count(),
        sorted(Assignment.objects.values_list("pk", "status", "rejection_reason")),
        AnalysisRun.objects.count(),
    )


def test_json_nested_too_deeply_is_a_400_everywhere(api, small_study):
    before = written()
    for url in write_endpoints(small_study):
        response = api.post(url, DEEP, content_type="application/json")
        assert response.status_code == 400, (url, response.content[:300])
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert body["message"] and isinstance(body["errors"], dict)
        # The materials import lists it as its problem, the others say it at once.
        assert body["code"] == ("invalid" if "/materials/" in url else "parse_error"), url
        assert "nested too deeply" in json.dumps(body), url
    assert written() == before


@pytest.mark.parametrize("deep_in", ["reason", "excluded_sources"])
def test_nesting_inside_a_field_is_refused_like_the_whole_body(api, small_study, deep_in):
    before = written()
    submitted = Assignment.objects.filter(status=Assignment.Status.SUBMITTED).first()
    url = {
        "reason": f"/api/assignments/{submitted.pk}/reject/",
        "excluded_sources": "/api/studies/pilot/analysis-runs/",
    }[deep_in]
    body = f'{{"{deep_in}": {"[" * 50_000}{"]" * 50_000}}}'
    response = api.post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert "nested too deeply" in response.json()["message"]
    assert written() == before


def test_a_body_over_the_size_limit_is_a_413_everywhere(api, small_study, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = written()
    big = json.dumps({"reason": "x" * 2000})
    for url in write_endpoints(small_study):
        response = api.post(url, big, content_type="application/json")
        assert response.status_code == 413, (url, response.content[:300])
        assert response["Content-Type"] == "application/json"
        assert response.json() == {
            "message": "The request body is larger than the limit of 1,000 bytes.",
            "code": "request_too_large",
        }
    assert written() == before


def test_a_body_within_the_limit_is_read(api, small_study, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    submitted = Assignment.objects.filter(status=Assignment.Status.SUBMITTED).first()
    response = api.post(
        f"/api/assignments/{submitted.pk}/reject/",
        {"reason": "Too fast."},
        format="json",
    )
    assert response.status_code == 200, response.content


def test_a_key_given_twice_is_a_400(api, small_study):
    before = written()
    submitted = Assignment.objects.filter(status=Assignment.Status.SUBMITTED).first()
    response = api.post(
        f"/api/assignments/{submitted.pk}/reject/",
        '{"reason": "Too fast.", "reason": ""}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "message": 'JSON parse error - key "reason" appears twice in one object',
        "code": "parse_error",
        "errors": {},
    }
    assert written() == before


@pytest.mark.parametrize("key", ["a\\ud800", "a\\u0000b"])
def test_a_key_the_database_cannot_store_is_a_400_everywhere(api, small_study, key):
    """Unknown keys are named back in the message: one that cannot be encoded (an
    unpaired surrogate) or stored must not reach that far. (The materials import reads
    the body as its document, whose problems it lists.)"""
    before = written()
    for url in write_endpoints(small_study)[1:]:
        response = api.post(url, f'{{"{key}": 1}}', content_type="application/json")
        assert response.status_code == 400, (url, response.content[:300])
        assert response.json()["code"] == "parse_error", url
        assert "a key of the JSON body contains" in response.json()["message"], url
    assert written() == before


@pytest.mark.parametrize(
    "body",
    [
        {"excluded_sources": [[1]] * 100_000},  # 100,000 errors, one per element
        {f"k{i}": 1 for i in range(100_000)},  # one message naming 100,000 keys
    ],
    ids=["many-errors", "one-long-message"],
)
def test_an_error_body_quotes_at_most_a_short_part_of_the_input(api, small_study, body):
    before = written()
    response = api.post(
        "/api/studies/pilot/analysis-runs/", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400
    assert len(response.content) < 10_000
    error = response.json()
    assert error["code"] == "invalid" and error["message"]
    leaves = json.dumps(error["errors"])
    if "excluded_sources" in body:
        assert error["errors_omitted"] == 100_000 - MAX_LISTED_ERRORS
        assert leaves.count("Not a valid string.") == MAX_LISTED_ERRORS
    else:
        assert "errors_omitted" not in error
        assert error["message"].startswith("parameters: Unknown parameters: k0, k1,")
        assert error["message"].endswith("…")
    assert written() == before
