"""The report's ``pairwise`` and ``ranking`` blocks on a study annotated through the
services (stage 1 compares pairs, stage 2 ranks; two laypeople and an expert), each
count checked against the stored answers, and a study without such stages empty."""

import csv
import io
from collections import Counter

import pytest

from analysis.report.comparisons import comparisons_build, comparisons_empty
from analysis.report.text import report_summary_lines
from analysis.report.tidy_csv import table_csv
from analysis.services import analysis_run_compute
from analysis.tables import report_tables
from studies.models import Judgement, Reflection
from studies.protocol import pair_winner
from tests.studies.comparison_fixtures import answered_comparisons

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_resamples": 20}


def plain_pair_counts(group_prefix: str) -> Counter:
    """(winner's source, loser's source) or ("tie", a, b) per answer of the group,
    the attention pair left out."""
    counts: Counter = Counter()
    for j in Judgement.objects.filter(
        opponent__isnull=False, assignment__group__name=group_prefix
    ).select_related("reflection", "opponent"):
        if j.reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            continue
        winner = pair_winner(j.choice, j.shown_swapped)
        a, b = j.reflection.source, j.opponent.source
        if winner is None:
            counts["tie", *sorted((a, b))] += 1
        else:
            counts[(a, b) if winner == 0 else (b, a)] += 1
    return counts


def test_the_blocks_match_the_stored_answers(study):
    answered_comparisons(study)
    report = analysis_run_compute(study=study, parameters=FAST).result
    pairwise, ranking = report["pairwise"], report["ranking"]
    assert report["report_version"] >= 9
    # The stages in the study's order (a mapping's keys do not keep it).
    assert pairwise["stages"] == ["GPT-2 stage", "GPT-3 stage"]
    assert ranking["stages"] == ["GPT-3 stage"]
    for group in ("Layperson", "Expert"):
        cell = pairwise["cells"][group]["GPT-2 stage"]
        plain = plain_pair_counts(group)
        for pair in cell["pairs"]:
            a, b = pair["a"], pair["b"]
            assert (pair["wins"], pair["losses"], pair["ties"]) == (
                plain[a, b],
                plain[b, a],
                plain["tie", a, b],
            )
        assert cell["n_answers"] == sum(plain.values())
        assert cell["position"]["n_a"] + cell["position"]["n_b"] + cell["position"]["n_tie"] == sum(
            plain.values()
        )
        assert set(cell["strengths"]) == {"Human", "GPT-2", "GPT-3"}
    # The ranking stage: its implied pairs are a derived cell, without position bias.
    derived = pairwise["cells"]["Layperson"]["GPT-3 stage"]
    assert derived["derived"] is True and derived["position"] is None
    ranked = ranking["cells"]["Layperson"]["GPT-3 stage"]
    assert ranked["n_rankings"] == 2 and ranked["n_contexts"] == 1
    assert set(ranked["systems"]) == {"Human", "GPT-2", "GPT-3"}
    # Layperson 1 ranked 1, 2, 2, 4 and Layperson 2 the reverse: W is low.
    assert ranked["concordance"]["per_context"][0]["n_raters"] == 2
    between = [b for b in pairwise["between_groups"] if b["stage"] == "GPT-2 stage"]
    assert len(between) == 1 and between[0]["groups"] == ["Expert", "Layperson"]


def test_a_group_left_with_one_system_has_no_cell(study):
    """Excluding every source but one leaves nothing to compare: no cell, no crash."""
    answered_comparisons(study)
    report = analysis_run_compute(
        study=study, parameters={**FAST, "excluded_sources": ["GPT-2", "GPT-3"]}
    ).result
    assert report["pairwise"]["cells"] == {}
    ranked = report["ranking"]["cells"]["Layperson"]["GPT-3 stage"]
    assert set(ranked["systems"]) == {"Human"}


def test_a_study_without_pairwise_or_ranking_stages_has_empty_blocks():
    assert comparisons_build(None, resamples=0, seed=0) == comparisons_empty()
    assert comparisons_empty() == {
        "pairwise": {"stages": [], "cells": {}, "between_groups": []},
        "ranking": {"stages": [], "cells": {}},
    }


def test_the_tables_show_the_blocks_everywhere(study):
    """The tidy CSV and the terminal summary read the same tables as the dashboard."""
    answered_comparisons(study)
    report = analysis_run_compute(study=study, parameters=FAST).result
    tables = {t.slug: t for t in report_tables(report)}
    slugs = {
        "pairwise",
        "pairwise-strengths",
        "pairwise-agreement",
        "pairwise-groups",
        "ranking",
        "ranking-concordance",
    }
    assert slugs <= set(tables)
    rows = list(csv.DictReader(io.StringIO(table_csv(tables["pairwise"]))))
    cell = report["pairwise"]["cells"]["Expert"]["GPT-2 stage"]
    pair = cell["pairs"][0]
    (wins,) = [
        r
        for r in rows
        if (r["group"], r["stage"], r["a"], r["b"], r["statistic"])
        == ("Expert", "GPT-2 stage", pair["a"], pair["b"], "wins")
    ]
    assert int(float(wins["value"])) == pair["wins"]
    ranked = list(csv.DictReader(io.StringIO(table_csv(tables["ranking"]))))
    systems = report["ranking"]["cells"]["Layperson"]["GPT-3 stage"]["systems"]
    (mean,) = [
        r
        for r in ranked
        if (r["group"], r["source"], r["statistic"]) == ("Layperson", "Human", "mean_rank")
    ]
    assert float(mean["value"]) == pytest.approx(systems["Human"]["mean_rank"])
    lines = "\n".join(report_summary_lines(report))
    assert "Pairwise preference: pairs of systems" in lines
    assert "Ranking: mean rank per system" in lines
    plain = {**report, **comparisons_empty()}
    assert not slugs & {t.slug for t in report_tables(plain)}


def test_the_figures_show_the_tables_numbers(study, admin_client):
    from django.urls import reverse

    from analysis.plots import PLOTS
    from analysis.plots.svg import percent

    answered_comparisons(study)
    run = analysis_run_compute(study=study, parameters=FAST)
    report = run.result
    wins = PLOTS["pairwise-wins"](report)
    cell = report["pairwise"]["cells"]["Expert"]["GPT-2 stage"]
    for pair in cell["pairs"]:
        if pair["win_rate"] is not None:
            decisive = pair["wins"] + pair["losses"]
            assert (
                f"{pair['a']} preferred to {pair['b']} in {percent(pair['win_rate'])} of {decisive}"
                in wins
            )
            assert (
                f"{pair['b']} preferred to {pair['a']} in {percent(1 - pair['win_rate'])}" in wins
            )
    assert "Layperson · GPT-3 stage (implied by rankings)" in wins
    strengths = PLOTS["pairwise-strengths"](report)
    human = cell["strengths"]["Human"]["strength"]
    assert f"Human: {human:.2f}" in strengths
    for name in ("pairwise-wins", "pairwise-strengths"):
        # Nothing of any instrument, or nothing of these stages beside other answers.
        nothing = {**report, **comparisons_empty()}
        assert "No judgements analysed yet." in PLOTS[name](nothing)
        others = {**nothing, "group_order": ["Layperson"]}
        assert "No pairwise answers yet." in PLOTS[name](others)
    page = admin_client.get(reverse("analysis:dashboard", args=[study.slug])).content.decode()
    assert 'id="pairwise-wins-title"' in page and 'id="pairwise-strengths-title"' in page
    svg = admin_client.get(reverse("analysis:plot_svg", args=[study.slug, run.pk, "pairwise-wins"]))
    assert svg.status_code == 200 and svg.content.decode() == wins
