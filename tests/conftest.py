"""Shared fixtures.

The suite runs on PostgreSQL and Redis: the servers named by ``DATABASE_URL``,
``CELERY_BROKER_URL`` and ``CACHE_URL``, or the checkout's embedded ones
(annotation_site.embedded). On the embedded Redis it keeps to databases of its own, so
that `make test` beside a running `make demo` shares none of the demo's messages or
cache entries. Only the browser tests need something more (Debian's Chromium); without
it they are skipped with a reason, except in CI (CI=true), where that is a failure.
"""

import itertools
import json
import os
import re
import zlib
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction

from annotation_site import embedded
from annotation_site.embedded import redis as embedded_redis
from studies.datafiles.materials import materials_import
from studies.models import Assignment, Batch, Reflection, Study
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
    study_create,
)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


# The process's name when pytest-xdist runs the suite in several ("gw0", "gw1", …;
# `make test` does), else None. Each has a test database of its own (pytest-django
# names it after the process); the Redis they share keeps their messages and cache
# entries apart by the queue and the key prefix set below.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def pytest_configure(config):
    if "CELERY_BROKER_URL" in settings.EMBEDDED_SERVICES:
        url = embedded.broker_url(db=embedded_redis.TEST_BROKER_DB)
        settings.CELERY_BROKER_URL = url
        os.environ["CELERY_BROKER_URL"] = url  # the workers that tests start
    if "CACHE_URL" in settings.EMBEDDED_SERVICES:
        test_cache = embedded.cache_settings(db=embedded_redis.TEST_CACHE_DB)
        settings.CACHES = {"default": {**settings.CACHES["default"], **test_cache}}
    if XDIST_WORKER:
        _keep_apart_from_the_other_test_processes(XDIST_WORKER)
    # Hashing a password properly takes about a second here, and many fixtures make
    # users; the tests check who may do what, not the hashing. Set for the whole run
    # (not per test) so that fixtures shared by a module hash quickly too.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_collection_modifyitems(items):
    """In each module, the tests that take rows the module shares (a fixture named
    ``*_of_the_module``, built in :func:`module_transaction`) run after the others.
    The shared rows stay until the module's last test; a test that builds the same
    rows itself (``load_demo``, a study of the same slug) must run before them."""
    # Only within each run of one module's tests, so the order pytest-django gives
    # (tests in transactions, then transactional tests, then those without the
    # database: a transactional test empties the tables) stays as it is.
    runs = [list(run) for _, run in itertools.groupby(items, key=lambda i: i.nodeid.split("::")[0])]
    items[:] = [
        item
        for run in runs
        for item in sorted(
            run, key=lambda i: any(name.endswith("_of_the_module") for name in i.fixturenames)
        )
    ]


def _keep_apart_from_the_other_test_processes(worker: str) -> None:
    """Tasks go to a queue of this process (the Celery workers that its tests start
    inherit it through the environment), and its cache entries carry its prefix."""
    from annotation_site.celery import app

    queue = f"tests-{worker}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    os.environ["CELERY_TASK_DEFAULT_QUEUE"] = queue
    app.conf.task_default_queue = queue
    cache = settings.CACHES["default"]
    if cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
        settings.CACHES = {
            "default": {
                **cache,
                "BACKEND": "tests.worker_cache.WorkerRedisCache",
                "KEY_PREFIX": worker,
            }
        }


def _missing(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _empty_cache():
    """The cache (join rate limits, among others) is shared by every process: each test
    starts with none of an earlier test's entries."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _no_automatic_analysis(settings):
    """The beat job asks for automatic analysis runs when ANALYSIS_AUTO_RUN is on (the
    default). Off in tests; the tests of that job turn it on."""
    settings.ANALYSIS_AUTO_RUN = False


def materials_doc(n_contexts: int = 3, stages=("GPT-2 stage", "GPT-3 stage")) -> dict:
    """A small, valid JSON materials document: per context a human reflection and two
    synthetic reflections per stage."""
    contexts = []
    for i in range(1, n_contexts + 1):
        contexts.append(
            {
                "id": f"dlg-{i}",
                "turns": [
                    {"role": "therapist", "text": f"What brings you here today ({i})?"},
                    {"role": "client", "text": f"I keep worrying about problem number {i}."},
                ],
                "human_reflection": f"Problem {i} has been weighing on you.",
                "synthetic": [
                    {
                        "stage": stage,
                        "source": stage.split()[0],
                        "text": f"{stage} candidate {j} for dialogue {i}.",
                        "generation": {"model": stage.split()[0].lower(), "decoding": "greedy"},
                    }
                    for stage in stages
                    for j in (1, 2)
                ],
            }
        )
    return {"contexts": contexts}


@contextmanager
def module_transaction(django_db_blocker):
    """A transaction around a module's tests, rolled back after the last one.

    Rows built inside it once (with the database unblocked) are seen by every test of
    the module: pytest-django runs each test in a savepoint nested in it and rolls the
    savepoint back, so each test starts from the rows as built and may change them.
    Keep the rows' primary keys, not the instances: a function-scoped fixture fetches
    them fresh, so nothing a test does to an instance reaches the next test.

    Not for modules with tests that need committed rows (``transaction=True``, a live
    server, threads) or that build a study of the same slug.
    """
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        # Marked as Django's TestCase marks its own transactions, so that services
        # taking transaction.atomic(durable=True) still run inside it.
        atomic._from_testcase = True
        atomic.__enter__()
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def make_study() -> Study:
    """The ``study`` fixture's study."""
    return study_create(
        slug="pilot",
        title="Pilot study",
        stages=[("GPT-2 stage", timedelta(days=3)), ("GPT-3 stage", timedelta(days=3))],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        seed=1234,
    )


@pytest.fixture
def study(db):
    """A draft study with two stages, two groups, the default categories and consent."""
    return make_study()


def load_materials(study: Study) -> Study:
    """Imports :func:`materials_doc` into ``study``."""
    materials_import(study=study, content=json.dumps(materials_doc()), fmt="json")
    return study


@pytest.fixture
def loaded_study(study):
    """``study`` with three contexts imported (one batch per stage and context)."""
    return load_materials(study)


def _form_value(value):
    if hasattr(value, "pk"):
        return value.pk
    if isinstance(value, timedelta):
        return str(value)
    if isinstance(value, list) and all(hasattr(v, "pk") for v in value):
        return [v.pk for v in value]  # a many-to-many field: the chosen rows
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def form_data(response) -> dict:
    """The values an admin change form was rendered with, inlines included, ready to
    POST back with a few changes."""
    form = response.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = _form_value(form.initial.get(name, field.initial))
        if value is not None:
            data[name] = value
    for inline in response.context["inline_admin_formsets"]:
        fs = inline.formset
        data[f"{fs.prefix}-TOTAL_FORMS"] = fs.total_form_count()
        data[f"{fs.prefix}-INITIAL_FORMS"] = fs.initial_form_count()
        for i, f in enumerate(fs.forms):
            for name, field in f.fields.items():
                value = _form_value(f.initial.get(name, field.initial))
                if value is not None and value is not False:
                    data[f"{fs.prefix}-{i}-{name}"] = value
    return data


# --------------------------------------------------------------------------- annotated study


CATEGORY_CYCLE = (
    frozenset({"off_topic"}),
    frozenset({"malformed", "parroting"}),
    frozenset({"dialogue_contradicting"}),
    frozenset({"malformed"}),
)


def scripted_answer(pseudonym: str, reflection: Reflection) -> Answer:
    """A deterministic but varied answer: attention checks are failed or passed per
    annotator, everything else depends on (annotator, reflection) through a hash."""
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
        return Answer(coherent=False, categories=frozenset({"off_topic"}))
    h = zlib.crc32(f"{pseudonym}|{reflection.text}".encode())
    if reflection.kind == Reflection.Kind.HUMAN and h % 4 != 0:
        return Answer(coherent=True, empathy=3 + h % 3)
    if h % 3 == 0:
        return Answer(coherent=True, empathy=1 + h % 5)
    categories = CATEGORY_CYCLE[h % len(CATEGORY_CYCLE)]
    most_evident = sorted(categories)[h % len(categories)] if len(categories) > 1 else None
    return Answer(coherent=False, categories=categories, most_evident=most_evident)


def annotate_study(study, *, annotators_per_group: int = 4) -> dict[str, list]:
    """Every batch gets k = 3 annotators of each group out of ``annotators_per_group``
    (rotating, so some human reflections recur for an annotator and some do not);
    every assignment is answered with :func:`scripted_answer` and submitted."""
    by_group = {}
    for group in study.groups.order_by("name"):
        annotators = annotators_create(group=group, count=annotators_per_group)
        by_group[group.name] = annotators
        batches = Batch.objects.filter(stage__study=study).order_by("stage__position", "context")
        for index, batch in enumerate(batches):
            chosen = [
                annotators[(index + offset) % annotators_per_group]
                for offset in range(study.overlap_k)
            ]
            for annotator in chosen:
                assignment = assignment_create(annotator=annotator, batch=batch)
                reflections = {r.pk: r for r in batch.reflections.all()}
                for reflection_id in assignment.order:
                    reflection = reflections[reflection_id]
                    judgement_record(
                        assignment=assignment,
                        reflection=reflection,
                        answer=scripted_answer(annotator.pseudonym, reflection),
                    )
                assignment_submit(assignment=assignment)
    return by_group


@pytest.fixture
def annotated_study(loaded_study):
    annotate_study(loaded_study)
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 36
    return loaded_study


def refusal_code(response) -> str:
    """The ``ErrorCode`` a refusal page carries in its markup (``data-code``)."""
    found = re.search(r'data-code="([a-z_]+)"', response.content.decode())
    assert found, "the page carries no refusal code"
    return found.group(1)


@pytest.fixture(scope="module")
def annotated_study_of_the_module(django_db_setup, django_db_blocker) -> int:
    """The primary key of an ``annotated_study`` built once per module (see
    :func:`module_transaction`)."""
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            study = load_materials(make_study())
            annotate_study(study)
            assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 36
        yield study.pk


@pytest.fixture
def shared_annotated_study(db, annotated_study_of_the_module) -> Study:
    """The module's annotated study, fresh from the database. A module whose tests
    all take ``annotated_study`` and no other study may define ``annotated_study`` as
    this one, to build it once."""
    return Study.objects.get(pk=annotated_study_of_the_module)
