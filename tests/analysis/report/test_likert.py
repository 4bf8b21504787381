"""The report's ``likert`` block on a study annotated through the services: stage 1
rates fluency (5 points, the attention check's dimension) and warmth (a slider,
"cannot judge" offered); stage 2 keeps the coherence protocol. Every number is
checked against a plain computation from the stored ratings."""

import csv
import io
import zlib
from collections import defaultdict
from datetime import timedelta

import krippendorff
import numpy as np
import pytest

from analysis.report.likert import likert_build, likert_empty
from analysis.report.text import report_summary_lines
from analysis.report.tidy_csv import table_csv
from analysis.selectors.likert import likert_data
from analysis.services import analysis_run_compute
from analysis.tables import report_tables
from studies.models import Batch, Judgement, LikertRating, Reflection, Study
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
    study_create,
)
from tests.conftest import load_materials, make_study, module_transaction
from tests.studies.likert_fixtures import make_likert

FAST = {"bootstrap_resamples": 0}


def rating(pseudonym: str, reflection: Reflection, dimension: str) -> int | None:
    """A deterministic rating per annotator, candidate and dimension (stable names,
    not ids); warmth is now and then "cannot judge"."""
    h = zlib.crc32(f"{pseudonym}|{reflection.text}|{dimension}".encode())
    if dimension == "fluency":
        return 1 if reflection.kind == Reflection.Kind.ATTENTION_CHECK else 1 + h % 5
    return None if h % 9 == 0 else h % 101


def annotate(study) -> None:
    stage = study.stages.get(position=1)
    make_likert(stage)
    for group in study.groups.order_by("name"):
        for annotator in annotators_create(group=group, count=3):
            for batch in Batch.objects.filter(stage=stage):
                assignment = assignment_create(annotator=annotator, batch=batch)
                for rid in assignment.order:
                    reflection = Reflection.objects.get(pk=rid)
                    ratings = {
                        name: rating(annotator.pseudonym, reflection, name)
                        for name in ("fluency", "warmth")
                    }
                    judgement_record(
                        assignment=assignment,
                        reflection=reflection,
                        answer=Answer(coherent=None, ratings=ratings),
                    )
                assignment_submit(assignment=assignment)


@pytest.fixture(scope="module")
def likert_study_of_the_module(django_db_setup, django_db_blocker) -> int:
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            study = load_materials(make_study())
            annotate(study)
        yield study.pk


@pytest.fixture
def likert_study(db, likert_study_of_the_module):
    return Study.objects.get(pk=likert_study_of_the_module)


def plain_cells(study) -> dict:
    """(group, source, dimension) → the judged values, "cannot judge" count, and item
    → values, from the rows (attention checks left out)."""
    cells = defaultdict(lambda: {"values": [], "cannot": 0, "items": defaultdict(list)})
    ratings = LikertRating.objects.filter(
        judgement__assignment__stage__study=study, judgement__assignment__status="submitted"
    ).exclude(judgement__reflection__kind=Reflection.Kind.ATTENTION_CHECK)
    for r in ratings.select_related(
        "dimension", "judgement__reflection", "judgement__assignment__group"
    ):
        key = (
            r.judgement.assignment.group.name,
            r.judgement.reflection.source,
            r.dimension.name,
        )
        if r.cannot_judge:
            cells[key]["cannot"] += 1
        else:
            cells[key]["values"].append(r.value)
            cells[key]["items"][r.judgement.reflection_id].append(r.value)
    return cells


def test_the_likert_block_matches_a_plain_computation(likert_study):
    report = analysis_run_compute(study=likert_study, parameters=FAST).result
    block = report["likert"]
    assert report["report_version"] >= 7
    stage_1 = likert_study.stages.get(position=1).name
    assert [d["name"] for d in block["dimensions"][stage_1]] == ["fluency", "warmth"]
    assert [d["scale"] for d in block["dimensions"][stage_1]] == ["5", "slider"]
    plain = plain_cells(likert_study)
    checked = 0
    for (group, source, dimension), expected in plain.items():
        cell = block["cells"][group][stage_1][dimension]["systems"][source]
        values = np.array(expected["values"], dtype=float)
        assert cell["n_ratings"] == len(values)
        assert cell["n_cannot_judge"] == expected["cannot"]
        assert cell["n_items"] == len(expected["items"])
        assert cell["mean"] == pytest.approx(values.mean())
        assert cell["median"] == pytest.approx(np.median(values))
        if len(values) > 1:
            assert cell["sd"] == pytest.approx(values.std(ddof=1))
        if dimension == "fluency":
            assert sum(cell["shares"].values()) == pytest.approx(1.0)
            assert cell["shares"]["3"] == pytest.approx(np.mean(values == 3))
        else:
            assert cell["shares"] is None
        checked += 1
    assert checked == 2 * 2 * 2  # groups × stage 1's sources (Human, GPT-2) × dimensions
    assert sum(c["cannot"] for c in plain.values()) > 0  # the data has "cannot judge"
    # Alpha per group, stage and dimension, every system together: the krippendorff
    # package on the raters × items matrix of the stored ratings.
    expert = LikertRating.objects.filter(
        judgement__assignment__group__name="Expert",
        judgement__assignment__status="submitted",
        dimension__name="fluency",
        cannot_judge=False,
    ).exclude(judgement__reflection__kind=Reflection.Kind.ATTENTION_CHECK)
    raters = sorted(set(expert.values_list("judgement__assignment__annotator_id", flat=True)))
    items = sorted(set(expert.values_list("judgement__reflection_id", flat=True)))
    matrix = np.full((len(raters), len(items)), np.nan)
    for rater, item_id, value in expert.values_list(
        "judgement__assignment__annotator_id", "judgement__reflection_id", "value"
    ):
        matrix[raters.index(rater), items.index(item_id)] = value
    expected = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert block["cells"]["Expert"][stage_1]["fluency"]["alpha"] == pytest.approx(expected)
    pairs = block["cells"]["Expert"][stage_1]["fluency"]["system_pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [("GPT-2", "Human")]
    assert pairs[0]["p_holm"] == pairs[0]["p"]  # one pair: Holm changes nothing
    (between,) = [b for b in block["between_groups"] if b["dimension"] == "fluency"]
    assert between["groups"] == ["Expert", "Layperson"]
    assert set(between["systems"]) == {"Human", "GPT-2"}
    # The coherence protocol's blocks hold stage 2 only (no stage 2 answers here).
    assert report["n_judgements"] == 0


def test_the_attention_check_passed_and_is_left_out(likert_study):
    judgements = Judgement.objects.filter(assignment__stage__study=likert_study)
    assert not judgements.filter(assignment__attention_passed=False).exists()
    data = likert_data(study_id=likert_study.pk)
    checks = Reflection.objects.filter(
        context__study=likert_study, kind=Reflection.Kind.ATTENTION_CHECK
    ).values_list("pk", flat=True)
    assert not set(data.ratings["item"]) & set(checks)


def test_a_study_without_likert_stages_has_an_empty_block(likert_study):
    plain = study_create(slug="plain", title="Plain", stages=[("Only", timedelta(0))], groups=["A"])
    block = likert_build(likert_data(study_id=plain.pk), resamples=0, seed=0)
    assert block == likert_empty()
    assert block == {
        "dimensions": {},
        "cells": {},
        "between_groups": [],
        "automatic_evaluators": [],
    }


def test_the_likert_tables_show_the_block_everywhere(likert_study, client):
    """The dashboard, the tidy CSV and the terminal summary read the same tables."""
    report = analysis_run_compute(study=likert_study, parameters=FAST).result
    tables = {t.slug: t for t in report_tables(report)}
    assert {"likert", "likert-pairs", "likert-groups"} <= set(tables)
    cells = report["likert"]["cells"]
    stage_1 = likert_study.stages.get(position=1).name
    rows = list(csv.DictReader(io.StringIO(table_csv(tables["likert"]))))
    expected = cells["Expert"][stage_1]["warmth"]["systems"]["Human"]
    (row,) = [
        r
        for r in rows
        if (r["group"], r["dimension"], r["source"], r["statistic"])
        == ("Expert", "warmth", "Human", "mean")
    ]
    assert float(row["value"]) == pytest.approx(expected["mean"])
    (cannot,) = [
        r
        for r in rows
        if (r["group"], r["dimension"], r["source"], r["statistic"])
        == ("Expert", "warmth", "Human", "n_cannot_judge")
    ]
    assert int(float(cannot["value"])) == expected["n_cannot_judge"]
    lines = "\n".join(report_summary_lines(report))
    assert "Likert ratings" in lines
    # A report without Likert stages has none of these tables.
    plain = {**report, "likert": likert_empty()}
    assert not {"likert", "likert-pairs", "likert-groups"} & {t.slug for t in report_tables(plain)}


def test_an_automatic_evaluator_is_correlated_with_each_group_s_item_means(likert_study):
    """An evaluator's scores (here: the reflection's length) against each group's item
    means per dimension: Spearman's rho as scipy computes it from the stored ratings."""
    from django.utils import timezone
    from scipy import stats

    from analysis.models import AutomaticScore

    stage = likert_study.stages.get(position=1)
    candidates = Reflection.objects.filter(batch_items__batch__stage=stage).exclude(
        kind=Reflection.Kind.ATTENTION_CHECK
    )
    AutomaticScore.objects.bulk_create(
        AutomaticScore(
            study=likert_study,
            stage=stage,
            reflection=r,
            evaluator="length",
            score=len(r.text) % 7,
            imported_at=timezone.now(),
        )
        for r in candidates
    )
    report = analysis_run_compute(study=likert_study, parameters=FAST).result
    entries = report["likert"]["automatic_evaluators"]
    assert {(e["group"], e["dimension"]) for e in entries} == {
        (g, d) for g in ("Expert", "Layperson") for d in ("fluency", "warmth")
    }
    scores = {r.pk: len(r.text) % 7 for r in candidates}
    plain = plain_cells(likert_study)
    for entry in entries:
        means = {}
        for (group, _source, dimension), cell in plain.items():
            if (group, dimension) == (entry["group"], entry["dimension"]):
                means.update({item: np.mean(v) for item, v in cell["items"].items()})
        items = sorted(means)
        expected = stats.spearmanr([scores[i] for i in items], [means[i] for i in items])
        assert entry["n_items"] == len(items)
        assert entry["spearman"] == pytest.approx(expected.statistic)
    tables = {t.slug for t in report_tables(report)}
    assert "likert-evaluators" in tables


def test_the_likert_figure_draws_each_dimension_from_the_report(likert_study, admin_client):
    """A panel per dimension, a row per group and system: on points the shares as
    percentages that sum to 100, on the slider the mean of the table."""
    import xml.etree.ElementTree as ET

    from django.urls import reverse

    from analysis.plots import likert_svg
    from analysis.plots.svg import percents_summing_to_100

    run = analysis_run_compute(study=likert_study, parameters=FAST)
    report = run.result
    svg = likert_svg(report)
    ET.fromstring(svg)  # well-formed
    stage_1 = likert_study.stages.get(position=1).name
    assert f"{stage_1} · fluency: The response is fluent." in svg
    assert f"{stage_1} · warmth: The response is warm." in svg
    cell = report["likert"]["cells"]["Expert"][stage_1]
    shares = [cell["fluency"]["systems"]["Human"]["shares"][str(p)] for p in range(1, 6)]
    for point, shown in enumerate(percents_summing_to_100(shares), start=1):
        if shares[point - 1]:
            assert f"Expert · Human: {point}" in svg and shown in svg
    warmth = cell["warmth"]["systems"]["Human"]["mean"]
    assert f"Expert · Human: mean {warmth:.2f}" in svg
    page = admin_client.get(reverse("analysis:dashboard", args=[likert_study.slug]))
    assert 'aria-labelledby="likert-title likert-desc"' in page.content.decode()
    endpoint = reverse("analysis:plot_svg", args=[likert_study.slug, run.pk, "likert"])
    assert admin_client.get(endpoint).content.decode() == svg
    assert likert_svg({"likert": {}}).count("No judgements analysed yet.") == 1
    assert likert_svg({"group_order": ["A"], "likert": {}}).count("No Likert ratings yet.") == 1


def test_the_likert_figure_escapes_names():
    """Group, stage, system and statement as typed ("<", "&"), escaped in the source
    and read back by an XML parser."""
    import xml.etree.ElementTree as ET

    import pandas as pd

    from analysis.plots import likert_svg
    from analysis.report.likert import LikertData

    ratings = pd.DataFrame(
        {
            "group": ["Lay<person>"] * 4,
            "stage": ["Stage <1>"] * 4,
            "source": ["GPT&2"] * 4,
            "dimension": ["fluency"] * 4,
            "item": [1, 1, 2, 2],
            "rater": [1, 2, 1, 2],
            "value": [1.0, 2.0, 4.0, 5.0],
            "cannot_judge": [False] * 4,
        }
    )
    dimensions = {
        "Stage <1>": [
            {"name": "fluency", "statement": "Fluent & <clear>.", "scale": "5", "points": 5,
             "labels": ["<poor>", "", "", "", "good"]},
        ]
    }  # fmt: skip
    block = likert_build(LikertData(ratings=ratings, dimensions=dimensions), resamples=0, seed=0)
    svg = likert_svg({"likert": block, "stage_order": [], "group_order": []})
    assert "<person>" not in svg and "Lay&lt;person&gt;" in svg
    text = " ".join(ET.fromstring(svg).itertext())
    assert "Lay<person> · GPT&2" in text and "Stage <1> · fluency: Fluent & <clear>." in text
