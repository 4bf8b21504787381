"""Tests of analysis.metrics.bootstrap: every resampled value against the vetted
implementations, the resampling distribution, coverage on data with a known kappa,
edge cases, and a slow item-by-item reference bootstrap.

Plain pytest, no database.
"""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pytest
from statsmodels.stats import inter_rater

from analysis import metrics
from analysis.metrics import bootstrap

# Any warning (a RuntimeWarning from a 0/0, a pandas FutureWarning) fails the test.
pytestmark = pytest.mark.filterwarnings("error")

LEVELS = ["nominal", "ordinal", "interval"]

# --------------------------------------------------------------------------- helpers


def expanded(patterns: np.ndarray, weights: np.ndarray, i: int) -> np.ndarray:
    """Resample ``i`` as an ordinary items × categories table."""
    return np.repeat(patterns, weights[i].astype(int), axis=0)


def vetted_kappa(table: np.ndarray, method: str) -> float:
    """statsmodels' kappa; it returns NaN (0/0) when undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(inter_rater.fleiss_kappa(table, method=method))


def vetted_alpha(counts: np.ndarray, level: str) -> float:
    """The ``krippendorff`` package's alpha, NaN where it is undefined (NaN or raises).

    One convention on top, documented by ``alpha_from_counts`` and
    ``alpha_resampled``: with fewer than two pairable items alpha is undefined
    (the package returns 0 or NaN for a single unit whatever the ratings).
    """
    if (counts.sum(axis=1) >= 2).sum() < 2:
        return np.nan
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(
                krippendorff.alpha(
                    value_counts=counts,
                    value_domain=np.arange(counts.shape[1]),
                    level_of_measurement=level,
                )
            )
    except ValueError:
        return np.nan


def assert_same_or_both_nan(
    actual: np.ndarray, expected: list[float], *, atol: float = 1e-12
) -> None:
    expected = np.asarray(expected, dtype=float)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    defined = ~np.isnan(expected)
    np.testing.assert_allclose(actual[defined], expected[defined], rtol=1e-9, atol=atol)


def random_kappa_table(seed: int) -> np.ndarray:
    """Items × categories, same rater count per item; a low Dirichlet concentration
    makes unanimous items (and resamples where Fleiss' kappa is undefined) common."""
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(1, 25))
    n_raters = int(rng.integers(2, 6))
    n_categories = int(rng.integers(2, 5))
    shares = rng.dirichlet(np.full(n_categories, 0.3))
    return rng.multinomial(n_raters, shares, size=n_items)


def random_alpha_table(seed: int) -> np.ndarray:
    """Items × values with 0-5 ratings per item: unequal rater counts, single-rated
    and unrated items (not pairable) included."""
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(1, 15))
    n_values = int(rng.integers(2, 5))
    shares = rng.dirichlet(np.full(n_values, 0.4))
    return np.array(
        [rng.multinomial(int(rng.integers(0, 6)), shares) for _ in range(n_items)]
    ).reshape(n_items, n_values)


def simulated_table(seed: int, *, n_items: int, n_raters: int = 3, a: float = 0.7) -> np.ndarray:
    """Binary labels with a known population kappa.

    Each item's true label is a fair coin; each rater reports it with probability
    ``a`` and otherwise flips a fair coin. A rater then matches the truth with
    probability (1 + a)/2, two raters agree with probability
    ((1 + a)/2)² + ((1 − a)/2)² = (1 + a²)/2, and both marginals are 1/2, so
    P̄e = 1/2 (Fleiss and Randolph alike) and κ = ((1 + a²)/2 − 1/2)/(1/2) = a².
    """
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.5
    informed = rng.random((n_items, n_raters)) < a
    coin = rng.random((n_items, n_raters)) < 0.5
    labels = np.where(informed, truth[:, None], coin)
    ones = labels.sum(axis=1)
    return np.column_stack([n_raters - ones, ones])


# --------------------------------------------------------------------------- exact cross-check


@pytest.mark.parametrize("method", ["fleiss", "randolph"])
@pytest.mark.parametrize("seed", range(12))
def test_every_resampled_kappa_equals_statsmodels_on_the_expanded_table(seed, method):
    table = random_kappa_table(seed)
    patterns, weights = bootstrap.resample_weights(table, resamples=40, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the vectorised version keeps its 0/0 quiet
        values = bootstrap.kappa_resampled(patterns, weights, method=method)
    expected = [vetted_kappa(expanded(patterns, weights, i), method) for i in range(len(weights))]
    assert_same_or_both_nan(values, expected)


def test_wide_tables_find_the_same_distinct_rows_and_values():
    # 30 categories, 8 raters: (max count + 1)**30 row codes overflow int64, so the
    # distinct rows come from the row-wise unique instead of the integer encoding.
    rng = np.random.default_rng(0)
    table = rng.multinomial(8, rng.dirichlet(np.full(30, 0.2)), size=40)
    table[20:] = table[:20]  # repeated rows
    assert (int(table.max()) + 1) ** 30 >= 2**62
    patterns, weights = bootstrap.resample_weights(table, resamples=30, seed=2)
    assert sorted(map(tuple, patterns.tolist())) == sorted(set(map(tuple, table.tolist())))
    np.testing.assert_array_equal(weights.sum(axis=1), np.full(30, 40))
    for method in ("fleiss", "randolph"):
        values = bootstrap.kappa_resampled(patterns, weights, method=method)
        expected = [vetted_kappa(expanded(patterns, weights, i), method) for i in range(30)]
        assert_same_or_both_nan(values, expected)


def test_resampled_fleiss_kappa_is_nan_exactly_where_statsmodels_is_undefined():
    # Eight unanimous items and one split item: the resamples that miss the split
    # item have every rating in one category (P̄e = 1, statsmodels 0/0 → NaN),
    # the others are defined. Both kinds must occur for the test to mean anything.
    table = np.array([[0, 3]] * 8 + [[1, 2]])
    patterns, weights = bootstrap.resample_weights(table, resamples=200, seed=1)
    values = bootstrap.kappa_resampled(patterns, weights, method="fleiss")
    expected = [vetted_kappa(expanded(patterns, weights, i), "fleiss") for i in range(200)]
    assert 0 < np.isnan(values).sum() < 200
    assert_same_or_both_nan(values, expected)
    # Randolph's P̄e = 1/q never reaches 1: every resample is defined.
    randolph = bootstrap.kappa_resampled(patterns, weights, method="randolph")
    assert_same_or_both_nan(
        randolph, [vetted_kappa(expanded(patterns, weights, i), "randolph") for i in range(200)]
    )
    assert not np.isnan(randolph).any()


def test_resampled_fleiss_kappa_stays_defined_when_nearly_all_ratings_agree():
    # 70,000 unanimous items [0, 3] and one item [1, 2] (210,003 ratings).
    # A resample holding the split item once: P̄ = 1 − (2/3)/70,001,
    # p_0 = 1/210,003, P̄e = p_0² + (1 − p_0)² → 1 − P̄e ≈ 2 p_0 ≈ 9.5e-6 > 0,
    # κ = (P̄ − P̄e)/(1 − P̄e) ≈ −4.76e-6 (statsmodels), defined. The point
    # estimate of the original table is that same resample's value.
    table = np.array([[0, 3]] * 70_000 + [[1, 2]])
    patterns, weights = bootstrap.resample_weights(table, resamples=30, seed=0)
    values = bootstrap.kappa_resampled(patterns, weights, method="fleiss")
    expected = [vetted_kappa(expanded(patterns, weights, i), "fleiss") for i in range(30)]
    # 1 − P̄e ≈ 1e-5 amplifies rounding: both sides agree to ~1e-11 absolute.
    assert_same_or_both_nan(values, expected, atol=1e-9)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(12))
def test_every_resampled_alpha_equals_krippendorff_on_the_expanded_table(seed, level):
    table = random_alpha_table(seed)
    patterns, weights = bootstrap.resample_weights(table, resamples=40, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = bootstrap.alpha_resampled(patterns, weights, level=level)
    expected = [vetted_alpha(expanded(patterns, weights, i), level) for i in range(len(weights))]
    assert_same_or_both_nan(values, expected)
    # And the same undefined cases as the point estimate's function (None ↔ NaN).
    for i, value in enumerate(values):
        point = metrics.alpha_from_counts(expanded(patterns, weights, i), level=level)
        assert (point is None) == np.isnan(value)


def test_resampled_alpha_covers_every_undefined_case():
    # Items: two single ratings (never pairable), one [2, 0], one [1, 1], one [0, 3].
    # Resamples hold: fewer than two pairable items (NaN by convention), only
    # copies of [2, 0] or of [0, 3] (no variation: the package's 0/0 → NaN), or a
    # defined mixture. All three must occur.
    table = np.array([[1, 0], [0, 1], [2, 0], [1, 1], [0, 3]])
    patterns, weights = bootstrap.resample_weights(table, resamples=400, seed=3)
    for level in LEVELS:
        values = bootstrap.alpha_resampled(patterns, weights, level=level)
        expected = [vetted_alpha(expanded(patterns, weights, i), level) for i in range(400)]
        assert_same_or_both_nan(values, expected)
    pairable = weights[:, patterns.sum(axis=1) >= 2]
    assert (pairable.sum(axis=1) < 2).any()
    assert np.isnan(values).any() and np.isfinite(values).any()


def test_resampled_ordinal_alpha_ignores_an_unused_value_between_used_ones():
    # Values 0 and 2 used, 1 never: the ordinal distance of (0, 2) counts n_1 = 0,
    # so it equals the ordinal alpha on the table without the empty column.
    table = np.array([[2, 0, 1], [0, 0, 3], [3, 0, 0], [1, 0, 1]])
    patterns, weights = bootstrap.resample_weights(table, resamples=50, seed=0)
    with_gap = bootstrap.alpha_resampled(patterns, weights, level="ordinal")
    without = bootstrap.alpha_resampled(patterns[:, [0, 2]], weights, level="ordinal")
    np.testing.assert_allclose(with_gap, without, rtol=1e-12)


def test_kappa_ci_is_the_percentile_interval_of_the_vetted_resampled_values():
    # Same weights, values from statsmodels, percentiles by hand: the interval is
    # the 2.5th and 97.5th percentile of the defined resamples.
    table = simulated_table(5, n_items=60)
    patterns, weights = bootstrap.resample_weights(table, resamples=300, seed=7)
    values = np.array([vetted_kappa(expanded(patterns, weights, i), "fleiss") for i in range(300)])
    low, high = np.percentile(values[np.isfinite(values)], [2.5, 97.5])
    result = metrics.kappa_ci(table, method="fleiss", resamples=300, seed=7)
    assert result == (pytest.approx(low), pytest.approx(high))


# --------------------------------------------------------------------------- weights


def test_resample_weights_returns_the_distinct_rows_and_integer_counts_summing_to_n():
    table = np.array([[1, 2], [0, 3], [1, 2], [3, 0], [1, 2], [0, 3]])
    patterns, weights = bootstrap.resample_weights(table, resamples=500, seed=0)
    assert sorted(patterns.tolist()) == [[0, 3], [1, 2], [3, 0]]  # any order
    assert weights.shape == (500, 3)
    assert (weights >= 0).all()
    np.testing.assert_array_equal(weights, np.round(weights))
    np.testing.assert_array_equal(weights.sum(axis=1), np.full(500, 6))


def test_resample_weights_match_item_resampling_in_mean_and_variance():
    # Resampling n items with replacement, the copies of a pattern with frequency
    # f_k is Binomial(n, f_k/n): mean f_k, variance f_k (1 − f_k/n).
    # Frequencies here: [0, 3] × 5, [1, 2] × 3, [2, 1] × 2 (n = 10).
    table = np.array([[0, 3]] * 5 + [[1, 2]] * 3 + [[2, 1]] * 2)
    resamples = 20_000
    patterns, weights = bootstrap.resample_weights(table, resamples=resamples, seed=11)
    freq = np.array([(table == pattern).all(axis=1).sum() for pattern in patterns])
    assert sorted(freq) == [2, 3, 5]
    variance = freq * (1 - freq / 10)
    standard_error = np.sqrt(variance / resamples)
    assert (np.abs(weights.mean(axis=0) - freq) < 5 * standard_error).all()
    np.testing.assert_allclose(weights.var(axis=0), variance, rtol=0.05)
    # Different patterns compete for the n slots: Cov = −f_j f_k / n.
    cov = np.cov(weights, rowvar=False)
    assert cov[0, 1] == pytest.approx(-freq[0] * freq[1] / 10, abs=0.05)


def test_resample_weights_are_deterministic_per_seed_and_differ_across_seeds():
    table = simulated_table(0, n_items=50)
    first = bootstrap.resample_weights(table, resamples=100, seed=42)
    again = bootstrap.resample_weights(table, resamples=100, seed=42)
    other = bootstrap.resample_weights(table, resamples=100, seed=43)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[1], other[1])
    assert metrics.kappa_ci(table, method="fleiss", seed=42) == metrics.kappa_ci(
        table, method="fleiss", seed=42
    )
    assert metrics.kappa_ci(table, method="fleiss", seed=42) != metrics.kappa_ci(
        table, method="fleiss", seed=43
    )


# --------------------------------------------------------------------------- coverage


@pytest.mark.parametrize("method", ["fleiss", "randolph"])
def test_kappa_ci_contains_the_population_kappa_and_the_point_estimate(method):
    # a = 0.7 → population κ = a² = 0.49 (see simulated_table).
    table = simulated_table(2024, n_items=400)
    point = metrics.kappa_from_counts(table, method=method)
    low, high = metrics.kappa_ci(table, method=method, resamples=2000, seed=1)
    assert low < 0.49 < high
    assert low < point < high
    assert high - low < 0.2


@pytest.mark.parametrize("method", ["fleiss", "randolph"])
def test_kappa_ci_covers_the_population_kappa_about_95_percent_of_the_time(method):
    # 200 independent studies of 150 items: the share of intervals holding
    # κ = 0.49 has a binomial standard error of ≈ 0.015 around 0.95.
    hits = 0
    for seed in range(200):
        table = simulated_table(seed, n_items=150)
        low, high = metrics.kappa_ci(table, method=method, resamples=1000, seed=seed)
        hits += low <= 0.49 <= high
    assert 0.90 <= hits / 200 <= 0.99


def test_kappa_and_alpha_intervals_narrow_as_items_grow():
    # Width ∝ 1/√n: quadrupling the items roughly halves the interval.
    widths = {"fleiss": [], "alpha": []}
    for n_items in (100, 400, 1600):
        table = simulated_table(n_items, n_items=n_items)
        low, high = metrics.kappa_ci(table, method="fleiss", resamples=1000)
        widths["fleiss"].append(high - low)
        low, high = metrics.alpha_ci(table, resamples=1000)
        widths["alpha"].append(high - low)
    for series in widths.values():
        ratios = np.array(series[:-1]) / np.array(series[1:])
        assert ((ratios > 1.5) & (ratios < 2.7)).all(), series


# --------------------------------------------------------------------------- edge cases


def test_intervals_are_off_with_zero_resamples():
    table = simulated_table(0, n_items=30)
    assert metrics.kappa_ci(table, method="fleiss", resamples=0) == (None, None)
    assert metrics.kappa_ci(table, method="randolph", resamples=0) == (None, None)
    assert metrics.alpha_ci(table, resamples=0) == (None, None)


def test_intervals_of_an_empty_table_are_none():
    empty = np.zeros((0, 2))
    assert metrics.kappa_ci(empty, method="fleiss") == (None, None)
    assert metrics.kappa_ci(empty, method="randolph") == (None, None)
    assert metrics.alpha_ci(empty) == (None, None)
    assert metrics.kappa_ci(np.zeros(0), method="fleiss") == (None, None)


def test_intervals_of_one_item():
    # Every resample is that item again, so the interval is the point value.
    # Fleiss on [1, 2]: P̄ = 1/3, P̄e = 1/9 + 4/9 = 5/9, κ = (1/3 − 5/9)/(4/9) = −1/2.
    # Randolph: κ = (1/3 − 1/2)/(1/2) = −1/3.
    # Alpha: a single pairable unit is undefined.
    one = np.array([[1, 2]])
    assert metrics.kappa_ci(one, method="fleiss") == (pytest.approx(-0.5), pytest.approx(-0.5))
    assert metrics.kappa_ci(one, method="randolph") == (
        pytest.approx(-1 / 3),
        pytest.approx(-1 / 3),
    )
    assert metrics.alpha_ci(one) == (None, None)


def test_intervals_when_all_raters_agree_on_one_category():
    # Fleiss: P̄e = 1 in every resample → undefined. Randolph: P̄ = 1 → κ = 1.
    # Alpha: no variation → undefined.
    table = np.array([[0, 3]] * 10)
    assert metrics.kappa_ci(table, method="fleiss") == (None, None)
    assert metrics.kappa_ci(table, method="randolph") == (1.0, 1.0)
    assert metrics.alpha_ci(table) == (None, None)


def test_intervals_with_one_rater_per_item_are_none():
    table = np.array([[1, 0], [0, 1], [1, 0]])
    assert metrics.kappa_ci(table, method="fleiss") == (None, None)
    assert metrics.kappa_ci(table, method="randolph") == (None, None)
    assert metrics.alpha_ci(table) == (None, None)


def test_alpha_ci_drops_single_rated_items_and_needs_two_pairable_ones():
    # Only [1, 1] is pairable: a single unit, undefined.
    assert metrics.alpha_ci(np.array([[1, 0], [0, 1], [1, 1]])) == (None, None)
    # Adding single-rated items to a table does not change its interval.
    table = simulated_table(8, n_items=60)
    singles = np.array([[1, 0], [0, 1]] * 20)
    assert metrics.alpha_ci(np.vstack([table, singles]), seed=3) == metrics.alpha_ci(table, seed=3)


def test_fleiss_resamples_ignore_a_category_nobody_used_but_randolph_counts_it():
    table = simulated_table(4, n_items=40)
    padded = np.column_stack([table, np.zeros(len(table))])
    patterns, weights = bootstrap.resample_weights(table, resamples=50, seed=0)
    padded_patterns, padded_weights = bootstrap.resample_weights(padded, resamples=50, seed=0)
    np.testing.assert_allclose(
        bootstrap.kappa_resampled(padded_patterns, padded_weights, method="fleiss"),
        bootstrap.kappa_resampled(patterns, weights, method="fleiss"),
    )
    # Randolph with q = 3: κ₃ = (P̄ − 1/3)/(2/3), and P̄ = (κ₂ + 1)/2 from q = 2.
    two = bootstrap.kappa_resampled(patterns, weights, method="randolph")
    three = bootstrap.kappa_resampled(padded_patterns, padded_weights, method="randolph")
    np.testing.assert_allclose(three, ((two + 1) / 2 - 1 / 3) / (2 / 3))


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.05])
def test_a_confidence_level_outside_zero_and_one_is_refused(level):
    table = simulated_table(1, n_items=30)
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        metrics.kappa_ci(table, method="fleiss", level=level)
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        metrics.alpha_ci(table, level=level)


def test_bad_inputs_to_the_resampled_statistics_are_refused():
    patterns = np.array([[1, 2], [2, 2]])
    weights = np.ones((3, 2))
    with pytest.raises(ValueError, match="same number \\(at least 2\\) of raters"):
        bootstrap.kappa_resampled(patterns, weights, method="fleiss")
    with pytest.raises(ValueError, match="same number \\(at least 2\\) of raters"):
        bootstrap.kappa_resampled(np.array([[1, 0], [0, 1]]), weights, method="fleiss")
    with pytest.raises(ValueError, match="unknown method 'cohen'"):
        bootstrap.kappa_resampled(np.array([[1, 2], [3, 0]]), weights, method="cohen")
    with pytest.raises(ValueError, match="unknown level 'ratio'"):
        bootstrap.alpha_resampled(patterns, weights, level="ratio")


def test_a_narrower_level_gives_a_nested_interval():
    table = simulated_table(9, n_items=100)
    low95, high95 = metrics.kappa_ci(table, method="fleiss", level=0.95)
    low80, high80 = metrics.kappa_ci(table, method="fleiss", level=0.80)
    assert low95 <= low80 < high80 <= high95


# --------------------------------------------------------------------------- slow reference


def reference_bootstrap(table, statistic, *, resamples: int, seed: int, level: float = 0.95):
    """The textbook item bootstrap: draw n row indices with replacement, recompute."""
    rng = np.random.default_rng(seed)
    n = len(table)
    values = np.array([statistic(table[rng.integers(0, n, n)]) for _ in range(resamples)])
    values = values[np.isfinite(values)]
    tail = (1 - level) / 2 * 100
    return tuple(np.percentile(values, [tail, 100 - tail]))


@pytest.mark.parametrize("method", ["fleiss", "randolph"])
def test_kappa_ci_agrees_with_a_slow_reference_bootstrap(method):
    # Different random numbers, so only approximately: both percentiles within 0.05.
    table = simulated_table(77, n_items=300, n_raters=4, a=0.6)
    expected = reference_bootstrap(
        table, lambda t: vetted_kappa(t, method), resamples=2000, seed=123
    )
    actual = metrics.kappa_ci(table, method=method, resamples=2000, seed=0)
    assert actual == (
        pytest.approx(expected[0], abs=0.05),
        pytest.approx(expected[1], abs=0.05),
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_alpha_ci_agrees_with_a_slow_reference_bootstrap(level):
    # 300 items with 2-4 ratings on a 4-point scale (coherence-score-like).
    rng = np.random.default_rng(5)
    base = rng.dirichlet(np.ones(4), size=300)
    table = np.array([rng.multinomial(int(rng.integers(2, 5)), p) for p in base])
    expected = reference_bootstrap(
        table, lambda t: vetted_alpha(t, level), resamples=1000, seed=321
    )
    actual = metrics.alpha_ci(table, level_of_measurement=level, resamples=1000, seed=0)
    assert actual == (
        pytest.approx(expected[0], abs=0.05),
        pytest.approx(expected[1], abs=0.05),
    )
