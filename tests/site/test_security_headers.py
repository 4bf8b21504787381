"""Deployment headers: the Content-Security-Policy on every page type (studies.csp),
HSTS and the HTTPS redirect from the environment, `check --deploy` clean."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.urls import reverse

from studies.csp import API_DOCS_POLICY, content_security_policy, response_allow_framing
from tests.factories import StaffUserFactory

ROOT = Path(__file__).resolve().parents[2]
SITE_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:", "blob:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}


def _directives(header: str) -> dict[str, list[str]]:
    parts = (part.split() for part in header.split(";") if part.strip())
    return {name: values for name, *values in parts}


def _policy(response) -> dict[str, list[str]]:
    return _directives(response["Content-Security-Policy"])


@pytest.fixture
def annotator_client(client, loaded_study):
    """An annotator signed in, consented, tutorial done, with a batch in progress."""
    from django.utils import timezone

    from studies.models import Study
    from studies.services import (
        annotator_complete_tutorial,
        annotator_consent,
        annotators_create,
        consent_version_current,
    )

    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    loaded_study.refresh_from_db()
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    annotator_consent(
        annotator=annotator, version=consent_version_current(study=loaded_study), now=timezone.now()
    )
    annotator_complete_tutorial(annotator=annotator)
    assert client.get(f"/i/{annotator.access_token}/").status_code == 302
    started = client.post(f"/s/{loaded_study.slug}/start/")
    assert started.status_code == 302, started.content[:500]
    client.assignment_id = int(started["Location"].rstrip("/").split("/")[-1])
    return client


def test_every_annotator_page_type_sends_the_policy(annotator_client, loaded_study):
    slug = loaded_study.slug
    assignment_id = annotator_client.assignment_id
    pages = {
        "index": "/",
        "home": f"/s/{slug}/",
        "consent": f"/s/{slug}/consent/",
        "tutorial": f"/s/{slug}/tutorial/",
        "item": f"/s/{slug}/b/{assignment_id}/1/",
        "review": f"/s/{slug}/b/{assignment_id}/review/",
        "invalid link": "/i/not-a-token/",
        "not found": "/no/such/page/",
    }
    for name, url in pages.items():
        response = annotator_client.get(url, follow=True)
        assert _policy(response) == SITE_POLICY, name
    # An htmx partial too.
    item = annotator_client.get(pages["item"], HTTP_HX_REQUEST="true")
    assert item.status_code == 200
    assert _policy(item) == SITE_POLICY


def test_every_researcher_page_type_sends_the_policy(client, loaded_study):
    assert _policy(client.get("/admin/login/")) == SITE_POLICY
    client.force_login(StaffUserFactory())
    pages = [
        "/admin/",
        f"/admin/studies/study/{loaded_study.pk}/change/",
        "/admin/studies/assignment/",
        reverse("analysis:dashboard", args=[loaded_study.slug]),
        f"/api/studies/{loaded_study.slug}/",  # JSON: harmless, and uniform
        "/api/schema/",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert _policy(response) == SITE_POLICY, url


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_the_api_documentation_pages_have_their_documented_exception(client, url):
    response = client.get(url)
    assert response.status_code == 200
    directives = _directives(response["Content-Security-Policy"])
    assert directives["script-src"] == ["'self'"]  # never inline script
    assert directives["style-src"] == API_DOCS_POLICY["style-src"]
    assert directives["worker-src"] == API_DOCS_POLICY["worker-src"]
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"
    assert "<style" not in html and "fonts.googleapis" not in html


def test_swagger_ui_start_up_script_is_a_separate_request(client):
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()


#: Inline code the policy would block: a <script> without src, <style>, style="…",
#: an on…= handler, and htmx's hx-on (which htmx evaluates as script).
INLINE = re.compile(
    r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\s(?:data-)?(?:hx-)?on[a-z:-]+=", re.I
)


def test_no_template_or_html_in_code_has_inline_script_or_style():
    found = []
    for path in [*ROOT.glob("templates/**/*.html"), *ROOT.glob("*/templates/**/*.html")]:
        found += [
            f"{path.relative_to(ROOT)}: {m.group(0)}" for m in INLINE.finditer(path.read_text())
        ]
    for package in ("studies", "analysis", "annotation_site"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text()
            found += [
                f"{path.relative_to(ROOT)}: {m.group(0)}"
                for m in re.finditer(r"""style=\\?["']""", text)
            ]
    assert found == []


def test_a_response_can_let_given_origins_frame_it(client):
    """The hook for per-study framing (crowd platforms): one response, its origins."""
    from csp.middleware import CSPMiddleware
    from django.middleware.clickjacking import XFrameOptionsMiddleware
    from django.test import RequestFactory

    request = RequestFactory().get("/s/pilot/")
    view = lambda request: response_allow_framing(  # noqa: E731
        HttpResponse("framed"), origins=["https://app.prolific.com"]
    )
    response = XFrameOptionsMiddleware(CSPMiddleware(view))(request)
    directives = _directives(response["Content-Security-Policy"])
    assert directives["frame-ancestors"] == ["https://app.prolific.com"]
    assert directives["script-src"] == ["'self'"]
    assert "X-Frame-Options" not in response
    # Every other response: not framed at all.
    assert _directives(client.get("/")["Content-Security-Policy"])["frame-ancestors"] == ["'none'"]
    assert client.get("/")["X-Frame-Options"] == "DENY"
    assert content_security_policy(frame_ancestors=["'self'"])["DIRECTIVES"]["frame-ancestors"] == [
        "'self'"
    ]


def _settings_in(env: dict[str, str], code: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "annotation_site.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


PRODUCTION = {
    "DJANGO_DEBUG": "false",
    # A deployment names its servers (the settings refuse the embedded ones); none of
    # these tests connects.
    "DATABASE_URL": "postgres://unused@127.0.0.1:1/unused",
    "CELERY_BROKER_URL": "memory://",
    "CACHE_URL": "locmemcache://",
    "DJANGO_SECRET_KEY": "a-long-random-production-key-0123456789-abcdefghijklmnopqrstuvwxyz",
    "DJANGO_ALLOWED_HOSTS": "studies.example.org",
}


def test_check_deploy_is_clean_with_production_settings():
    out = _settings_in(
        PRODUCTION,
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('check', deploy=True, fail_level='WARNING')",
    )
    assert "System check identified no issues" in out


SHOW = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, "
    "getattr(s, 'SECURE_PROXY_SSL_HEADER', None))"
)


@pytest.mark.parametrize(
    "env, expected",
    [
        (PRODUCTION, "True 31536000 True None"),
        # The fault drills and benchmarks: plain HTTP on loopback.
        (
            {**PRODUCTION, "DJANGO_SECURE_SSL_REDIRECT": "false", "DJANGO_HSTS_SECONDS": "0"},
            "False 0 True None",
        ),
        (
            {**PRODUCTION, "DJANGO_BEHIND_PROXY": "true"},
            "True 31536000 True ('HTTP_X_FORWARDED_PROTO', 'https')",
        ),
        ({"DJANGO_DEBUG": "true"}, "False 0 True None"),
    ],
    ids=["production", "plain-http", "behind-proxy", "debug"],
)
def test_https_settings_come_from_the_environment(env, expected):
    assert _settings_in(env, SHOW).strip().splitlines()[-1] == expected
