"""Property-based test of the API against its own OpenAPI schema (schemathesis).

Schemathesis reads /api/schema/ from the WSGI application and generates requests for
every operation, valid and invalid ones, as a researcher with a token on a small
study with data (path parameters point at real rows, so requests get past the 404s).
Every response must be documented and match its schema, and none may be a 5xx.
Bounded (a fixed seed, 20 examples per operation plus schemathesis's coverage
cases) so it runs in the normal test suite.
"""

import json
import re

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from analysis.models import AnalysisRun
from studies.models import Assignment

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture
def same_connection_for_requests():
    """Requests through the WSGI handler would close the test's database connection
    (and its transaction) when they finish; Django's test client avoids that the same
    way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def _openapi() -> dict:
    """The schema /api/schema/ serves (tests/api/test_schema.py checks they agree),
    generated at collection time: the parametrisation needs its operations."""
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


schema = schemathesis.openapi.from_dict(
    _openapi(),
    config=schemathesis.Config.from_dict({"seed": 20261121, "cache": {"enabled": False}}),
)
schema.app = get_wsgi_application()


@pytest.fixture
def target(small_study, staff, same_connection_for_requests) -> dict:
    """A researcher's token and real rows for the path parameters."""
    run = AnalysisRun.objects.create(study=small_study, trigger=AnalysisRun.Trigger.COMMAND)
    assignment = Assignment.objects.get(status=Assignment.Status.SUBMITTED)
    return {
        "headers": {"Authorization": f"Token {Token.objects.create(user=staff).key}"},
        "path": {"slug": small_study.slug, "run_id": run.pk, "assignment_id": assignment.pk},
    }


FUZZ_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _check(case, target) -> None:
    if case.path_parameters:
        case.path_parameters = {
            **case.path_parameters,
            **{
                name: value
                for name, value in target["path"].items()
                if name in case.path_parameters
            },
        }
    response = case.call(headers=target["headers"])
    case.validate_response(response, checks=CHECKS, headers=target["headers"])


def _operation_test(method: str, path: str):
    """One test per operation. ``schema.parametrize()`` runs the operations of a
    schema as subtests of one test, and under pytest-xdist (`make test`) only the
    first of them ran: a schema narrowed to one operation has just that one."""

    @schema.include(method=method, path=path).parametrize()
    @FUZZ_SETTINGS
    def test(case, target):
        _check(case, target)

    return test


OPERATIONS = [result.ok() for result in schema.get_all_operations()]
for _operation in OPERATIONS:
    _name = re.sub(r"\W+", "_", f"{_operation.method} {_operation.path}").strip("_").lower()
    globals()[f"test_{_name}_gets_documented_answers_and_never_a_server_error"] = _operation_test(
        _operation.method.upper(), _operation.path
    )


def test_every_operation_has_its_test_of_that_operation_alone():
    assert len(OPERATIONS) >= 17
    names = [name for name in globals() if name.endswith("_never_a_server_error")]
    assert len(names) == len(OPERATIONS)
    for operation in OPERATIONS:
        narrowed = schema.include(method=operation.method.upper(), path=operation.path)
        (only,) = [result.ok() for result in narrowed.get_all_operations()]
        assert only.label == operation.label
