"""Likert measures (analysis.metrics.protocol.likert), each pinned by a hand-worked
example and checked against an independent computation."""

import math
import statistics

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.metrics.bootstrap import mean_ci, resample_weights
from analysis.metrics.protocol.likert import (
    item_means,
    likert_alpha,
    likert_cell,
    likert_groups_compared,
    likert_item_table,
    likert_system_pairs,
)


def ratings(rows) -> pd.DataFrame:
    """(item, rater, value or "cj") → the frame ``likert_cell`` reads."""
    return pd.DataFrame(
        [
            {
                "item": item,
                "rater": rater,
                "value": np.nan if value == "cj" else float(value),
                "cannot_judge": value == "cj",
            }
            for item, rater, value in rows
        ]
    )


CELL = ratings(
    [
        ("A", "r1", 4),
        ("A", "r2", 5),
        ("B", "r1", 2),
        ("B", "r2", "cj"),
        ("B", "r3", 2),
        ("C", "r1", 5),
    ]
)


def test_a_cell_by_hand():
    """Rated: 4, 5, 2, 2, 5 (one "cannot judge"): mean 18 / 5 = 3.6; squared
    deviations .16 + 1.96 + 2.56 + 2.56 + 1.96 = 9.2, SD = √(9.2 / 4) = 1.5166; median
    4; shares 2: 2/5, 4: 1/5, 5: 2/5."""
    cell = likert_cell(CELL, points=5, resamples=0)
    assert cell["n_ratings"] == 5 and cell["n_cannot_judge"] == 1 and cell["n_items"] == 3
    assert cell["mean"] == pytest.approx(3.6)
    assert cell["sd"] == pytest.approx(math.sqrt(9.2 / 4))
    assert cell["median"] == 4
    assert cell["shares"] == pytest.approx({"1": 0, "2": 0.4, "3": 0, "4": 0.2, "5": 0.4})
    assert cell["mean_ci"] == [None, None]  # no resamples asked


def test_alpha_is_krippendorff_s_on_the_reliability_matrix():
    """Ordinal on points, interval on a slider; "cannot judge" is a missing value.
    Cross-check: the krippendorff package on the raters × items matrix."""
    matrix = np.array(
        [
            [4, 2, 5],  # r1 on A, B, C
            [5, np.nan, np.nan],  # r2 ("cannot judge" on B)
            [np.nan, 2, np.nan],  # r3
        ]
    )
    expected = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert likert_alpha(CELL, points=5) == pytest.approx(expected)
    slider = CELL.assign(value=CELL["value"] * 20)
    expected = krippendorff.alpha(
        reliability_data=matrix * 20,
        level_of_measurement="interval",
        value_domain=list(range(101)),
    )
    assert likert_alpha(slider, points=None) == pytest.approx(expected)
    cell = likert_cell(slider, points=None, resamples=0)
    assert cell["shares"] is None
    assert cell["mean"] == pytest.approx(72.0)


def test_the_mean_ci_resamples_items_as_an_expanded_resample_would():
    """Each resample's mean equals the mean of the individual ratings of the items it
    drew, the items expanded one by one."""
    per_item = np.array([[9, 2], [4, 2], [5, 1]])  # A: 4 + 5, B: 2 + 2, C: 5
    patterns, weights = resample_weights(per_item, resamples=200, seed=7)
    by_pattern = {tuple(row): [[4, 5], [2, 2], [5]][i] for i, row in enumerate(per_item)}
    for weight in weights:
        expanded = [
            value
            for pattern, copies in zip(patterns, weight, strict=True)
            for _ in range(int(copies))
            for value in by_pattern[tuple(pattern)]
        ]
        resampled = (weight @ patterns[:, 0]) / (weight @ patterns[:, 1])
        assert resampled == pytest.approx(np.mean(expanded))
    low, high = mean_ci(per_item, resamples=200, seed=7)
    assert 2 <= low <= 3.6 <= high <= 5
    cell = likert_cell(CELL, points=5, resamples=200, seed=7)
    assert cell["mean_ci"] == [low, high]


def test_cannot_judge_alone_gives_counts_and_no_statistics():
    only = ratings([("A", "r1", "cj")])
    cell = likert_cell(only, points=5, resamples=10)
    assert cell["n_cannot_judge"] == 1 and cell["n_ratings"] == 0
    assert all(cell[key] is None for key in ("mean", "sd", "median", "shares"))
    assert likert_alpha(only, points=5) is None


def test_item_means_leave_cannot_judge_out():
    assert item_means(CELL).to_dict() == {"A": 4.5, "B": 2.0, "C": 5.0}


X = pd.Series([1.0, 2.0, 3.0], index=["i1", "i2", "i3"])
Y = pd.Series([4.0, 5.0, 6.0], index=["i4", "i5", "i6"])
Z = pd.Series([2.0, 3.0, 4.0], index=["i7", "i8", "i9"])


def test_two_systems_by_hand():
    """Item means 1, 2, 3 against 4, 5, 6: means 2 and 5, both variances 1, pooled
    SD 1, d = −3. Mann–Whitney (no ties, so exact): U = 0, two-sided
    p = 2 · 1/C(6, 3) = 0.1."""
    (pair,) = likert_system_pairs({"X": X, "Y": Y})
    assert (pair["a"], pair["b"]) == ("X", "Y")
    assert pair["cohens_d"] == pytest.approx(-3.0)
    assert pair["p"] == pytest.approx(0.1) and pair["p_holm"] == pytest.approx(0.1)


def test_holm_over_a_group_s_pairs_by_hand():
    pairs = likert_system_pairs({"X": X, "Y": Y, "Z": Z})
    assert [(p["a"], p["b"]) for p in pairs] == [("X", "Y"), ("X", "Z"), ("Y", "Z")]
    assert [p["cohens_d"] for p in pairs] == pytest.approx([-3.0, -1.0, 2.0])
    raw = [p["p"] for p in pairs]
    for p, (a, b) in zip(raw, [(X, Y), (X, Z), (Y, Z)], strict=True):
        assert p == pytest.approx(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    # Holm by hand: sort ascending, multiply by m, m − 1, …, keep it non-decreasing.
    order = np.argsort(raw)
    adjusted, running = [0.0] * 3, 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * raw[index]))
        adjusted[index] = running
    assert [p["p_holm"] for p in pairs] == pytest.approx(adjusted)


def test_two_groups_by_hand():
    """Group B rated X's items 1, 3, 2 and Y's 4, 4, 5. Both order Y above X:
    tau-b = 1. Spearman on X's items: ranks (1, 2, 3) and (1, 3, 2), Σd² = 2,
    rho = 1 − 6 · 2 / (3 · 8) = 0.5. The same three X means on both sides: p = 1."""
    b_x = pd.Series([1.0, 3.0, 2.0], index=["i1", "i2", "i3"])
    b_y = pd.Series([4.0, 4.0, 5.0], index=["i4", "i5", "i6"])
    compared = likert_groups_compared({"X": X, "Y": Y}, {"X": b_x, "Y": b_y})
    assert compared["kendall_tau_b"] == pytest.approx(1.0)
    assert compared["systems"]["X"]["spearman"] == pytest.approx(0.5)
    assert compared["systems"]["X"]["n_items_both"] == 3
    assert compared["systems"]["X"]["p"] == pytest.approx(1.0)
    expected = stats.mannwhitneyu(Y, b_y, alternative="two-sided").pvalue
    assert compared["systems"]["Y"]["p"] == pytest.approx(expected)


def test_undefined_comparisons_are_none():
    same = pd.Series([3.0, 3.0], index=["i1", "i2"])
    (pair,) = likert_system_pairs({"X": same, "Y": same.copy()})
    assert pair["cohens_d"] is None and pair["p"] is None and pair["p_holm"] is None
    one_system = likert_groups_compared({"X": X}, {"X": X})
    assert one_system["kendall_tau_b"] is None


def test_the_item_table_by_hand():
    """Item 1: 4, 5 and "cannot judge"; item 2: one rating, 2; item 3: "cannot judge"
    only. Worked by hand: item 1 has 3 raters, 1 cannot judge, mean 4.5, SD √0.5,
    median 4.5; item 2 mean 2 and no SD; item 3 no mean."""
    ratings = pd.DataFrame(
        {
            "dimension": ["fluency"] * 5,
            "item": [1, 1, 1, 2, 3],
            "rater": [10, 11, 12, 10, 11],
            "value": [4.0, 5.0, np.nan, 2.0, np.nan],
            "cannot_judge": [False, False, True, False, True],
        }
    )
    table = likert_item_table(ratings, ["dimension"]).set_index("item")
    assert table.loc[1, "n_raters"] == 3 and table.loc[1, "n_cannot_judge"] == 1
    assert table.loc[1, "mean"] == 4.5 and table.loc[1, "median"] == 4.5
    assert table.loc[1, "sd"] == pytest.approx(statistics.stdev([4, 5]))  # √0.5
    assert table.loc[1, "sd"] == pytest.approx(0.5**0.5)
    assert table.loc[2, "mean"] == 2 and np.isnan(table.loc[2, "sd"])
    assert table.loc[3, "n_cannot_judge"] == 1 and np.isnan(table.loc[3, "mean"])
