"""Percentile bootstrap confidence intervals for kappa and alpha, resampling items.

A kappa or alpha depends on the items only through their rows of the items ×
categories count table, and items with the same row are interchangeable. So
resampling *n* items with replacement is the same, in distribution, as drawing
how many copies of each distinct row the resample holds from a multinomial
with the rows' frequencies. That makes 1,000 resamples of a study of a million
judgements cost a few matrix products over a handful of distinct rows instead
of 1,000 passes over the data.

The per-resample statistic is computed in closed form on the weighted distinct
rows, vectorised over resamples. Tests check every resampled value against the
vetted implementation (statsmodels, the ``krippendorff`` package) applied to
the expanded resampled table, so the two cannot drift apart; the point
estimates in the report always come from the vetted implementations.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .agreement import value_distances

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95


def resample_weights(
    table: np.ndarray, *, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``table`` (a count table: whole numbers ≥ 0) and, per
    resample, how many copies of each.

    Returns ``(patterns, weights)``: ``patterns`` is distinct rows × columns,
    ``weights`` is resamples × distinct rows and every row of it sums to the
    number of items. Deterministic for a seed (``numpy.random.default_rng``).
    """
    table = np.asarray(table, dtype=float)
    if table.size and (table.min() < 0 or not np.array_equal(table, np.round(table))):
        raise ValueError("a count table holds whole numbers, 0 or more")
    # Rows are small non-negative counts: encode each as one integer (mixed radix)
    # so finding the distinct rows is a 1-D unique, not a row-wise sort.
    radix = int(table.max()) + 1 if table.size else 1
    if radix ** table.shape[1] < 2**62:
        keys = table.astype(np.int64) @ (radix ** np.arange(table.shape[1], dtype=np.int64))
        _, first, freq = np.unique(keys, return_index=True, return_counts=True)
        patterns = table[first]
    else:
        patterns, freq = np.unique(table, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(int(freq.sum()), freq / freq.sum(), size=resamples)
    return patterns, weights.astype(float)


def kappa_resampled(
    patterns: np.ndarray, weights: np.ndarray, *, method: Literal["fleiss", "randolph"]
) -> np.ndarray:
    """Fleiss' or Randolph's kappa of each weighted resample (NaN where undefined).

    Same formula as ``statsmodels.stats.inter_rater.fleiss_kappa``: P̄ is the
    item-weighted mean share of agreeing rater pairs, P̄e = Σ p_j² (Fleiss) or
    1/q (Randolph). Every pattern must have the same rater count r ≥ 2.
    """
    raters = patterns.sum(axis=1)
    r = raters[0]
    if np.ptp(raters) != 0 or r < 2:
        raise ValueError("every item needs the same number (at least 2) of raters")
    n = weights.sum(axis=1)
    agreement = ((patterns**2).sum(axis=1) - r) / (r * (r - 1))
    p_mean = weights @ agreement / n
    if method == "fleiss":
        shares = (weights @ patterns) / (n * r)[:, None]
        p_expected = (shares**2).sum(axis=1)
        # Undefined exactly when one category holds every rating (P̄e = 1); a
        # tolerance would also drop resamples with a handful of dissenting ratings.
        single_category = (shares > 0).sum(axis=1) < 2
    elif method == "randolph":
        p_expected = np.full_like(p_mean, 1.0 / patterns.shape[1])
        single_category = np.zeros(len(p_mean), dtype=bool)
    else:
        raise ValueError(f"unknown method {method!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (p_mean - p_expected) / (1 - p_expected)
    kappa[single_category] = np.nan
    return kappa


def alpha_resampled(
    patterns: np.ndarray,
    weights: np.ndarray,
    *,
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
    distance: np.ndarray | None = None,
) -> np.ndarray:
    """Krippendorff's alpha of each weighted resample (NaN where undefined).

    Coincidences o_ck = Σ_u w_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1) over
    pairable rows (m_u ≥ 2); α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, with δ²
    the given ``distance`` matrix or the level's (:func:`.agreement.value_distances`).
    Undefined, like :func:`analysis.metrics.agreement.alpha_from_counts`, with
    fewer than two pairable items or no variation.
    """
    patterns = np.asarray(patterns, dtype=float)
    raters = patterns.sum(axis=1)
    pairable = raters >= 2
    patterns, weights, raters = patterns[pairable], weights[:, pairable], raters[pairable]
    n_resamples, n_values = weights.shape[0], patterns.shape[1]
    if len(patterns) == 0:
        return np.full(n_resamples, np.nan)
    # A coincidence row's marginal is the item's count: n_c = Σ_u w_u n_uc.
    marginals = weights @ patterns
    total = marginals.sum(axis=1)
    if distance is not None or level != "ordinal":
        # The distances do not depend on the resample: each pattern's share of Σ o·δ² is
        # one number, (n_uᵀ δ² n_u − Σ_c n_uc δ²_cc) / (m_u − 1), so memory stays
        # resamples × values, however many values (sets of categories) there are.
        delta = (
            np.asarray(distance, dtype=float)
            if distance is not None
            else value_distances(marginals[0], level)
        )
        per_pattern = (
            np.einsum("uv,vw,uw->u", patterns, delta, patterns) - patterns @ np.diag(delta)
        ) / (raters - 1)
        observed = weights @ per_pattern
        expected = ((marginals @ delta) * marginals).sum(axis=1)
    else:  # ordinal: the distances depend on each resample's marginals
        outer = patterns[:, :, None] * patterns[:, None, :]
        outer -= patterns[:, :, None] * np.eye(n_values)[None, :, :]
        coincidences = np.einsum("ru,uvw->rvw", weights, outer / (raters - 1)[:, None, None])
        delta = value_distances(marginals, level)
        observed = (coincidences * delta).sum(axis=(1, 2))
        expected = (marginals[:, :, None] * marginals[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1 - (total - 1) * observed / expected
    undefined = (weights.sum(axis=1) < 2) | ((marginals > 0).sum(axis=1) < 2) | (expected == 0)
    alpha[undefined] = np.nan
    return alpha


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")


def percentile_interval(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return (None, None)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return (float(low), float(high))


def kappa_ci(
    table: np.ndarray,
    *,
    method: Literal["fleiss", "randolph"],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of Fleiss'/Randolph's kappa, resampling items.

    ``table`` is items × categories with the same rater count on every row
    (see :func:`analysis.metrics.agreement.modal_rows`). Resamples where the
    kappa is undefined are left out; (None, None) when none is defined, with
    no items, fewer than two raters, or ``resamples`` = 0 (intervals off).
    """
    _check_level(level)
    table = np.asarray(table, dtype=float)
    if resamples < 1 or table.ndim != 2 or len(table) == 0 or table.shape[1] < 2:
        return (None, None)
    if table[0].sum() < 2:
        return (None, None)
    patterns, weights = resample_weights(table, resamples=resamples, seed=seed)
    return percentile_interval(kappa_resampled(patterns, weights, method=method), level)


def alpha_ci(
    counts: np.ndarray,
    *,
    level_of_measurement: Literal["nominal", "ordinal", "interval"] = "nominal",
    distance: np.ndarray | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of Krippendorff's alpha, resampling items.

    ``counts`` is items × values (values in domain order), rater counts may
    differ. Resamples where alpha is undefined are left out; (None, None)
    when none is defined or ``resamples`` = 0.
    """
    _check_level(level)
    counts = np.asarray(counts, dtype=float)
    if resamples < 1 or counts.ndim != 2 or counts.shape[1] < 2:
        return (None, None)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) < 2:
        return (None, None)
    patterns, weights = resample_weights(counts, resamples=resamples, seed=seed)
    values = alpha_resampled(patterns, weights, level=level_of_measurement, distance=distance)
    return percentile_interval(values, level)


def mean_ci(
    sums: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of a mean over individual ratings, resampling items.

    ``sums`` is items × 2: per item, the sum of its ratings (whole numbers ≥ 0, as
    Likert points and slider values are) and how many there are; the mean is Σ sum ÷
    Σ count over the resampled items, so an item weighs by its ratings, as in the
    point estimate. (None, None) with no items or ``resamples`` = 0.
    """
    _check_level(level)
    sums = np.asarray(sums, dtype=float)
    if resamples < 1 or sums.ndim != 2 or sums.shape[1] != 2 or len(sums) == 0:
        return (None, None)
    patterns, weights = resample_weights(sums, resamples=resamples, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = (weights @ patterns[:, 0]) / (weights @ patterns[:, 1])
    return percentile_interval(means, level)


def rate_ci(
    counts: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of a pooled share, resampling items.

    ``counts`` is items × 2: per item, how many of its judgements were a "yes"
    (coherent) and how many a "no"; the share is Σ yes ÷ Σ (yes + no) over the
    resampled items, so an item weighs by its judgements, as in the point
    estimate. (None, None) with no items or ``resamples`` = 0.
    """
    _check_level(level)
    counts = np.asarray(counts, dtype=float)
    if resamples < 1 or counts.ndim != 2 or counts.shape[1] != 2 or len(counts) == 0:
        return (None, None)
    patterns, weights = resample_weights(counts, resamples=resamples, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = (weights @ patterns[:, 0]) / (weights @ patterns.sum(axis=1))
    return percentile_interval(shares, level)
