"""The report's agreement on the sets of ticked categories, its agreement over time and
the diversity of each stage's candidates, from a study annotated through the real
services with submissions spread over days: checked against NLTK and a plain count of
the rows, and shown on the dashboard, in its CSV downloads and as a figure."""

import csv
import io
import itertools
from collections import defaultdict
from datetime import timedelta

import numpy as np
import pytest
from django.db.models import F
from django.urls import reverse
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance, masi_distance

from analysis.candidates.embeddings import embed
from analysis.metrics.diversity import self_bleu
from analysis.report.build import REPORT_VERSION
from analysis.report.descriptions import stage_categories_null
from analysis.report.diversity import DIVERSITY_MAX_PAIRS
from analysis.services import analysis_run_compute, candidate_texts_embed
from studies.models import (
    Assignment,
    BatchItem,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
)
from studies.protocol import category_selected
from tests.factories import StaffUserFactory

pytestmark = pytest.mark.django_db
PARAMETERS = {"bootstrap_resamples": 50}


@pytest.fixture
def annotated_study(shared_annotated_study):
    return shared_annotated_study


@pytest.fixture
def spread_study(annotated_study):
    """Submissions moved 0, 1 or 2 days later (by assignment id)."""
    for assignment in Assignment.objects.filter(stage__study=annotated_study):
        Assignment.objects.filter(pk=assignment.pk).update(
            submitted_at=F("submitted_at") + timedelta(days=assignment.pk % 3)
        )
    return annotated_study


def counted_rows(study):
    """(group, stage) → the judgements that count, with their sets and days."""
    bits = dict(ErrorCategory.objects.filter(study=study).values_list("slug", "bit"))
    cells = defaultdict(list)
    judgements = (
        Judgement.objects.analysed()
        .coherence()
        .filter(assignment__stage__study=study)
        .select_related("assignment__annotator__group", "assignment__stage")
    )
    for j in judgements:
        ticked = frozenset(s for s, bit in bits.items() if category_selected(j.error_flags, bit))
        cells[(j.assignment.annotator.group.name, j.assignment.stage.name)].append(
            {
                "item": j.reflection_id,
                "rater": j.assignment.annotator.pseudonym,
                "coherent": j.coherent,
                "set": ticked,
                "day": j.assignment.submitted_at.date().isoformat(),
            }
        )
    return cells


def test_set_alpha_matches_nltk_in_every_cell(spread_study):
    report = analysis_run_compute(study=spread_study, parameters=PARAMETERS).result
    assert report["report_version"] == REPORT_VERSION >= 14
    checked = 0
    for (group, stage), rows in counted_rows(spread_study).items():
        result = report["groups"][group]["stages"][stage]["category_sets"]
        incoherent_items = {r["item"] for r in rows} - {r["item"] for r in rows if r["coherent"]}
        with_sets = [r for r in rows if r["item"] in incoherent_items and r["set"]]
        assert result["n_items_all_incoherent"] == len(incoherent_items)
        assert result["n_judgements"] == len(with_sets)
        assert result["n_sets"] == len({r["set"] for r in with_sets})
        for metric, distance in (("masi", masi_distance), ("jaccard", jaccard_distance)):
            value = result[metric]["krippendorff_alpha"]
            if value is None:
                continue
            task = AnnotationTask(
                data=[(r["rater"], r["item"], r["set"]) for r in with_sets], distance=distance
            )
            assert value == pytest.approx(task.alpha()), (group, stage, metric)
            low, high = result[metric]["krippendorff_alpha_ci"]
            assert low <= high
            checked += 1
    assert checked >= 4  # both distances in at least two cells


def test_agreement_over_time_counts_the_submissions_of_each_day(spread_study):
    report = analysis_run_compute(study=spread_study, parameters=PARAMETERS).result
    for (group, stage), rows in counted_rows(spread_study).items():
        cell = report["groups"][group]["stages"][stage]
        entries = cell["agreement_over_time"]
        days = sorted({r["day"] for r in rows})
        assert [e["day"] for e in entries] == days
        assert [e["n_judgements"] for e in entries] == [
            sum(r["day"] <= day for r in rows) for day in days
        ]
        last = entries[-1]
        assert last["fleiss_kappa"] == pytest.approx(cell["coherence"]["fleiss_kappa"])
        assert last["randolph_kappa"] == pytest.approx(cell["coherence"]["randolph_kappa"])
    assert len(days) == 3


def test_the_dashboard_shows_both_with_their_csv_and_the_figure(client, spread_study):
    run = analysis_run_compute(study=spread_study, parameters=PARAMETERS)
    client.force_login(StaffUserFactory(is_superuser=True))
    html = client.get(reverse("analysis:dashboard", args=[spread_study.slug])).content.decode()
    assert "Agreement on the set of error categories" in html
    assert "α, MASI" in html and "α, Jaccard" in html
    assert 'id="agreement-over-time"' in html
    assert "Agreement over time" in html and "<svg" in html
    response = client.get(
        reverse("analysis:table_csv", args=[spread_study.slug, run.pk, "agreement-over-time"])
    )
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    first = run.result["group_order"][0]
    stage = run.result["stage_order"][0]
    expected = run.result["groups"][first]["stages"][stage]["agreement_over_time"]
    counts = [
        (r["day"], int(r["value"]))
        for r in rows
        if (r["group"], r["stage"], r["statistic"]) == (first, stage, "n_judgements")
    ]
    assert counts == [(e["day"], e["n_judgements"]) for e in expected]
    kappas = {
        r["day"]: float(r["value"])
        for r in rows
        if (r["group"], r["stage"], r["statistic"]) == (first, stage, "fleiss_kappa") and r["value"]
    }
    assert kappas[expected[-1]["day"]] == pytest.approx(expected[-1]["fleiss_kappa"])
    svg = client.get(
        reverse("analysis:plot_svg", args=[spread_study.slug, run.pk, "agreement-over-time"])
    )
    assert svg.status_code == 200
    body = svg.content.decode()
    assert body.startswith("<svg") and expected[-1]["day"] in body


def test_a_stage_offering_no_categories_has_no_set_agreement():
    """Nobody could tick a category there: the numbers are null, not 0 judgements."""
    cell = {
        "error_categories": {"off_topic": {"majority_agreement": 0.5, "n_items_flagged": 2}},
        "label_distribution": {},
        "most_evident_error": {"raw": {"fleiss_kappa": 0.2}},
        "category_sets": {
            "n_items_all_incoherent": 4, "n_items": 0, "n_judgements": 0, "n_sets": 0,
            "masi": {"krippendorff_alpha": None, "krippendorff_alpha_ci": [None, None]},
        },
    }  # fmt: skip
    nulled = stage_categories_null(cell, ["off_topic"], offered=[])
    assert nulled["category_sets"]["n_items_all_incoherent"] is None
    assert nulled["category_sets"]["n_judgements"] is None
    kept = stage_categories_null(cell, ["off_topic", "parroting"], offered=["off_topic"])
    assert kept["category_sets"] == cell["category_sets"]  # offered some: computed over them


def test_the_diversity_of_each_stages_candidates(client, spread_study):
    """Self-BLEU per stage over the batches' synthetic candidates, all sources and each,
    as the metric gives it on the texts read from the database; the mean cosine once the
    worker's step after the import has embedded them."""
    candidate_texts_embed(study_id=spread_study.pk)
    run = analysis_run_compute(study=spread_study, parameters=PARAMETERS)
    block = run.result["diversity"]
    assert block["max_pairs"] == DIVERSITY_MAX_PAIRS
    for stage in Stage.objects.filter(study=spread_study):
        items = BatchItem.objects.filter(
            batch__stage=stage, reflection__kind=Reflection.Kind.SYNTHETIC
        ).values_list("batch__context_id", "reflection__source", "reflection__text")
        contexts, sources, texts = zip(*items, strict=True)
        entry = block["stages"][stage.name]
        expected = self_bleu(list(texts), list(contexts), max_pairs=DIVERSITY_MAX_PAIRS)
        assert entry["all"]["n_pairs"] == expected["n_pairs"] > 0
        if expected["n_pairs"] <= DIVERSITY_MAX_PAIRS:
            assert entry["all"]["self_bleu"] == pytest.approx(expected["self_bleu"])
        assert set(entry["sources"]) == set(sources)
        # The cosine, pair by pair from the cached embeddings (the report's is in closed form).
        vectors = embed(list(texts))
        similarities = [
            float(vectors[i] @ vectors[j])
            for i, j in itertools.permutations(range(len(texts)), 2)
            if contexts[i] == contexts[j]
        ]
        assert entry["all"]["mean_cosine"] == pytest.approx(np.mean(similarities), abs=1e-6)
    client.force_login(StaffUserFactory(is_superuser=True))
    html = client.get(reverse("analysis:dashboard", args=[spread_study.slug])).content.decode()
    assert "Diversity of the synthetic candidates (Self-BLEU, cosine)" in html
    assert "Mean cosine" in html
    assert "Self-BLEU-4" in html and "All sources" in html
