"""Pairwise preferences and rankings (``analysis.metrics.protocol.pairwise``, ``.ranking``): every
statistic on a hand-worked example, cross-checked against an independent
computation (a logistic-regression fit of Bradley–Terry, scipy's Friedman test for
Kendall's W, the closed forms of the kappas)."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from analysis.metrics.protocol.pairwise import (
    BT_RIDGE,
    PAIRWISE_FRAME,
    bradley_terry,
    comparison_matrix,
    pair_outcomes,
    pairwise_cell,
    pairwise_groups_compared,
)
from analysis.metrics.protocol.ranking import (
    RANKING_FRAME,
    block_ranks,
    concordance,
    friedman,
    implied_pairs,
    kendalls_w,
    mean_ranks,
    mid_ranks,
    ranking_cell,
)
from analysis.metrics.protocol.systems import mean_absolute_effect

# One context, three raters, three pairs of Human (1), GPT-2 (2) and GPT-3 (3).
#   Human–GPT-2: r1 A unswapped (Human), r2 B swapped (Human: on the right), r3 Tie
#   Human–GPT-3: r1 B (GPT-3), r2 A (Human), r3 A swapped (GPT-3: on the left)
#   GPT-2–GPT-3: r1 A (GPT-2), r2 A (GPT-2), r3 B (GPT-3)
ANSWERS = [
    (1, 1, 2, "Human", "GPT-2", "r1", "A", False),
    (1, 1, 2, "Human", "GPT-2", "r2", "B", True),
    (1, 1, 2, "Human", "GPT-2", "r3", "Tie", False),
    (1, 1, 3, "Human", "GPT-3", "r1", "B", False),
    (1, 1, 3, "Human", "GPT-3", "r2", "A", False),
    (1, 1, 3, "Human", "GPT-3", "r3", "A", True),
    (1, 2, 3, "GPT-2", "GPT-3", "r1", "A", False),
    (1, 2, 3, "GPT-2", "GPT-3", "r2", "A", False),
    (1, 2, 3, "GPT-2", "GPT-3", "r3", "B", False),
]


def outcomes() -> pd.DataFrame:
    return pair_outcomes(pd.DataFrame(ANSWERS, columns=PAIRWISE_FRAME))


def test_outcomes_read_the_side_shown():
    result = outcomes()
    # Systems in name order: GPT-2 < GPT-3 < Human; a_score 1 when a won.
    assert result[["a", "b"]].values.tolist()[:3] == [["GPT-2", "Human"]] * 3
    assert result["a_score"].tolist() == [0, 0, 0.5, 1, 0, 1, 1, 1, 0]
    assert result["label"].tolist() == [
        "first", "first", "tie", "second", "first", "second", "first", "first", "second",
    ]  # fmt: skip


def test_the_pairs_table_by_hand():
    cell = pairwise_cell(outcomes(), resamples=0)
    by_pair = {(p["a"], p["b"]): p for p in cell["pairs"]}
    gpt = by_pair["GPT-2", "GPT-3"]
    assert (gpt["wins"], gpt["losses"], gpt["ties"], gpt["n"]) == (2, 1, 0, 3)
    assert gpt["win_rate"] == pytest.approx(2 / 3)
    # h = 2·asin(√(2/3)) − 2·asin(√(1/3)) = 1.9106 − 1.2310
    assert gpt["cohens_h"] == pytest.approx(0.679674, abs=1e-6)
    assert gpt["binomial_p"] == pytest.approx(1.0)  # 2 of 3: as likely as not
    human = by_pair["GPT-2", "Human"]
    assert (human["wins"], human["losses"], human["ties"]) == (0, 2, 1)
    assert human["cohens_h"] == pytest.approx(-math.pi)  # p = 0 against 1
    assert human["binomial_p"] == pytest.approx(0.5)  # 0 of 2: 2 × 1/4
    # Holm over three p-values (1, 0.5, 1): the smallest × 3, capped at 1.
    assert [p["p_holm"] for p in cell["pairs"]] == [1.0, 1.0, 1.0]
    assert cell["mean_abs_h"] == pytest.approx((0.679674 * 2 + math.pi) / 3, abs=1e-6)
    assert mean_absolute_effect([0.5, -1.5, float("nan")]) == 1.0
    assert mean_absolute_effect([]) is None


def test_position_bias_and_label_agreement_by_hand():
    cell = pairwise_cell(outcomes(), resamples=20, seed=3)
    position = cell["position"]
    assert (position["n_a"], position["n_b"], position["n_tie"]) == (5, 3, 1)
    assert position["share_a"] == 5 / 8
    assert position["binomial_p"] == pytest.approx(stats.binomtest(5, 8).pvalue)
    # Each pair: two raters agree, one differs: P̄ = 1/3 on every item.
    # Labels: first 5/9, second 3/9, tie 1/9 → P̄e = 35/81; Fleiss κ = (1/3 − 35/81)/(46/81).
    agreement = cell["agreement"]
    assert agreement["fleiss"]["value"] == pytest.approx((1 / 3 - 35 / 81) / (46 / 81))
    # Randolph with three possible labels: (1/3 − 1/3) / (2/3) = 0.
    assert agreement["randolph"]["value"] == pytest.approx(0.0)
    assert agreement["alpha"]["value"] is not None
    assert len(agreement["fleiss"]["ci"]) == 2


def logistic_strengths(matrix: np.ndarray) -> np.ndarray:
    """Bradley–Terry by maximum likelihood as a logistic regression: one row per
    ordered pair (i, j) with i's wins over j as successes, design +1 for i and −1 for
    j, the last system the reference; centred to mean 0."""
    k = len(matrix)
    rows, successes, failures = [], [], []
    for i in range(k):
        for j in range(i + 1, k):
            x = np.zeros(k)
            x[i], x[j] = 1, -1
            rows.append(x[:-1])
            successes.append(matrix[i, j])
            failures.append(matrix[j, i])
    endog = np.column_stack([successes, failures])
    fit = sm.GLM(endog, np.array(rows), family=sm.families.Binomial()).fit()
    strengths = np.append(fit.params, 0.0)
    return strengths - strengths.mean()


def test_bradley_terry_equals_a_logistic_regression_fit():
    rng = np.random.default_rng(7)
    truth = np.array([0.8, 0.2, -0.1, -0.9])
    matrix = np.zeros((4, 4))
    for i in range(4):
        for j in range(i + 1, 4):
            n = 60
            wins = rng.binomial(n, 1 / (1 + np.exp(truth[j] - truth[i])))
            matrix[i, j], matrix[j, i] = wins, n - wins
    strengths, regularised = bradley_terry(matrix)
    assert not regularised
    assert strengths == pytest.approx(logistic_strengths(matrix), abs=1e-4)
    assert strengths.mean() == pytest.approx(0.0)
    # The same counts through the frame: the wins, ties left out.
    assert comparison_matrix(outcomes(), ["GPT-2", "GPT-3", "Human"]).tolist() == [
        [0, 2, 0],
        [1, 0, 2],
        [2, 1, 0],
    ]


def test_ties_do_not_enter_the_strengths():
    """Bradley–Terry is fitted on the wins: answers that only tie add nothing, and a
    system that only ever tied has no wins to fit (the ridge)."""
    base = outcomes()
    ties = base.assign(a_score=0.5, label="tie", choice="Tie")
    with_ties = pd.concat([base, ties, ties])
    systems = ["GPT-2", "GPT-3", "Human"]
    assert (comparison_matrix(with_ties, systems) == comparison_matrix(base, systems)).all()
    only_ties = pairwise_cell(ties, resamples=5)
    assert only_ties["regularised"] is True
    assert all(p["win_rate"] is None for p in only_ties["pairs"])


def test_a_system_that_never_wins_needs_the_ridge():
    matrix = np.array([[0, 3, 2], [1, 0, 2], [0, 0, 0]], dtype=float)
    strengths, regularised = bradley_terry(matrix)
    assert regularised and BT_RIDGE > 0
    assert np.isfinite(strengths).all() and strengths.argmin() == 2


def test_strength_intervals_resample_contexts_and_are_reproducible():
    many = pd.concat(
        [pd.DataFrame(ANSWERS, columns=PAIRWISE_FRAME).assign(context=c) for c in range(1, 9)]
    )
    many.loc[many["context"] % 2 == 0, "choice"] = "A"
    one = pairwise_cell(pair_outcomes(many), resamples=200, seed=5)
    again = pairwise_cell(pair_outcomes(many), resamples=200, seed=5)
    assert one["strengths"] == again["strengths"]
    for entry in one["strengths"].values():
        low, high = entry["ci"]
        assert low <= entry["strength"] <= high
    assert one["n_contexts"] == 8 and one["n_pairs"] == 24


def test_groups_compared_by_hand():
    a = {
        "strengths": {s: {"strength": v} for s, v in zip("xyz", (1.0, 0.0, -1.0), strict=True)},
        "pairs": [
            {"a": "x", "b": "y", "cohens_h": 0.5},
            {"a": "x", "b": "z", "cohens_h": 1.0},
            {"a": "y", "b": "z", "cohens_h": -0.2},
        ],
        "mean_abs_h": 0.5667,
    }
    b = {
        "strengths": {s: {"strength": v} for s, v in zip("xyz", (0.0, 1.0, -1.0), strict=True)},
        "pairs": [
            {"a": "x", "b": "y", "cohens_h": -0.5},
            {"a": "x", "b": "z", "cohens_h": 1.0},
            {"a": "y", "b": "z", "cohens_h": 0.4},
        ],
        "mean_abs_h": 0.6333,
    }
    compared = pairwise_groups_compared(a, b)
    # Orders x > y > z and y > x > z: one discordant pair of three, tau = (2 − 1)/3.
    assert compared["kendall_tau"] == pytest.approx(1 / 3)
    assert compared["mean_abs_delta_h"] == pytest.approx((1.0 + 0.0 + 0.6) / 3)
    assert compared["mean_abs_h"] == [0.5667, 0.6333]


# --- rankings ---------------------------------------------------------------------------

# Two contexts; three raters rank four candidates (systems H, A, A, B) in context 1,
# two raters in context 2. Competition ranks, ties included.
RANKINGS = [
    (1, "r1", 11, "H", 1), (1, "r1", 12, "A", 2), (1, "r1", 13, "A", 3), (1, "r1", 14, "B", 4),
    (1, "r2", 11, "H", 1), (1, "r2", 12, "A", 3), (1, "r2", 13, "A", 2), (1, "r2", 14, "B", 4),
    (1, "r3", 11, "H", 2), (1, "r3", 12, "A", 1), (1, "r3", 13, "A", 3), (1, "r3", 14, "B", 4),
    (2, "r1", 21, "H", 1), (2, "r1", 22, "A", 2), (2, "r1", 23, "A", 2), (2, "r1", 24, "B", 4),
    (2, "r2", 21, "H", 4), (2, "r2", 22, "A", 1), (2, "r2", 23, "A", 2), (2, "r2", 24, "B", 3),
]  # fmt: skip


def rankings() -> pd.DataFrame:
    return pd.DataFrame(RANKINGS, columns=RANKING_FRAME)


def test_mid_ranks_and_block_ranks():
    frame = rankings()
    assert mid_ranks(frame).tolist()[12:16] == [1, 2.5, 2.5, 4]  # 1, 2, 2, 4
    # A ranking whose off-topic candidate (ranked third of five) is left out: 1, 2, 4, 5
    # reads 1, 2, 3, 4, and two such identical rankings agree perfectly (W = 1).
    gap = pd.DataFrame(
        [(1, r, c, s, k) for r in ("r1", "r2") for c, s, k in
         ((1, "H", 1), (2, "A", 2), (3, "A", 4), (4, "B", 5))],
        columns=RANKING_FRAME,
    )  # fmt: skip
    assert mid_ranks(gap).tolist() == [1, 2, 3, 4] * 2
    assert concordance(gap)["per_context"][0]["w"] == pytest.approx(1.0)
    blocks = block_ranks(frame).set_index(["rater", "context", "source"])["rank"]
    assert blocks["r1", 1, "A"] == 2.5  # (2 + 3) / 2
    assert blocks["r1", 2, "A"] == 2.5
    assert blocks["r2", 2, "H"] == 4


def test_mean_ranks_by_hand():
    systems = mean_ranks(block_ranks(rankings()), resamples=100, seed=1)
    # H: 1, 1, 2, 1, 4 over five blocks; A: 2.5 in every block but r3's (2).
    assert systems["H"]["mean_rank"] == pytest.approx(9 / 5)
    assert systems["A"]["mean_rank"] == pytest.approx((2.5 * 2 + 2 + 2.5 + 1.5) / 5)
    assert systems["B"]["n_blocks"] == 5
    low, high = systems["H"]["ci"]
    assert low <= 9 / 5 <= high


def test_kendalls_w_by_hand_and_against_friedman():
    ranks = np.array([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]])
    # Rank sums 4, 6, 8, 12 (mean 7.5): S = 35; W = 12·35 / (9·60) = 7/9.
    result = kendalls_w(ranks)
    assert result["w"] == pytest.approx(7 / 9)
    assert result["chi2"] == pytest.approx(7.0)
    assert result["chi2"] == pytest.approx(stats.friedmanchisquare(*ranks.T).statistic)
    # With ties (mid-ranks): the tie-corrected W's m(n − 1)W is Friedman's statistic.
    tied = np.array([[1, 2.5, 2.5, 4], [1, 2, 3, 4], [1.5, 1.5, 3, 4]])
    result = kendalls_w(tied)
    assert result["chi2"] == pytest.approx(stats.friedmanchisquare(*tied.T).statistic)
    assert result["p"] == pytest.approx(stats.friedmanchisquare(*tied.T).pvalue)
    assert kendalls_w(np.array([[1, 2]]))["w"] is None  # one rater
    assert kendalls_w(np.array([[1, 1], [1, 1]]))["w"] is None  # everything tied


def test_concordance_per_context_and_overall():
    result = concordance(rankings())
    first, second = result["per_context"]
    expected = kendalls_w(np.array([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]]))
    assert first["w"] == pytest.approx(expected["w"])
    assert second["n_raters"] == 2
    assert result["mean_w"] == pytest.approx((first["w"] + second["w"]) / 2)
    significant = [c["p"] < 0.05 for c in (first, second)]
    assert result["share_significant"] == sum(significant) / 2


def test_friedman_over_complete_blocks_against_the_closed_form():
    blocks = block_ranks(rankings())
    result = friedman(blocks)
    matrix = blocks.pivot_table(index=["rater", "context"], columns="source", values="rank")
    assert result["n_blocks"] == 5 and result["n_systems"] == 3
    assert result["statistic"] == pytest.approx(
        stats.friedmanchisquare(*matrix.to_numpy().T).statistic
    )
    # Two systems only: no test.
    two = blocks[blocks["source"] != "B"]
    assert friedman(two)["statistic"] is None


def test_rankings_imply_pairwise_wins():
    pairs = implied_pairs(rankings()[rankings()["rater"] == "r1"])
    got = {(r.first, r.second): r.choice for r in pairs.itertuples()}
    # Context 2, r1: 21 H 1, 22 A 2, 23 A 2, 24 B 4; the two A candidates are not a pair.
    assert got[(21, 22)] == "A" and got[(22, 24)] == "A" and (22, 23) not in got
    assert got[(11, 14)] == "A"
    assert len(pairs) == 2 * 5  # per context: 4 candidates, 6 pairs, minus the A–A pair
    cell = ranking_cell(rankings(), resamples=10)
    assert cell["n_rankings"] == 5 and cell["n_contexts"] == 2
    assert set(cell["systems"]) == {"A", "B", "H"}
