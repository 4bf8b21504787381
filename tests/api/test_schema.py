"""The OpenAPI schema: served, valid, complete, and its docs pages need no CDN."""

import re

import yaml
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from annotation_site import api_urls

EXPECTED_OPERATIONS = {
    ("get", "/api/studies/"),
    ("get", "/api/studies/{slug}/"),
    ("post", "/api/studies/{slug}/open/"),
    ("get", "/api/studies/{slug}/stages/"),
    ("get", "/api/studies/{slug}/groups/"),
    ("get", "/api/studies/{slug}/progress/"),
    ("get", "/api/studies/{slug}/contexts/"),
    ("get", "/api/studies/{slug}/batches/"),
    ("post", "/api/studies/{slug}/materials/"),
    ("get", "/api/studies/{slug}/assignments/"),
    ("post", "/api/assignments/{assignment_id}/reject/"),
    ("get", "/api/studies/{slug}/judgements/"),
    ("get", "/api/studies/{slug}/export/"),
    ("get", "/api/studies/{slug}/items/"),
    ("get", "/api/studies/{slug}/dataset-card/"),
    ("get", "/api/studies/{slug}/dataset/"),
    ("get", "/api/studies/{slug}/analysis-runs/"),
    ("post", "/api/studies/{slug}/analysis-runs/"),
    ("get", "/api/analysis-runs/{run_id}/"),
}


def generated_schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict) -> set[tuple[str, str]]:
    return {(method, path) for path, item in schema["paths"].items() for method in item}


def test_the_generated_schema_is_valid_openapi_3():
    schema = generated_schema()
    validate_schema(schema)  # raises on an invalid document
    assert schema["openapi"].startswith("3.")


def test_the_schema_describes_every_endpoint_with_token_security_and_errors():
    schema = generated_schema()
    assert operations(schema) == EXPECTED_OPERATIONS
    assert schema["components"]["securitySchemes"]["tokenAuth"]["in"] == "header"
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert {"401", "403", "404"} <= set(responses), (method, path)
            assert any(code.startswith("2") for code in responses), (method, path)
            assert {"tokenAuth": []} in operation["security"], (method, path)


def test_the_judgements_operation_documents_its_filters_and_cursor():
    schema = generated_schema()
    operation = schema["paths"]["/api/studies/{slug}/judgements/"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    expected = {"slug", "cursor", "page_size", "stage", "group", "source", "kind"}
    assert names >= expected | {"annotator", "status", "since_id"}


def test_the_schema_is_served_publicly_at_api_schema(client, db):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    served = yaml.safe_load(response.content)
    assert operations(served) == EXPECTED_OPERATIONS
    as_json = client.get("/api/schema/?format=json")
    assert as_json.status_code == 200 and as_json.json()["info"]["title"]


def test_the_docs_pages_load_their_assets_locally(client, db):
    for url in ("/api/docs/", "/api/redoc/"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        if url == "/api/docs/":  # its start-up script is a request of its own (the CSP)
            page += client.get("/api/docs/?script=").content.decode()
        assert "/api/schema/" in page
        sources = re.findall(r'(?:src|href)="([^"]+)"', page)
        assert sources and all(not s.startswith(("http://", "https://", "//")) for s in sources)
        assert "drf_spectacular_sidecar" in page, url


def test_the_catch_all_route_stays_last():
    assert api_urls.urlpatterns[-1].callback.cls.__name__ == "ApiNotFound"
