"""Text the database cannot store (a NUL character, %00) in a request, on every URL
pattern of the site (studies.unstorable): in the path a 404, in a query or a POST form
a 400, for anyone and for a signed-in superuser; never a 500, nothing written."""

import itertools
import re
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils.regex_helper import normalize

from studies.errors import ErrorCode

NUL = "a\x00b"
PLAIN = ("1", "x")  # fit int, slug, str and path parameters
WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    route: str  # as ResolverMatch.route names it
    path: str  # resolves to this pattern
    nul_path: str  # the same address with a NUL character in it


def _patterns(patterns, regex: str = "", route: str = ""):
    """(regex, route) of every URL pattern, includes walked (as URLResolver joins them)."""
    for pattern in patterns:
        source = pattern.pattern.regex.pattern.removeprefix("^")
        own = str(pattern.pattern)
        joined = route + own.removeprefix("^") if route else own
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern.url_patterns, regex + source, joined)
        else:
            assert isinstance(pattern, URLPattern)
            yield "^" + regex + source, joined


def _fill(regex: str, candidates) -> str | None:
    """The first path matching ``regex`` with a value of ``candidates`` (tried in order)
    per parameter, percent-encoded; None if no combination matches."""
    (template, params), *_ = normalize(regex)
    for values in itertools.product(candidates, repeat=len(params)):
        path = template % {
            name: quote(value, safe="") for name, value in zip(params, values, strict=True)
        }
        if re.search(regex, path.replace("%00", "\x00")):
            return "/" + path
    return None


def routes() -> list[Route]:
    found = []
    for regex, route in _patterns(get_resolver().url_patterns):
        # Parameters restricted to a list of words (the admin's app labels).
        words = [
            w for group in re.findall(r"\(\?P<\w+>([\w|]+)\)", regex) for w in group.split("|")
        ]
        path = _fill(regex, [*PLAIN, *words])
        assert path is not None, regex
        nul_path = _fill(regex, [NUL, *PLAIN, *words])
        if "%00" not in nul_path:  # no parameter takes it: at the end of the last segment
            stem = path.rstrip("/")
            nul_path = f"{stem}%00{path[len(stem) :]}" if stem else "/%00"
        found.append(Route(route=route, path=path, nul_path=nul_path))
    return found


ROUTES = routes()


@pytest.fixture(params=["anonymous", "superuser"])
def visitor(request, db) -> Client:
    client = request.getfixturevalue("client" if request.param == "anonymous" else "admin_client")
    client.raise_request_exception = False  # a 500 is a finding, not a crash of the test
    return client


def _wrong(response, queries, status: int) -> str | None:
    """Why ``response`` is not the refusal it should be, or None."""
    if response.status_code != status:
        return f"{response.status_code}"
    written = [q["sql"] for q in queries.captured_queries if WRITES.match(q["sql"] or "")]
    if written:
        return f"wrote {written}"
    if response.request["PATH_INFO"].startswith("/api/"):
        body = response.json()
        code = ErrorCode.INVALID if status == 400 else ErrorCode.NOT_FOUND
        keys = {"message", "code", "errors"} if status == 400 else {"message", "code"}
        if set(body) != keys or body["code"] != code:
            return f"not the API's error format: {response.content[:200]}"
        return None
    heading = {404: "This page does not exist", 400: "This request cannot be accepted"}[status]
    if heading not in response.content.decode():
        return f"not the site's {status} page: {response.content[:200]}"
    return None


def _check(visitor, status: int, send) -> list[str]:
    failures = []
    for route in ROUTES:
        with CaptureQueriesContext(connection) as queries:
            response = send(visitor, route)
        if problem := _wrong(response, queries, status):
            failures.append(f"{route.route}: {problem}")
    return failures


def test_every_url_pattern_is_walked():
    by_route = {r.route: r for r in ROUTES}
    assert len(ROUTES) > 100  # the admin's, the API's, the annotator pages'
    assert by_route["i/<str:token>/"].nul_path == "/i/a%00b/"
    assert by_route["s/<slug:slug>/join/<str:key>"].nul_path == "/s/1/join/a%00b"
    assert by_route["api/assignments/<int:assignment_id>/reject/"].nul_path == (
        "/api/assignments/1/reject%00/"
    )
    for route in ROUTES:
        assert resolve(route.path).route == route.route, route


def test_a_nul_in_the_path_is_a_404_on_every_url_pattern(visitor):
    assert _check(visitor, 404, lambda client, route: client.get(route.nul_path)) == []


def test_a_nul_in_the_query_is_a_400_on_every_url_pattern(visitor):
    assert _check(visitor, 400, lambda client, route: client.get(f"{route.path}?x=a%00b")) == []


def test_a_nul_in_a_posted_form_field_is_a_400_on_every_url_pattern(visitor):
    assert _check(visitor, 400, lambda client, route: client.post(route.path, {"x": NUL})) == []


def test_names_uploads_and_urlencoded_forms_are_checked_before_csrf(db):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = Client(enforce_csrf_checks=True)  # refused before the CSRF check's 403
    form = "application/x-www-form-urlencoded"
    for response, named in (
        (client.get("/?a%00b=1"), '"a\\u0000b"'),
        (client.post("/", "a=1&note=x%00", content_type=form), '"note"'),
        (client.post("/", {"up\x00": SimpleUploadedFile("a.txt", b"x")}), '"up\\u0000"'),
    ):
        assert response.status_code == 400
        assert f"{named} contains a NUL character" in response.content.decode().replace(
            "&quot;", '"'
        )
