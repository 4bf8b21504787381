"""bench/load at tiny size, so it cannot rot: the real gunicorn with production
settings against the test database, two virtual annotators for a few seconds and the
floor view; and the floor URL exists only when BENCH_FLOOR_VIEW is on."""

import argparse
import importlib
import logging

import pytest
from django.db import connection
from django.urls import clear_url_caches

from annotation_site.bench_views import FLOOR_TABLE, floor_table_create
from bench.annotator_study import study_build
from bench.common import database_url_of
from bench.load.driver import FLOOR, SAVE, SAVE_LOOP, SAVE_ONLY, SHOW
from bench.load.run import ACKED, HEADER, Gunicorn, check_targets, collectstatic, run, server_env
from studies.models import Annotator, Judgement, LikertRating


def reload_urls():
    import annotation_site.urls

    importlib.reload(annotation_site.urls)
    clear_url_caches()


@pytest.fixture
def floor_on(settings):
    settings.BENCH_FLOOR_VIEW = True
    reload_urls()
    yield
    settings.BENCH_FLOOR_VIEW = False
    reload_urls()


def test_floor_url_is_404_without_the_setting(client, db, settings):
    assert settings.BENCH_FLOOR_VIEW is False
    assert client.post("/bench/floor/", {"coherent": "yes", "empathy": "4"}).status_code == 404


def test_floor_view_inserts_one_row_when_the_setting_is_on(client, db, floor_on):
    floor_table_create()
    response = client.post("/bench/floor/", {"coherent": "yes", "empathy": "4"})
    assert (response.status_code, response["Location"]) == (302, "/bench/floor/?saved=1")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coherent, empathy FROM {FLOOR_TABLE}")
        assert cursor.fetchall() == [(True, 4)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("instrument", ["coherence", "likert", "pairwise", "ranking"])
def test_load_run_at_tiny_size(tmp_path, capsys, instrument):
    logging.getLogger("httpx").setLevel(logging.WARNING)
    study_build(
        slug="load", n_contexts=6, per_group=6, k=3, m=5, synthetic=1, instrument=instrument,
        log=lambda _: None,
    )  # fmt: skip
    floor_table_create()
    tokens = list(Annotator.objects.values_list("access_token", flat=True))
    env = server_env(database_url_of(connection.settings_dict), str(tmp_path / "static"))
    collectstatic(env)
    args = argparse.Namespace(
        concurrency=[2],
        duration=3.0,
        mode="htmx",
        think=[0.01, 0.02],
        slices=2,
        instrument=instrument,
    )
    with Gunicorn(env, workers=2, worker_class="sync", threads=1) as server:
        levels = run(server, tokens, args)

    rows = {row["request"]: row for row in levels[0]["rows"]}
    assert {SAVE_ONLY, SAVE_LOOP, FLOOR, SHOW, SAVE, ACKED} <= rows.keys(), capsys.readouterr().out
    assert all(rows[kind]["count"] > 0 for kind in (SAVE_ONLY, SAVE_LOOP, FLOOR, SAVE))
    assert all(row["errors"] == 0 for row in rows.values()), levels[0]["error_samples"]
    # The save loop revises answers: some stored revisions are above 1, and each one
    # equals the saves acknowledged for it (the ACKED row's errors are the mismatches).
    # (A ranking is one answer per batch, stored as a rank per candidate.)
    answers = (
        Judgement.objects.values("assignment").distinct().count()
        if instrument == "ranking"
        else Judgement.objects.count()
    )
    assert rows[ACKED]["count"] == answers
    assert Judgement.objects.filter(revision__gt=1).exists()
    # A Likert journey's answers each hold a rating per dimension, and no Yes/No; a
    # pairwise one's a choice, a ranking one's a rank.
    likert = instrument == "likert"
    assert Judgement.objects.filter(coherent__isnull=True).exists() == (instrument != "coherence")
    assert LikertRating.objects.count() == (2 * Judgement.objects.count() if likert else 0)
    assert Judgement.objects.exclude(choice="").exists() == (instrument == "pairwise")
    assert Judgement.objects.filter(rank__isnull=False).exists() == (instrument == "ranking")
    assert [ok for _, ok in check_targets(levels)] == [True]
    out = capsys.readouterr().out
    assert SAVE_ONLY in out and "floor INSERT" in out
    assert HEADER.split()[0] == "annotators"
