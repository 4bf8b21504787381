"""Krippendorff's alpha summed as a matrix product (large value domains, such as a
0–100 slider on tens of thousands of items) equals the ``krippendorff`` package's on
the same counts, at every level of measurement."""

import numpy as np
import pytest

from analysis.metrics.agreement import PACKAGE_COINCIDENCES_MAX, alpha_from_counts


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("n_values", [2, 5, 11, 101])
def test_the_matrix_product_equals_the_package(level, n_values):
    rng = np.random.default_rng(n_values)
    n_items = 300
    latent = rng.integers(0, n_values, n_items)
    counts = np.zeros((n_items, n_values), dtype=int)
    for item in range(n_items):
        raters = rng.integers(1, 6)  # items of one rating are not pairable: they drop out
        values = np.clip(latent[item] + rng.integers(-1, 2, raters), 0, n_values - 1)
        np.add.at(counts[item], values, 1)
    package = alpha_from_counts(counts, level=level, package_max=10**12)
    product = alpha_from_counts(counts, level=level, package_max=0)
    assert package is not None
    assert product == pytest.approx(package, rel=1e-9, abs=1e-12)


def test_a_small_table_by_hand():
    """Two items rated (0, 0) and (0, 1) on two values: o = [[2, 1], [1, 0]], n = 4,
    marginals (3, 1); nominal α = 1 − 3·2 / (2·3·1) = 0, by hand; both ways."""
    counts = np.array([[2, 0], [1, 1]])
    assert alpha_from_counts(counts, package_max=0) == pytest.approx(0.0)
    assert alpha_from_counts(counts) == pytest.approx(0.0)


def test_no_variation_is_undefined_both_ways():
    counts = np.array([[3, 0], [2, 0], [4, 0]])
    assert alpha_from_counts(counts, package_max=0) is None
    assert alpha_from_counts(counts) is None


def test_the_threshold_keeps_the_package_for_the_protocol_s_tables():
    """A coherence table (two values) or a 5-point scale of 100,000 items stays under
    the threshold: the package computes them as before."""
    assert 100_000 * 5**2 <= PACKAGE_COINCIDENCES_MAX < 50_000 * 101**2
