"""The benchmarks at tiny size, so their code cannot rot (the real runs: bench/README.md).

The measured commands run as subprocesses against the test database, so the data is
committed (``transaction=True``) and flushed afterwards.
"""

import json

import pytest
from django.db import connection

from bench.analysis.floor import floor_kappas, floor_likert_means, floor_pairwise_counts
from bench.analysis.run import bench_analysis_size, results_table
from bench.common import database_url_of, results_write
from bench.export.run import bench_export
from bench.export.run import results_table as export_table
from bench.generate import JUDGEMENTS_PER_CONTEXT, generate_study, study_validate
from studies.models import Assignment, Judgement, LikertRating

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_generated_study_is_valid_and_has_the_protocol_shape():
    generated = generate_study(slug="smoke-gen", n_judgements=2000, agreement=0.8, seed=1)
    assert abs(generated.n_judgements - 2000) <= JUDGEMENTS_PER_CONTEXT // 2
    assert study_validate(study_id=generated.study_id) == []
    judgements = Judgement.objects.filter(assignment__stage__study_id=generated.study_id)
    assert judgements.count() == generated.n_judgement_rows
    assert judgements.exclude(reflection__kind="attention_check").count() == generated.n_judgements
    # Multi-category No answers, empathy on Yes, some recurring assignments.
    assert judgements.filter(coherent=False, most_evident_bit__isnull=False).exists()
    assert judgements.filter(coherent=True, empathy__isnull=False).exists()
    assert any(
        bin(flags).count("1") > 1 for flags in judgements.values_list("error_flags", flat=True)
    )
    assert Assignment.objects.filter(stage__study_id=generated.study_id, is_recurring=True).exists()
    kappas = floor_kappas(study_id=generated.study_id)
    assert len(kappas) == 4  # 2 groups × 2 stages
    assert all(0.3 < fleiss < 0.95 for fleiss, _ in kappas.values())


def test_analysis_benchmark_runs_and_reports(tmp_path):
    generated = generate_study(slug="smoke-analysis", n_judgements=2000)
    result = bench_analysis_size(
        database_url=database_url_of(connection.settings_dict),
        slug="smoke-analysis",
        n_judgements=generated.n_judgements,
        resamples=20,
    )
    assert result["judgements_in_report"] == generated.n_judgements
    assert result["floor_cells"] == 4
    assert result["targets"] is None  # targets apply from 1,000,000 judgements
    assert result["peak_rss_mib"] > 0 and result["floor_s"] > 0
    printed = results_table([result])
    assert f"{generated.n_judgements:,}" in printed and "n/a" in printed
    path = results_write("analysis-smoke", {"results": [result]}, directory=tmp_path)
    assert json.loads(path.read_text())["results"][0]["size"] == generated.n_judgements


def test_the_likert_analysis_benchmark_runs_and_reports():
    """A Likert study: a rating per dimension of each answer, valid, its attention
    checks mostly passed; the floor's means agree with the report's."""
    generated = generate_study(slug="smoke-likert", n_judgements=1000, likert=True)
    assert study_validate(study_id=generated.study_id) == []
    ratings = LikertRating.objects.filter(judgement__assignment__stage__study_id=generated.study_id)
    assert ratings.count() == 2 * generated.n_judgement_rows
    assert ratings.filter(cannot_judge=True).exists()
    assert not Judgement.objects.filter(
        assignment__stage__study_id=generated.study_id, coherent__isnull=False
    ).exists()
    means = floor_likert_means(study_id=generated.study_id)
    assert len(means) == 2 * 2 * 3 * 2  # groups × stages × systems (Human, model, BART) × dims
    result = bench_analysis_size(
        database_url=database_url_of(connection.settings_dict),
        slug="smoke-likert",
        n_judgements=2 * generated.n_judgements,
        resamples=20,
        likert=True,
    )
    assert result["judgements_in_report"] == 2 * generated.n_judgements
    assert result["floor_cells"] == len(means)
    assert result["targets"] is None


def test_the_pairwise_analysis_benchmark_runs_and_reports():
    """A pairwise study: every pair of its batches answered, valid, its attention pairs
    mostly passed; the floor's win counts are the report's."""
    generated = generate_study(slug="smoke-pairwise", n_judgements=1000, pairwise=True)
    assert study_validate(study_id=generated.study_id) == []
    answers = Judgement.objects.filter(assignment__stage__study_id=generated.study_id)
    assert answers.count() == generated.n_judgement_rows
    assert not answers.filter(opponent__isnull=True).exists()
    assert answers.filter(choice="Tie").exists()
    counts = floor_pairwise_counts(study_id=generated.study_id)
    assert len(counts) == 2 * 2 * 3  # groups × stages × pairs of Human, model and BART
    result = bench_analysis_size(
        database_url=database_url_of(connection.settings_dict),
        slug="smoke-pairwise",
        n_judgements=generated.n_judgements,
        resamples=20,
        pairwise=True,
    )
    assert result["judgements_in_report"] == generated.n_judgements
    assert result["floor_cells"] == len(counts)
    assert result["targets"] is None


def test_export_benchmark_files_agree(tmp_path):
    generated = generate_study(slug="smoke-export", n_judgements=2000)
    result = bench_export(
        database_url=database_url_of(connection.settings_dict),
        study_id=generated.study_id,
        slug="smoke-export",
        workdir=tmp_path,
    )
    assert result["rows"] == {
        name: generated.n_judgements for name in ("floor", "command", "endpoint")
    }
    assert result["endpoint_identical_to_command"]
    assert result["floor_rows_differing"] == 0
    assert result["consistent"]
    assert "GET endpoint (gunicorn)" in export_table(result)


def test_the_candidate_selection_benchmark_runs_and_reports(tmp_path):
    from bench.candidates.run import bench_candidates, pool_document
    from bench.candidates.run import results_table as candidates_table

    document = pool_document(contexts=3, candidates=30)
    texts = [c["text"] for c in document["contexts"][0]["synthetic"]]
    assert len(texts) == 30 and len(set(texts)) < 30  # duplicates, as decodings give them
    result = bench_candidates(
        database_url=database_url_of(connection.settings_dict),
        contexts=3,
        candidates=30,
        workdir=tmp_path,
    )
    assert result["counts"]["candidates"] == 90
    assert result["counts"]["exact_duplicates"] > 0
    assert result["same_selection_twice"] is True
    assert result["targets"]["first_selection_under_600_s"] is True
    assert "3 × 30" in candidates_table(result)
