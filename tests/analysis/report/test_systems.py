"""The report's system-level keys on a study annotated through the real services,
checked against a recomputation from the ORM rows (plain loops, fine in a test)."""

import json
import math
from collections import defaultdict

import pytest
from django.utils import timezone

from analysis.models import AutomaticScore
from analysis.report.build import REPORT_VERSION
from analysis.report.systems import SYSTEM_REPORT_KEYS
from analysis.services import analysis_run_compute
from studies.models import Reflection
from tests.analysis.report.test_build import counted_judgements

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_resamples": 50}


@pytest.fixture
def annotated_study(shared_annotated_study):
    """Built once for the module; the tests that build a study of their own (its slug)
    run first (see tests.conftest.pytest_collection_modifyitems)."""
    return shared_annotated_study


def systems_from_rows(rows):
    """Per (group, stage, source): judgements, items, coherent count, majority
    counts and empathy ratings, from the ORM rows."""
    result = defaultdict(lambda: {"n": 0, "yes": 0, "items": defaultdict(list), "empathy": []})
    for j in rows:
        key = (j.assignment.annotator.group.name, j.assignment.stage.name, j.reflection.source)
        entry = result[key]
        entry["n"] += 1
        entry["yes"] += j.coherent
        entry["items"][j.reflection_id].append(j.coherent)
        if j.empathy is not None:
            entry["empathy"].append(j.empathy)
    return result


def test_systems_match_the_rows(annotated_study):
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    json.dumps(report, allow_nan=False)
    assert report["report_version"] == REPORT_VERSION >= 2
    assert set(SYSTEM_REPORT_KEYS) <= set(report)
    expected = systems_from_rows(counted_judgements(annotated_study))
    for group in ("Expert", "Layperson"):
        entries = report["systems"][group]
        # Stage order, then source: each stage's GPT model, then "Human".
        assert [(e["stage"], e["source"]) for e in entries] == [
            ("GPT-2 stage", "GPT-2"),
            ("GPT-2 stage", "Human"),
            ("GPT-3 stage", "GPT-3"),
            ("GPT-3 stage", "Human"),
        ]
        for entry in entries:
            rows = expected[(group, entry["stage"], entry["source"])]
            rated = [v for v in rows["items"].values() if len(v) >= 2]
            assert entry["n_judgements"] == rows["n"]
            assert entry["n_items"] == len(rows["items"])
            assert entry["coherent_rate"] == pytest.approx(rows["yes"] / rows["n"])
            low, high = entry["coherent_rate_ci"]
            assert low <= entry["coherent_rate"] <= high
            assert entry["majority_coherent_rate"] == pytest.approx(
                sum(sum(v) > len(v) / 2 for v in rated) / len(rated)
            )
            assert entry["n_empathy"] == len(rows["empathy"])
            assert entry["empathy_mean"] == pytest.approx(
                sum(rows["empathy"]) / len(rows["empathy"])
            )
            assert sum(entry["empathy_distribution"].values()) == pytest.approx(1.0)
        pairs = report["system_pairs"][group]
        assert len(pairs) == 6
        first = pairs[0]
        a = expected[(group, first["a"]["stage"], first["a"]["source"])]
        b = expected[(group, first["b"]["stage"], first["b"]["source"])]
        assert first["cohens_h"] == pytest.approx(
            2 * math.asin(math.sqrt(a["yes"] / a["n"]))
            - 2 * math.asin(math.sqrt(b["yes"] / b["n"]))
        )
    (comparison,) = report["group_comparisons"]
    assert comparison["groups"] == ["Expert", "Layperson"]
    assert len(comparison["systems"]) == 4
    settings = report["generation_settings"]["Expert"]["GPT-2 stage"]
    # The fixture's synthetic reflections carry {"model": "gpt-2", "decoding": "greedy"}:
    # 6 items per stage; the human reflections have no metadata.
    assert settings["model"]["gpt-2"]["n_items"] == 6
    assert settings["model"]["gpt-2"]["coherent_rate"] == pytest.approx(
        expected[("Expert", "GPT-2 stage", "GPT-2")]["yes"] / 18
    )


def test_excluded_sources_are_never_systems_and_no_resamples_no_interval(annotated_study):
    report = analysis_run_compute(
        study=annotated_study,
        parameters={"bootstrap_resamples": 0, "excluded_sources": ["GPT-2"]},
    ).result
    for group, entries in report["systems"].items():
        assert "GPT-2" not in {e["source"] for e in entries}, group
        assert all(e["coherent_rate_ci"] == [None, None] for e in entries)
    assert all(
        "GPT-2" not in (p["a"]["source"], p["b"]["source"])
        for pairs in report["system_pairs"].values()
        for p in pairs
    )


def test_automatic_evaluators_per_source_and_per_system(annotated_study):
    stage = annotated_study.stages.get(position=1)
    reflections = Reflection.objects.filter(
        batch_items__batch__stage=stage, kind__in=["human", "synthetic"]
    ).distinct()
    AutomaticScore.objects.bulk_create(
        AutomaticScore(
            study=annotated_study,
            stage=stage,
            reflection=reflection,
            evaluator="bleu",
            score=float(len(reflection.text) % 7) + reflection.pk / 1000,
            imported_at=timezone.now(),
        )
        for reflection in reflections
    )
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    by_source = report["automatic_evaluators_by_source"]
    assert [(e["evaluator"], e["group"], e["stage"], e["source"]) for e in by_source] == [
        ("bleu", "Expert", "GPT-2 stage", "GPT-2"),
        ("bleu", "Expert", "GPT-2 stage", "Human"),
        ("bleu", "Layperson", "GPT-2 stage", "GPT-2"),
        ("bleu", "Layperson", "GPT-2 stage", "Human"),
    ]
    assert [e["n_items"] for e in by_source] == [6, 3, 6, 3]
    systems = report["automatic_evaluators_systems"]
    # Only the first stage is scored: two systems, too few for a correlation.
    assert [(e["evaluator"], e["group"], e["n_systems"], e["spearman"]) for e in systems] == [
        ("bleu", "Expert", 2, None),
        ("bleu", "Layperson", 2, None),
    ]


def test_a_report_without_judgements_has_empty_system_keys(loaded_study):
    report = analysis_run_compute(study=loaded_study, parameters=FAST).result
    assert {key: report[key] for key in SYSTEM_REPORT_KEYS} == {
        "systems": {},
        "system_pairs": {},
        "group_comparisons": [],
        "generation_settings": {},
        "generation_trends": {},
        "generation_crossed": {},
        "automatic_evaluators_by_source": [],
        "automatic_evaluators_systems": [],
    }
