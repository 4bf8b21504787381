"""Tests of analysis.metrics: hand-computed examples, independent cross-checks, edge cases.

Plain pytest, no database.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import metrics

# --------------------------------------------------------------------------- helpers


def long_from_table(table: list[list[int]], categories: list) -> pd.DataFrame:
    """Long ratings from an items × categories count table (rater ids r0, r1, ...)."""
    rows = []
    for item, counts in enumerate(table):
        labels = [c for c, n in zip(categories, counts, strict=True) for _ in range(n)]
        rows += [(item, f"r{k}", lab) for k, lab in enumerate(labels)]
    return pd.DataFrame(rows, columns=["item", "rater", "label"])


def long_from_matrix(matrix: np.ndarray) -> pd.DataFrame:
    """Long ratings from an items × raters matrix (NaN = missing)."""
    frame = pd.DataFrame(matrix).rename_axis(index="item", columns="rater")
    return frame.stack().rename("label").reset_index()


def random_ratings(seed: int, n_items: int = 60, n_raters: int = 3, p_coherent=0.7):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < p_coherent
    noise = rng.random((n_items, n_raters)) < 0.25
    labels = np.where(noise, rng.random((n_items, n_raters)) < 0.5, truth[:, None])
    return long_from_matrix(labels.astype(int))


def direct_kappa(counts: np.ndarray, *, uniform_q: int | None = None) -> float:
    """Fleiss (1971) / Randolph (2005) written out, independently of statsmodels."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(axis=1)[0]
    p_i = ((counts * (counts - 1)).sum(axis=1)) / (n * (n - 1))
    p_bar = p_i.mean()
    if uniform_q is not None:
        p_e = 1 / uniform_q
    else:
        p_j = counts.sum(axis=0) / counts.sum()
        p_e = (p_j**2).sum()
    return (p_bar - p_e) / (1 - p_e)


def direct_alpha(matrix: np.ndarray, *, level: str, domain: list) -> float:
    """Krippendorff's alpha from the coincidence matrix, written with loops.

    o_ck = Σ_u (#pairs (c, k) of ratings in unit u) / (m_u − 1), over units with
    m_u ≥ 2; n_c = Σ_k o_ck; α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck.
    Nominal δ² = [c ≠ k]; ordinal δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)².
    """
    index = {v: i for i, v in enumerate(domain)}
    v = len(domain)
    o = np.zeros((v, v))
    for unit in matrix:
        vals = [x for x in unit if not (isinstance(x, float) and math.isnan(x))]
        m = len(vals)
        if m < 2:
            continue
        for a, b in itertools.permutations(range(m), 2):
            o[index[vals[a]], index[vals[b]]] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    delta = np.zeros((v, v))
    for c in range(v):
        for k in range(v):
            if level == "nominal":
                delta[c, k] = float(c != k)
            else:
                lo, hi = min(c, k), max(c, k)
                delta[c, k] = (n_c[lo : hi + 1].sum() - (n_c[c] + n_c[k]) / 2) ** 2
    return 1 - (n - 1) * (o * delta).sum() / (np.outer(n_c, n_c) * delta).sum()


def assert_no_nan(value) -> None:
    """No NaN anywhere in a (nested) result."""
    if isinstance(value, dict):
        for inner in value.values():
            assert_no_nan(inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            assert_no_nan(inner)
    elif isinstance(value, float):
        assert math.isfinite(value)


# Fleiss (1971)-style example as on Wikipedia "Fleiss' kappa": 10 subjects,
# 14 raters, 5 categories.
WIKIPEDIA_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Three items, three raters, binary label (1 = coherent):
#   item 0: 1 1 0   item 1: 0 0 0   item 2: 1 1 1
SMALL = long_from_table([[1, 2], [3, 0], [0, 3]], [0, 1])


# --------------------------------------------------------------------------- Landis & Koch


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (-1.0, "poor"),
        (-0.01, "poor"),
        # Banded as shown with 3 decimals: -0.0006 shows -0.001 (poor); -0.0004 and
        # floating-point noise below 0 show 0.000, which is slight like 0 itself.
        (-0.0006, "poor"),
        (-0.0004, "slight"),
        (-1e-16, "slight"),
        (0.0, "slight"),
        # Half-open bands, upper bound included: 0.200 slight, 0.201 fair.
        (0.20, "slight"),
        (0.2004, "slight"),
        (0.2006, "fair"),
        (0.201, "fair"),
        (0.40, "fair"),
        (0.401, "moderate"),
        (0.41, "moderate"),
        (0.60, "moderate"),
        (0.601, "substantial"),
        (0.80, "substantial"),
        (0.8004, "substantial"),
        (0.8006, "almost perfect"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
        (1.0004, "almost perfect"),
        (1.0 + 1e-12, "almost perfect"),
        (None, None),
        (float("nan"), None),
    ],
)
def test_landis_koch_band_boundaries(value, band):
    assert metrics.landis_koch_band(value) == band


def test_landis_koch_band_uses_the_display_precision():
    assert metrics.DISPLAY_DIGITS == 3
    # With 2 decimals 0.204 shows 0.20 and is slight; with 3 it shows 0.204, fair.
    assert metrics.landis_koch_band(0.204, digits=2) == "slight"
    assert metrics.landis_koch_band(0.204) == "fair"


@pytest.mark.parametrize("value", [1.0006, 1.5])
def test_landis_koch_band_rejects_values_above_one(value):
    with pytest.raises(ValueError, match="greater than 1"):
        metrics.landis_koch_band(value)


# --------------------------------------------------------------------------- Fleiss


def test_fleiss_kappa_small_hand_computed_example():
    # P_i = Σ n_ij(n_ij − 1) / (n(n − 1)), n = 3:
    #   item 0: (1·0 + 2·1)/6 = 1/3; items 1, 2: 6/6 = 1 → P̄ = (1/3 + 2)/3 = 7/9.
    # p_0 = 4/9, p_1 = 5/9 → P̄e = 16/81 + 25/81 = 41/81.
    # κ = (63/81 − 41/81) / (40/81) = 22/40 = 0.55.
    result = metrics.fleiss_kappa(ratings=SMALL)
    assert result == {"value": pytest.approx(0.55), "n_items": 3, "raters_per_item": 3}


def test_fleiss_kappa_reproduces_the_wikipedia_fleiss_example():
    # Wikipedia: p_j = 0.143 0.200 0.279 0.150 0.229, P̄ = 0.378, P̄e = 0.213,
    # κ = (0.378 − 0.213) / (1 − 0.213) = 0.210.
    ratings = long_from_table(WIKIPEDIA_TABLE, list("abcde"))
    result = metrics.fleiss_kappa(ratings=ratings)
    assert result["value"] == pytest.approx(0.210, abs=5e-4)
    assert result["n_items"] == 10
    assert result["raters_per_item"] == 14


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_matches_direct_formula_on_random_data(seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(5, rng.dirichlet([1, 1, 1, 1]), size=40)
    ratings = long_from_table(counts.tolist(), list("wxyz"))
    assert metrics.fleiss_kappa(ratings=ratings)["value"] == pytest.approx(direct_kappa(counts))


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_and_krippendorff_alpha_obey_their_exact_relation(seed):
    # On complete nominal data with n = N·m ratings in total,
    # D_o = 1 − P̄ and D_e = n/(n − 1) · (1 − P̄e), hence
    # α = 1 − (n − 1)/n · (1 − κ): two independent packages, one identity.
    ratings = random_ratings(seed, n_items=50, n_raters=4)
    kappa = metrics.fleiss_kappa(ratings=ratings)["value"]
    alpha = metrics.krippendorff_alpha(ratings=ratings, level="nominal")
    n = len(ratings)
    assert alpha == pytest.approx(1 - (n - 1) / n * (1 - kappa))


def test_fleiss_kappa_is_none_when_all_raters_agree_on_one_category():
    # P̄e = 1: statsmodels divides 0 by 0 and returns NaN.
    ratings = long_from_table([[3, 0]] * 4, [0, 1])
    result = metrics.fleiss_kappa(ratings=ratings, categories=[0, 1])
    assert result == {"value": None, "n_items": 4, "raters_per_item": 3}


def test_fleiss_kappa_is_perfect_when_raters_agree_on_different_categories():
    ratings = long_from_table([[3, 0], [0, 3]], [0, 1])
    assert metrics.fleiss_kappa(ratings=ratings)["value"] == pytest.approx(1.0)


def test_fleiss_kappa_on_one_item_follows_the_formula():
    # One item rated 1, 1, 0: P̄ = 1/3, P̄e = (1/3)² + (2/3)² = 5/9,
    # κ = (1/3 − 5/9) / (4/9) = −0.5.
    ratings = long_from_table([[1, 2]], [0, 1])
    assert metrics.fleiss_kappa(ratings=ratings)["value"] == pytest.approx(-0.5)


def test_fleiss_kappa_ignores_a_category_nobody_used():
    with_unused = metrics.fleiss_kappa(ratings=SMALL, categories=[0, 1, 2])
    assert with_unused["value"] == pytest.approx(0.55)


def test_fleiss_kappa_uses_only_items_with_the_modal_number_of_raters():
    # Items 0-2 have 3 raters (SMALL), item 9 has 2 raters and is dropped.
    extra = pd.DataFrame({"item": [9, 9], "rater": ["r0", "r1"], "label": [0, 1]})
    result = metrics.fleiss_kappa(ratings=pd.concat([SMALL, extra]))
    assert result == {"value": pytest.approx(0.55), "n_items": 3, "raters_per_item": 3}


def test_fleiss_kappa_modal_tie_prefers_the_larger_rater_count():
    # Two items with 3 raters (SMALL items 0, 1) and two items with 2 raters.
    three = SMALL[SMALL["item"].isin([0, 1])]
    two = pd.DataFrame({"item": [7, 7, 8, 8], "rater": ["r0", "r1"] * 2, "label": [1, 1, 0, 0]})
    result = metrics.fleiss_kappa(ratings=pd.concat([three, two]))
    # Items 0 (1 1 0) and 1 (0 0 0): P̄ = (1/3 + 1)/2 = 2/3, p_0 = 4/6, p_1 = 2/6,
    # P̄e = 4/9 + 1/9 = 5/9, κ = (2/3 − 5/9)/(4/9) = 0.25.
    assert result == {"value": pytest.approx(0.25), "n_items": 2, "raters_per_item": 3}


def test_kappas_are_none_for_a_group_with_one_annotator():
    ratings = pd.DataFrame({"item": [1, 2, 3], "rater": "solo", "label": [0, 1, 1]})
    assert metrics.fleiss_kappa(ratings=ratings) == {
        "value": None,
        "n_items": 3,
        "raters_per_item": 1,
    }
    assert metrics.randolph_kappa(ratings=ratings, categories=[0, 1])["value"] is None
    assert metrics.krippendorff_alpha(ratings=ratings) is None


def test_kappas_on_no_ratings():
    empty = pd.DataFrame({"item": [], "rater": [], "label": []})
    assert metrics.fleiss_kappa(ratings=empty) == {
        "value": None,
        "n_items": 0,
        "raters_per_item": None,
    }
    assert metrics.krippendorff_alpha(ratings=empty) is None


def test_kappa_rejects_duplicate_ratings_and_unknown_labels():
    with pytest.raises(ValueError, match="more than one row"):
        metrics.fleiss_kappa(ratings=pd.concat([SMALL, SMALL.head(1)]))
    with pytest.raises(ValueError, match="not among the categories"):
        metrics.randolph_kappa(ratings=SMALL, categories=[0])


def test_kappa_honours_column_names():
    renamed = SMALL.rename(columns={"item": "reflection", "rater": "annotator", "label": "ok"})
    result = metrics.fleiss_kappa(ratings=renamed, item="reflection", rater="annotator", label="ok")
    assert result["value"] == pytest.approx(0.55)


# --------------------------------------------------------------------------- Randolph


def test_randolph_kappa_small_hand_computed_example():
    # P̄ = 7/9 (see the Fleiss example), q = 2: κ = (7/9 − 1/2)/(1/2) = 5/9.
    result = metrics.randolph_kappa(ratings=SMALL, categories=[0, 1])
    assert result == {"value": pytest.approx(5 / 9), "n_items": 3, "raters_per_item": 3}


def test_randolph_kappa_counts_a_label_nobody_used():
    # q = 3 although only two labels occur: κ = (7/9 − 1/3)/(2/3) = 2/3.
    result = metrics.randolph_kappa(ratings=SMALL, categories=[0, 1, 2])
    assert result["value"] == pytest.approx(2 / 3)


def test_randolph_kappa_is_one_when_everyone_says_coherent():
    # Fleiss collapses (None) here; Randolph: P̄ = 1 → κ = (1 − 1/2)/(1/2) = 1.
    ratings = long_from_table([[0, 3]] * 5, [False, True])
    assert metrics.randolph_kappa(ratings=ratings, categories=[False, True])["value"] == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_randolph_kappa_matches_closed_form_on_random_data(seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(3, [0.7, 0.2, 0.1, 0.0, 0.0], size=50)
    ratings = long_from_table(counts.tolist(), list("abcde"))
    result = metrics.randolph_kappa(ratings=ratings, categories=list("abcde"))
    assert result["value"] == pytest.approx(direct_kappa(counts, uniform_q=5))


# --------------------------------------------------------------------------- Krippendorff


def test_krippendorff_alpha_small_hand_computed_example():
    # Coincidences: o_00 = 0 + 3·2/2 = 3, o_11 = 2·1/2 + 3·2/2 = 4,
    # o_01 = o_10 = 2·1/2 = 1; n_0 = 4, n_1 = 5, n = 9.
    # α = 1 − (n − 1)(o_01 + o_10) / (2 n_0 n_1) = 1 − 8·2/40 = 0.6.
    assert metrics.krippendorff_alpha(ratings=SMALL) == pytest.approx(0.6)


def test_krippendorff_alpha_reproduces_the_krippendorff_reference_example():
    # Krippendorff's (2011) example with missing data: nominal α = 0.691,
    # (the package documents 0.691358).
    nan = np.nan
    matrix = np.array(
        [
            [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
            [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
            [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
        ]
    ).T
    ratings = long_from_matrix(matrix)
    assert metrics.krippendorff_alpha(ratings=ratings) == pytest.approx(0.691358, abs=1e-6)


def test_krippendorff_alpha_ordinal_reference_example():
    # The krippendorff package's ordinal example (Hayes & Krippendorff): α = 0.815.
    nan = np.nan
    matrix = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    ).T
    ratings = long_from_matrix(matrix)
    value = metrics.krippendorff_alpha(ratings=ratings, level="ordinal", values=[1, 2, 3, 4, 5])
    assert value == pytest.approx(0.815, abs=5e-4)


@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_nominal_matches_direct_coincidence_formula(seed):
    ratings = random_ratings(seed, n_items=40, n_raters=3)
    matrix = ratings.pivot(index="item", columns="rater", values="label").to_numpy(dtype=float)
    expected = direct_alpha(matrix, level="nominal", domain=[0.0, 1.0])
    assert metrics.krippendorff_alpha(ratings=ratings) == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_ordinal_with_missing_data_matches_direct_formula(seed):
    # Coherence-score-like values 0..3 on a 0..4 scale (4 never used), ~30 % missing.
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 4, size=(40, 1))
    matrix = np.clip(base + rng.integers(-1, 2, size=(40, 4)), 0, 3).astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    ratings = long_from_matrix(matrix)
    domain = [0.0, 1.0, 2.0, 3.0, 4.0]
    value = metrics.krippendorff_alpha(ratings=ratings, level="ordinal", values=domain)
    assert value == pytest.approx(direct_alpha(matrix, level="ordinal", domain=domain))


def test_krippendorff_alpha_is_none_without_variation():
    ratings = long_from_table([[0, 3]] * 4, [0, 1])
    assert metrics.krippendorff_alpha(ratings=ratings, values=[0, 1]) is None
    assert metrics.krippendorff_alpha(ratings=ratings) is None


def test_krippendorff_alpha_is_none_for_one_item():
    # A single unit gives α ≡ 0 whatever the ratings, so it is reported as undefined.
    ratings = long_from_table([[1, 2]], [0, 1])
    assert metrics.krippendorff_alpha(ratings=ratings) is None


def test_krippendorff_alpha_ignores_an_unused_value_on_the_nominal_scale():
    assert metrics.krippendorff_alpha(ratings=SMALL, values=[0, 1, 2]) == pytest.approx(0.6)


def test_krippendorff_alpha_accepts_string_labels_and_rejects_unknown_ones():
    labels = SMALL.assign(label=SMALL["label"].map({0: "no", 1: "yes"}))
    assert metrics.krippendorff_alpha(ratings=labels) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="not among the categories"):
        metrics.krippendorff_alpha(ratings=labels, values=["yes"])


# --------------------------------------------------------------------------- majority agreement


def test_majority_agreement_ratio_hand_computed_example():
    # Coherent given by 3, 2, 1, 0 of 3 raters on items 0..3:
    # majority (≥ 2 of 3) on items 0, 1; at least one on items 0, 1, 2 → 2/3.
    # Incoherent given by 0, 1, 2, 3: majority on items 2, 3; at least one on 1, 2, 3 → 2/3.
    ratings = long_from_table([[0, 3], [1, 2], [2, 1], [3, 0]], [False, True])
    assert metrics.majority_agreement_ratio(ratings=ratings, label_given="label") == pytest.approx(
        2 / 3
    )
    assert metrics.majority_agreement_ratio(
        ratings=ratings, label_given=~ratings["label"]
    ) == pytest.approx(2 / 3)


def test_majority_agreement_ratio_for_an_error_category():
    # "parroting" flags per item (3 raters): item a: 1 of 3 (others said coherent),
    # item b: 2 of 3, item c: 0 → majority 1 / flagged 2 = 0.5.
    ratings = pd.DataFrame(
        {
            "item": list("aaabbbccc"),
            "rater": list("xyz") * 3,
            "parroting": [True, False, False, True, True, False, False, False, False],
        }
    )
    assert metrics.majority_agreement_ratio(ratings=ratings, label_given="parroting") == 0.5


def test_majority_agreement_ratio_uses_each_items_own_rater_count():
    # Item a: 2 of 4 (not > half), item b: 2 of 3 (majority), item c: 1 of 1 (one
    # rater: left out) → 1 / 2.
    ratings = pd.DataFrame(
        {
            "item": list("aaaabbbc"),
            "rater": list("wxyzxyzx"),
            "given": [1, 1, 0, 0, 1, 1, 0, 1],
        }
    )
    assert metrics.majority_agreement_ratio(ratings=ratings, label_given="given") == pytest.approx(
        1 / 2
    )


def test_majority_agreement_ratio_is_none_for_a_label_nobody_gave():
    given = pd.Series(False, index=SMALL.index)
    assert metrics.majority_agreement_ratio(ratings=SMALL, label_given=given) is None


def test_majority_agreement_ratio_with_one_annotator_is_undefined():
    # A single rater is no majority: every item is left out, so the ratio is undefined
    # (the kappas show a dash here too), not 1.
    ratings = pd.DataFrame({"item": [1, 2, 3], "rater": "solo", "given": [True, False, True]})
    assert metrics.majority_agreement_ratio(ratings=ratings, label_given="given") is None


def test_majority_agreement_ratio_leaves_out_items_with_one_rater():
    # Hand-worked: items p, q have 3 raters, r and s one each.
    #   p: given by 2 of 3 (majority), q: 1 of 3 (flagged, no majority),
    #   r: 1 of 1 and s: 0 of 1 (left out: one rater).
    # With r counted the ratio would be 2 / 3; without it: 1 / 2.
    ratings = pd.DataFrame(
        {
            "item": list("pppqqqrs"),
            "rater": list("xyzxyzxy"),
            "given": [True, True, False, True, False, False, True, False],
        }
    )
    assert metrics.majority_agreement_ratio(ratings=ratings, label_given="given") == 0.5
    # The report's n is the ratio's denominator: q and p, not r.
    assert metrics.majority_agreement_counts(ratings=ratings, label_given="given") == (1, 2)


def test_the_report_counts_flagged_items_among_items_with_two_raters():
    from types import SimpleNamespace

    from analysis.report.build import _error_categories

    # p: 3 raters, two name parroting; r and s: one rater each (r names it).
    cell = pd.DataFrame(
        {
            "item": list("ppprs"),
            "rater": list("xyzxy"),
            "coherent": [False, False, True, False, True],
            "parroting": [True, True, False, True, False],
        }
    )
    result = _error_categories(cell, [SimpleNamespace(slug="parroting")])
    assert result == {"parroting": {"majority_agreement": 1.0, "n_items_flagged": 1}}
    # Every item with one rater: no denominator, so n is 0 (not "flagged by nobody").
    alone = cell.loc[cell["item"].isin(["r", "s"])]
    result = _error_categories(alone, [SimpleNamespace(slug="parroting")])
    assert result == {"parroting": {"majority_agreement": None, "n_items_flagged": 0}}
    # The cell's one row per (item, rater) is checked once for all categories, still checked.
    twice = pd.concat([cell, cell.head(1)])
    both = [SimpleNamespace(slug="parroting"), SimpleNamespace(slug="parroting")]
    with pytest.raises(ValueError, match="more than one row"):
        _error_categories(twice, both)
    # Skipping the check changes no count.
    assert metrics.majority_agreement_counts(
        ratings=cell, label_given="parroting", check_unique=False
    ) == metrics.majority_agreement_counts(ratings=cell, label_given="parroting")


@pytest.mark.parametrize(
    ("votes", "raters", "expected"),
    [(2, 3, True), (1, 3, False), (1, 2, False), (2, 2, True), (1, 1, False), (0, 0, False)],
)
def test_the_majority_rule_needs_more_than_half_of_at_least_two_raters(votes, raters, expected):
    held = metrics.agreement.majority_holds(votes=np.array([votes]), raters=np.array([raters]))
    assert bool(held[0]) is expected
    # The item table's majority label follows the same rule, both ways.
    label = metrics.majority_label(votes=[votes], raters=[raters])[0]
    assert (label == "coherent") is expected


@pytest.mark.parametrize("seed", range(5))
def test_majority_agreement_ratio_matches_a_loop_on_random_data(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(50):
        for rater in range(int(rng.integers(1, 5))):
            rows.append((item, rater, bool(rng.random() < 0.3)))
    ratings = pd.DataFrame(rows, columns=["item", "rater", "given"])
    majority = flagged = 0
    for _, group in ratings.groupby("item"):
        k, m = int(group["given"].sum()), len(group)
        if m < 2:
            continue
        flagged += k >= 1
        majority += k > m / 2
    expected = majority / flagged if flagged else None
    assert metrics.majority_agreement_ratio(ratings=ratings, label_given="given") == pytest.approx(
        expected
    )


# --------------------------------------------------------------------------- coherence scores


def test_coherence_scores_count_coherent_judgements_per_item():
    ratings = long_from_table([[0, 3], [1, 2], [3, 0]], [False, True]).rename(
        columns={"label": "coherent"}
    )
    scores = metrics.coherence_scores(ratings=ratings)
    assert scores.to_dict() == {0: 3, 1: 2, 2: 0}
    assert scores.name == "coherence_score"


@pytest.mark.parametrize("seed", range(3))
def test_coherence_scores_match_pivot_sum_on_random_data(seed):
    ratings = random_ratings(seed).rename(columns={"label": "coherent"})
    expected = ratings.pivot(index="item", columns="rater", values="coherent").sum(axis=1)
    pd.testing.assert_series_equal(
        metrics.coherence_scores(ratings=ratings),
        expected.astype(int).rename("coherence_score"),
        check_index_type=False,
    )


# --------------------------------------------------------------------------- label distribution

CATS = ["parroting", "off_topic", "malformed"]


def judgements_frame(rows):
    return pd.DataFrame(rows, columns=["source", "coherent", *CATS])


def test_label_distribution_hand_computed_example():
    # Source A, 4 judgements: coherent (1 → coherent); No+parroting (1 → parroting);
    # No+parroting+off_topic (½ each); No without category (1 → unspecified).
    # Shares: coherent 1/4, parroting 1.5/4, off_topic 0.5/4, unspecified 1/4.
    # Source B: one coherent judgement whose stray flag is ignored → coherent 1.
    frame = judgements_frame(
        [
            ("A", True, False, False, False),
            ("A", False, True, False, False),
            ("A", False, True, True, False),
            ("A", False, False, False, False),
            ("B", True, True, False, False),
        ]
    )
    result = metrics.label_distribution(judgements=frame, by="source", categories=CATS)
    assert result["A"] == {
        "coherent": 0.25,
        "parroting": 0.375,
        "off_topic": 0.125,
        "malformed": 0.0,
        "incoherent_unspecified": 0.25,
    }
    assert result["B"] == {
        "coherent": 1.0,
        "parroting": 0.0,
        "off_topic": 0.0,
        "malformed": 0.0,
        "incoherent_unspecified": 0.0,
    }


@pytest.mark.parametrize("seed", range(3))
def test_label_distribution_matches_a_row_loop_and_sums_to_one(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(200):
        coherent = bool(rng.random() < 0.5)
        flags = [False] * 3 if coherent else [bool(x) for x in rng.random(3) < 0.4]
        rows.append((str(rng.choice(["Human", "GPT", "T5"])), coherent, *flags))
    frame = judgements_frame(rows)
    expected: dict[str, dict[str, float]] = {}
    totals: dict[str, int] = {}
    for source, coherent, *flags in rows:
        shares = expected.setdefault(
            source, dict.fromkeys(["coherent", *CATS, "incoherent_unspecified"], 0.0)
        )
        totals[source] = totals.get(source, 0) + 1
        chosen = [c for c, f in zip(CATS, flags, strict=True) if f]
        if coherent:
            shares["coherent"] += 1
        elif chosen:
            for c in chosen:
                shares[c] += 1 / len(chosen)
        else:
            shares["incoherent_unspecified"] += 1
    result = metrics.label_distribution(judgements=frame, by="source", categories=CATS)
    assert set(result) == set(expected)
    for source, shares in expected.items():
        assert sum(result[source].values()) == pytest.approx(1.0)
        for key, value in shares.items():
            assert result[source][key] == pytest.approx(value / totals[source])


def test_label_distribution_of_no_judgements_is_empty():
    assert (
        metrics.label_distribution(judgements=judgements_frame([]), by="source", categories=CATS)
        == {}
    )


# --------------------------------------------------------------------------- correlation


def test_inter_group_correlation_hand_computed_example():
    # Ranks a = 1 2 3 4, b = 1 3 2 4: Σd² = 2, ρ = 1 − 6·2/(4·15) = 0.8;
    # the values are their own ranks, so Pearson r = 0.8 too.
    a = pd.Series([1, 2, 3, 4], index=list("wxyz"))
    b = pd.Series([1, 3, 2, 4, 9], index=list("wxyzq"))  # "q" only in b: ignored
    result = metrics.inter_group_correlation(scores_a=a, scores_b=b)
    assert result["spearman"] == pytest.approx(0.8)
    assert result["pearson"] == pytest.approx(0.8)
    assert result["n_items"] == 4
    assert 0 < result["spearman_p"] < 1
    assert 0 < result["pearson_p"] < 1


@pytest.mark.parametrize("seed", range(5))
def test_inter_group_correlation_matches_pandas_on_tied_scores(seed):
    rng = np.random.default_rng(seed)
    index = rng.permutation(80)
    a = pd.Series(rng.integers(0, 4, 80), index=index)
    b = pd.Series(np.clip(a.to_numpy() + rng.integers(-1, 2, 80), 0, 3), index=index)
    b = b.sample(frac=1, random_state=seed).iloc[:70]  # shuffled, partial overlap
    result = metrics.inter_group_correlation(scores_a=a, scores_b=b)
    joined = pd.concat([a, b], axis=1, join="inner")
    assert result["n_items"] == 70
    assert result["spearman"] == pytest.approx(joined.corr(method="spearman").iloc[0, 1])
    assert result["pearson"] == pytest.approx(joined.corr(method="pearson").iloc[0, 1])
    # Pearson's p from the t distribution, independently of scipy.stats.pearsonr.
    r, n = result["pearson"], 70
    t = r * math.sqrt((n - 2) / (1 - r**2))
    assert result["pearson_p"] == pytest.approx(2 * stats.t.sf(abs(t), n - 2), rel=1e-6)


def test_inter_group_correlation_is_none_for_constant_or_tiny_input():
    a = pd.Series([3, 3, 3], index=[1, 2, 3])
    b = pd.Series([0, 1, 2], index=[1, 2, 3])
    result = metrics.inter_group_correlation(scores_a=a, scores_b=b)
    assert result == {
        "spearman": None,
        "spearman_p": None,
        "pearson": None,
        "pearson_p": None,
        "n_items": 3,
    }
    one = metrics.inter_group_correlation(scores_a=b.head(1), scores_b=b.head(1))
    assert one["spearman"] is None
    assert one["n_items"] == 1


# --------------------------------------------------------------------------- chi-squared


def test_chi2_test_hand_computed_2x2_with_yates_correction():
    # Expected 15 in each cell, |O − E| = 5; Yates: χ² = 4 · (5 − 0.5)²/15 = 5.4,
    # 1 df: p = P(χ²₁ > 5.4) = erfc(√(5.4/2)).
    p = metrics.chi2_test(table=[[10, 20], [20, 10]])
    assert p == pytest.approx(math.erfc(math.sqrt(2.7)))


@pytest.mark.parametrize("seed", range(3))
def test_chi2_test_matches_pearson_statistic_on_random_2x3_tables(seed):
    rng = np.random.default_rng(seed)
    table = rng.integers(5, 40, size=(2, 3)).astype(float)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    statistic = ((table - expected) ** 2 / expected).sum()
    assert metrics.chi2_test(table=pd.DataFrame(table)) == pytest.approx(
        stats.chi2.sf(statistic, 2)
    )


@pytest.mark.parametrize(
    "table",
    [
        [[10, 0], [5, 0]],  # a label nobody gave in either stage
        [[0, 0], [5, 7]],  # an empty row
        [[3, 4, 5]],  # a single row: nothing to compare
    ],
)
def test_chi2_test_is_none_when_undefined(table):
    assert metrics.chi2_test(table=table) is None


# --------------------------------------------------------------------------- Wilcoxon


def test_wilcoxon_paired_hand_computed_exact_p():
    # Differences a − b = 1, 2, 3, −4, 5: ranks 1..5, W− = 4, W+ = 11.
    # Exact null: subsets of {1..5} with rank sum ≤ 4: {}, {1}, {2}, {3}, {4},
    # {1,2}, {1,3} → 7 of 32; two-sided p = 2 · 7/32 = 0.4375.
    a = [1, 2, 3, 0, 5]
    b = [0, 0, 0, 4, 0]
    assert metrics.wilcoxon_paired(a=a, b=b) == pytest.approx(0.4375)


@pytest.mark.parametrize("seed", range(3))
def test_wilcoxon_paired_matches_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    diffs = rng.permutation(np.arange(1, 11)) * rng.choice([-1, 1], 10)  # no ties, no zeros
    a = rng.normal(size=10)
    b = a - diffs
    ranks = np.arange(1, 11)
    w_plus = sum(abs(d) for d in diffs if d > 0)  # |d| are 1..10, so |d| is its rank
    observed = min(w_plus, 55 - w_plus)
    sums = [sum(s) for k in range(11) for s in itertools.combinations(ranks, k)]
    p = min(1.0, 2 * sum(x <= observed for x in sums) / 2**10)
    assert metrics.wilcoxon_paired(a=a, b=b) == pytest.approx(p)


def test_wilcoxon_paired_is_none_when_all_differences_are_zero():
    # scipy itself returns p = 1.0 with a RuntimeWarning here.
    assert metrics.wilcoxon_paired(a=[1, 2, 3], b=[1, 2, 3]) is None
    assert metrics.wilcoxon_paired(a=[], b=[]) is None


def test_wilcoxon_paired_aligns_series_and_drops_missing_pairs():
    a = pd.Series([1, 2, 3, 0, 5, np.nan], index=list("abcdef"))
    b = pd.Series([4, 0, 0, 0, 0, 0, 99], index=list("dabcefg"))
    # Pairs a..e as in the hand example, f dropped (NaN), g not in a.
    assert metrics.wilcoxon_paired(a=a, b=b) == pytest.approx(0.4375)


def test_wilcoxon_paired_rejects_unequal_arrays():
    with pytest.raises(ValueError, match="same length"):
        metrics.wilcoxon_paired(a=[1, 2], b=[1])


# --------------------------------------------------------------------------- never NaN


@pytest.mark.parametrize("seed", range(10))
def test_no_metric_returns_nan_on_degenerate_random_groups(seed):
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(1, 4))
    n_raters = int(rng.integers(1, 4))
    labels = (rng.random((n_items, n_raters)) < rng.choice([0.0, 0.5, 1.0])).astype(int)
    ratings = long_from_matrix(labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning leaks out either
        results = [
            metrics.fleiss_kappa(ratings=ratings, categories=[0, 1]),
            metrics.randolph_kappa(ratings=ratings, categories=[0, 1]),
            metrics.krippendorff_alpha(ratings=ratings, values=[0, 1]),
            metrics.krippendorff_alpha(ratings=ratings, level="ordinal", values=[0, 1]),
            metrics.majority_agreement_ratio(ratings=ratings, label_given=ratings["label"] == 1),
            metrics.kappa_ci(
                metrics.modal_rows(metrics.count_table(ratings=ratings, categories=[0, 1]))[0],
                method="fleiss",
                resamples=20,
            ),
            metrics.alpha_ci(
                metrics.count_table(ratings=ratings, categories=[0, 1]).to_numpy(), resamples=20
            ),
            metrics.agreement_summary(ratings=ratings, categories=[0, 1], resamples=20),
        ]
        scores = metrics.coherence_scores(ratings=ratings, coherent="label")
        results.append(metrics.inter_group_correlation(scores_a=scores, scores_b=scores))
        results.append(metrics.wilcoxon_paired(a=scores, b=scores))
        results.append(metrics.chi2_test(table=pd.crosstab(ratings["item"], ratings["label"])))
    assert_no_nan(results)
