"""No page, download or API answer gives a user anything of a study they have no role in,
and none writes to it.

Every URL pattern of the project outside /admin/ (the admin has tests of its own) is
requested, read off the URL resolver so that a page added later is covered too: with
study B's slug and the ids of B's objects (an assignment, an analysis run), and with
study A's slug and B's ids; by GET, by GET with B's ids in the query (``run``,
``item``, ``judgement``, ``stage``, ``group``), by an empty POST and by a POST of B's
ids (with what a write would need besides, such as a rejection's reason). The callers hold each role in study A only, or are staff with every global
permission of the studies and analysis apps and no role. No answer may carry one of
B's sentinel strings (its slug, title, a reflection text, an annotator's pseudonym or
e-mail address, a description, a code), and no row of study B may change.
"""

import json
from collections import deque
from dataclasses import dataclass

import pytest
from django.apps import apps
from django.db import models
from django.db.models import Q
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from studies.models import Annotator, AnnotatorSession, Batch, Role, Study
from studies.services import (
    annotators_create,
    assignment_create,
    consent_version_current,
)
from tests.api.conftest import annotate, staff_with_every_permission
from tests.conftest import load_materials, make_study, module_transaction
from tests.factories import user_with_role
from tests.studies.roles.other_study import OtherStudy, leaked, make_other_study

pytestmark = pytest.mark.django_db


# --- the URLs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    name: str  # "namespace:name", or "" for an unnamed pattern
    route: str
    params: tuple[str, ...]


def _routes(patterns, prefix="", namespace=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace or ""
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
            params = tuple(pattern.pattern.regex.groupindex)
            yield Route(name or "", prefix + str(pattern.pattern), params)


ROUTES = [r for r in _routes(get_resolver().url_patterns) if not r.route.startswith("admin/")]


def _params(route: Route, *, slug: str, b: OtherStudy) -> dict:
    """Each URL parameter filled with study B's object (or a value nobody was given: an
    annotator's link token and a crowd join key are their holder's credentials)."""
    values = {
        "slug": slug,
        "assignment_id": b.assignment,
        "run_id": b.run,
        "number": 1,
        "position": 1,
        "plot": "agreement",
        "table": "agreement",
        "token": "not-a-token-anybody-was-given",
        "key": "not-a-key-anybody-was-given",
        "path": "",
    }
    missing = set(route.params) - set(values)
    assert not missing, f"fill {missing} of {route.route}"
    return {name: values[name] for name in route.params}


def _url(route: Route, **params) -> str:
    if not route.name:  # the API's catch-all 404
        return "/api/no-such-endpoint/"
    return reverse(route.name, kwargs=params)


# --- what study B holds ----------------------------------------------------------------------


def _study_paths(model, depth: int = 4) -> list[str]:
    """Every path of foreign keys from ``model`` to Study, at most ``depth`` long."""
    paths, queue = [], deque([(model, ())])
    while queue:
        current, path = queue.popleft()
        if current is Study:
            paths.append("__".join(path) or "pk")
            continue
        if len(path) >= depth:
            continue
        for field in current._meta.get_fields():
            foreign_key = isinstance(field, models.ForeignKey) and field.concrete
            if foreign_key and field.related_model not in {model, current}:
                queue.append((field.related_model, (*path, field.name)))
    return paths


def b_rows(study_id: int) -> dict[str, list]:
    """Every row of study B (reached through any chain of foreign keys), by model, and
    the sessions signed in to it."""
    rows = {}
    for app in ("studies", "analysis"):
        for model in apps.get_app_config(app).get_models():
            paths = _study_paths(model)
            if not paths:
                continue
            where = Q()
            for path in paths:
                where |= Q(**{path: study_id})
            rows[model._meta.label] = list(model.objects.filter(where).order_by("pk").values_list())
    slug = Study.objects.get(pk=study_id).slug
    rows["sessions"] = list(
        AnnotatorSession.objects.filter(annotators__has_key=slug).values_list("pk", flat=True)
    )
    return rows


# --- the studies, built once -----------------------------------------------------------------


@pytest.fixture(scope="module")
def studies_of_the_module(django_db_setup, django_db_blocker):
    """Study A ("pilot": materials, a submitted batch, an open one) and study B."""
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            a = load_materials(make_study())
            Study.objects.filter(pk=a.pk).update(status=Study.Status.OPEN)
            annotator = annotators_create(group=a.groups.get(name="Layperson"), count=1)[0]
            Annotator.objects.filter(pk=annotator.pk).update(
                consented_version=consent_version_current(study=a), consented_at=timezone.now()
            )
            batches = Batch.objects.filter(stage__study=a).order_by("pk")
            annotate(assignment_create(annotator=annotator, batch=batches[0]))
            assignment_create(annotator=annotator, batch=batches[1])
            b = make_other_study()
        yield a.pk, b


@pytest.fixture
def studies(db, studies_of_the_module):
    a, b = studies_of_the_module
    return Study.objects.get(pk=a), b


def _post(client, url: str, data: dict):
    """A form for pages, JSON for the API."""
    if url.startswith("/api/"):
        return client.post(url, json.dumps(data), content_type="application/json")
    return client.post(url, data)


CALLERS = [*Role.values, "staff with every permission, no role"]


@pytest.mark.parametrize("caller", CALLERS)
def test_no_answer_holds_anything_of_a_study_without_a_role_in_it(studies, caller):
    a, b = studies
    user = staff_with_every_permission() if caller not in Role.values else user_with_role(a, caller)
    client = Client()
    client.force_login(user)
    b_ids = {
        "run": b.run,
        "item": b.judgement,
        "judgement": b.judgement,
        "stage": b.stage,
        "group": b.group,
        "codes": "numbat",
        "reason": "A rejection that must not happen.",
    }
    before = b_rows(b.study)
    found = []
    for route in ROUTES:
        slugs = [Study.objects.get(pk=b.study).slug, a.slug] if "slug" in route.params else [None]
        for slug in slugs:
            url = _url(route, **_params(route, slug=slug, b=b))
            answers = [
                ("GET", client.get(url)),
                ("GET ?ids", client.get(url, b_ids)),
                ("POST", client.post(url)),
                ("POST ids", _post(client, url, b_ids)),
            ]
            for how, response in answers:
                body = (
                    b"".join(response.streaming_content) if response.streaming else response.content
                )
                text = body.decode("utf-8", errors="replace")
                text += " ".join(f"{k}: {v}" for k, v in response.items())
                if sentinels := leaked(text):
                    found.append((how, url, response.status_code, sentinels))
    assert found == []
    assert b_rows(b.study) == before, "a request wrote to study B"
