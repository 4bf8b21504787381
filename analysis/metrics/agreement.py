"""Agreement among raters: Landis & Koch bands, Fleiss' and Randolph's
kappa, Krippendorff's alpha, the per-label majority agreement ratio and coherence
scores.

Functions take ratings in *long* form (one row per judgement: item, rater,
label) or, for the ``*_from_counts`` variants, an items × categories count
table, and return plain Python numbers with ``None`` wherever a statistic is
undefined. Vetted implementations do the arithmetic (statsmodels for the
kappas, the ``krippendorff`` package); the hand-written formulas (majority
agreement ratio, coherence score) are pinned by hand-computed examples in
``tests/analysis/metrics/test_metrics.py``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from statsmodels.stats import inter_rater

from studies.protocol import majority_holds as protocol_majority_holds

from ._common import check_unique_ratings as _check_unique_ratings
from ._common import clean as _clean

# --------------------------------------------------------------------------- bands


#: Decimals a statistic is shown with (dashboard, text summary, figures' tooltips).
#: A band is that of the value rounded to them, so equal shown values share a band.
DISPLAY_DIGITS = 3

#: Landis & Koch (1977): each band's name and upper bound; a value below 0 is "poor".
LANDIS_KOCH_BANDS: tuple[tuple[float, str], ...] = (
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.00, "almost perfect"),
)


def landis_koch_band(value: float | None, *, digits: int = DISPLAY_DIGITS) -> str | None:
    """Landis & Koch (1977) interpretation band of a kappa/alpha value, after
    rounding it to ``digits`` decimals (the precision it is shown with).

    Bands are half-open, upper bound included: below 0 poor, [0, 0.20] slight,
    (0.20, 0.40] fair, (0.40, 0.60] moderate, (0.60, 0.80] substantial,
    (0.80, 1] almost perfect. So with 3 decimals 0.200 is slight and 0.201 fair;
    -1e-16 and -0.0004 show as 0.000 and are slight, -0.0006 shows as -0.001 and is
    poor. ``None`` (or NaN) gives ``None``. A value that rounds above 1 is not a
    kappa and raises ``ValueError``.
    """
    value = _clean(value)
    if value is None:
        return None
    shown = round(value, digits)
    if shown < 0:
        return "poor"
    for upper, name in LANDIS_KOCH_BANDS:
        if shown <= upper:
            return name
    raise ValueError(f"{value} is not a kappa/alpha value (greater than 1)")


# --------------------------------------------------------------------------- kappas


def count_table(
    *,
    ratings: pd.DataFrame,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    categories: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """Items × categories table of rating counts (every category a column, in order).

    Rows with a missing label are dropped. ``categories`` defaults to the
    sorted observed labels; labels outside it raise ``ValueError``.
    """
    data = ratings.loc[ratings[label].notna(), [item, rater, label]]
    _check_unique_ratings(data, item=item, rater=rater)
    if categories is None:
        categories = sorted(pd.unique(data[label]).tolist())
    else:
        categories = list(categories)
        if not pd.Index(categories).is_unique:
            raise ValueError("categories must not repeat")
        unknown = set(pd.unique(data[label]).tolist()) - set(categories)
        if unknown:
            raise ValueError(f"labels not among the categories: {sorted(map(str, unknown))}")
    if data.empty:
        return pd.DataFrame(columns=categories, dtype=int)
    table = data.groupby([item, label], sort=True).size().unstack(label, fill_value=0)
    return table.reindex(columns=categories, fill_value=0)


def modal_rows(table: pd.DataFrame | np.ndarray) -> tuple[np.ndarray, int | None]:
    """The rows of a count table whose rater count is the modal one.

    Fleiss' and Randolph's kappa need the same number of raters on every item;
    the rule used throughout is: keep the items rated by the modal number of
    raters (on a tie, the larger count: more information per item). Returns
    the kept rows and that count (None for an empty table).
    """
    counts = np.asarray(table, dtype=float)
    if counts.size == 0:
        return counts.reshape(0, counts.shape[1] if counts.ndim == 2 else 0), None
    n_raters = counts.sum(axis=1).astype(int)
    values, freq = np.unique(n_raters, return_counts=True)
    modal = int(values[freq == freq.max()].max())
    return counts[n_raters == modal], modal


def kappa_from_counts(table: np.ndarray, *, method: Literal["fleiss", "randolph"]) -> float | None:
    """Fleiss' or Randolph's kappa of an items × categories count table with the
    same rater count on every row (``statsmodels.stats.inter_rater.fleiss_kappa``).

    None when undefined: no items, fewer than two raters per item, fewer than
    two categories, or (Fleiss) all ratings in one category.
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or len(table) == 0 or table.shape[1] < 2 or table[0].sum() < 2:
        return None
    if np.ptp(table.sum(axis=1)) != 0:
        raise ValueError("every item needs the same number of raters (see modal_rows)")
    with np.errstate(divide="ignore", invalid="ignore"):
        return _clean(inter_rater.fleiss_kappa(table, method=method))


def _kappa(
    *,
    ratings: pd.DataFrame,
    item: str,
    rater: str,
    label: str,
    categories: Sequence[Hashable] | None,
    method: Literal["fleiss", "randolph"],
) -> dict[str, Any]:
    table = count_table(ratings=ratings, item=item, rater=rater, label=label, categories=categories)
    kept, modal = modal_rows(table)
    return {
        "value": kappa_from_counts(kept, method=method),
        "n_items": len(kept),
        "raters_per_item": modal,
    }


def fleiss_kappa(
    *,
    ratings: pd.DataFrame,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    categories: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """Fleiss' (1971) kappa via ``statsmodels.stats.inter_rater.fleiss_kappa``.

    κ = (P̄ − P̄e) / (1 − P̄e), P̄ the mean over items of the share of agreeing
    rater pairs, P̄e = Σ_j p_j² with p_j the overall share of category j.

    Fleiss' kappa needs the same number of raters per item. Rule: only the
    items rated by the modal number of raters are used (on a tie, the larger
    count); ``n_items`` reports how many items that is and
    ``raters_per_item`` the modal count.

    Returns ``{"value", "n_items", "raters_per_item"}``; ``value`` is None when
    undefined: no items, one rater per item, or all ratings in a single
    category (P̄e = 1, statsmodels returns NaN). Categories nobody used do not
    change Fleiss' kappa; ``categories`` only validates the labels.
    """
    return _kappa(
        ratings=ratings,
        item=item,
        rater=rater,
        label=label,
        categories=categories,
        method="fleiss",
    )


def randolph_kappa(
    *,
    ratings: pd.DataFrame,
    categories: Sequence[Hashable],
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
) -> dict[str, Any]:
    """Randolph's (2005) free-marginal kappa via statsmodels (``method="randolph"``).

    κ_free = (P̄ − 1/q) / (1 − 1/q), q the number of *possible* categories.
    statsmodels takes q from the number of table columns, so ``categories``
    is required and every category becomes a column, used or not (with the
    binary label, pass both values even when everything was "coherent").

    Same modal-rater-count rule and return shape as :func:`fleiss_kappa`;
    ``value`` is None with no items, one rater per item, or q < 2.
    """
    return _kappa(
        ratings=ratings,
        item=item,
        rater=rater,
        label=label,
        categories=categories,
        method="randolph",
    )


#: The ``krippendorff`` package builds an items × values × values array of coincidences
#: (float64): past this many elements (40 MB) the coincidences are summed as a matrix
#: product instead (:func:`_alpha_from_coincidences`), as for a 0–100 slider rated on
#: tens of thousands of items (bench/README.md, "Likert ratings at scale": 10.6 GiB).
PACKAGE_COINCIDENCES_MAX = 5_000_000


def alpha_from_counts(
    counts: np.ndarray,
    *,
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
    distance: np.ndarray | None = None,
    package_max: int = PACKAGE_COINCIDENCES_MAX,
) -> float | None:
    """Krippendorff's alpha of an items × values count table (values in domain
    order), via the ``krippendorff`` package's ``value_counts=`` input, which is
    exactly what it derives from a raters × items reliability matrix; over
    ``package_max`` items × values² the same coincidences are summed as a matrix
    product (:func:`_alpha_from_coincidences`, checked against the package).

    ``distance`` (values × values, symmetric, 0 on the diagonal) replaces the level's
    distance between two values: the package then reads it as its metric, as for the
    MASI and Jaccard distances between sets of categories
    (:mod:`analysis.metrics.set_distances`).

    Items with fewer than two ratings are not pairable and drop out. None when
    undefined: fewer than two pairable items (with a single unit α is
    identically 0 or NaN, not informative), or no variation among the pairable
    ratings (D_e = 0).
    """
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] == 0:
        return None
    if distance is not None and np.shape(distance) != (counts.shape[1],) * 2:
        raise ValueError("the distance matrix needs one row and column per value")
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) < 2 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    if pairable.shape[0] * pairable.shape[1] ** 2 > package_max:
        return _alpha_from_coincidences(pairable, level=level, distance=distance)
    metric: Any = level
    if distance is not None:
        matrix = np.asarray(distance, dtype=float)

        def metric(v1, v2, i1, i2, n_v, dtype=np.float64):  # the package's metric signature
            return matrix[i1, i2].astype(dtype)

    with np.errstate(divide="ignore", invalid="ignore"):
        value = krippendorff.alpha(
            value_counts=pairable,
            value_domain=np.arange(counts.shape[1]),
            level_of_measurement=metric,
        )
    return _clean(value)


def value_distances(
    marginals: np.ndarray, level: Literal["nominal", "ordinal", "interval"]
) -> np.ndarray:
    """Krippendorff's δ² between values (their positions in the domain) for a level
    of measurement, given the values' pairable counts ``marginals`` (resamples ×
    values, or values alone): nominal 0/1, interval the squared difference of the
    positions, ordinal the counts between the two values less half of each end's,
    squared. Resamples × values × values (values × values for one set of marginals)."""
    marginals = np.asarray(marginals, dtype=float)
    one = marginals.ndim == 1
    marginals = np.atleast_2d(marginals)
    n_resamples, n_values = marginals.shape
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(n_values), (n_resamples, n_values, n_values))
    elif level == "interval":
        codes = np.arange(n_values, dtype=float)
        delta = np.broadcast_to(
            (codes[:, None] - codes[None, :]) ** 2, (n_resamples, n_values, n_values)
        )
    elif level == "ordinal":
        cumulative = np.concatenate(
            [np.zeros((n_resamples, 1)), np.cumsum(marginals, axis=1)], axis=1
        )
        low = np.minimum.outer(np.arange(n_values), np.arange(n_values))
        high = np.maximum.outer(np.arange(n_values), np.arange(n_values))
        between = cumulative[:, high + 1] - cumulative[:, low]
        halves = (marginals[:, :, None] + marginals[:, None, :]) / 2
        delta = (between - halves) ** 2
    else:
        raise ValueError(f"unknown level {level!r}")
    return delta[0] if one else delta


def _alpha_from_coincidences(
    pairable: np.ndarray,
    *,
    level: Literal["nominal", "ordinal", "interval"],
    distance: np.ndarray | None = None,
) -> float | None:
    """Krippendorff's alpha from the coincidence matrix o = Σ_u (n_u n_uᵀ − diag n_u) /
    (m_u − 1) (n_u a pairable item's counts, m_u its ratings), summed as Nᵀ W N −
    diag(Nᵀ w) without the per-item array: α = 1 − (n − 1) Σ o·δ² / Σ n_c n_k δ², with
    δ² the given ``distance`` or the level's (:func:`value_distances`)."""
    n_u = pairable.astype(float)
    weights = 1.0 / (n_u.sum(axis=1) - 1.0)
    o = n_u.T @ (n_u * weights[:, None]) - np.diag(n_u.T @ weights)
    marginals = o.sum(axis=1)
    n = marginals.sum()
    delta = (
        np.asarray(distance, dtype=float)
        if distance is not None
        else value_distances(marginals, level)
    )
    expected = (np.outer(marginals, marginals) * delta).sum()
    if expected == 0:
        return None
    return _clean(1.0 - (n - 1.0) * (o * delta).sum() / expected)


def krippendorff_alpha(
    *,
    ratings: pd.DataFrame,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
    values: Sequence[Hashable] | None = None,
) -> float | None:
    """Krippendorff's alpha of long-form ratings (see :func:`alpha_from_counts`).

    ``values`` is the value domain, *in order* for ``level="ordinal"``
    (default: the sorted observed labels); missing ratings are allowed.
    ``level="interval"`` treats the values as equally spaced (their positions in
    ``values``), which fits the 1–5 scale and coherence scores 0..k.
    Labels outside ``values`` raise ``ValueError``.
    """
    table = count_table(ratings=ratings, item=item, rater=rater, label=label, categories=values)
    return alpha_from_counts(table.to_numpy(), level=level)


# --------------------------------------------------------------------------- hand-written


def _given_column(ratings: pd.DataFrame, label_given: pd.Series | str) -> pd.Series:
    given = ratings[label_given] if isinstance(label_given, str) else label_given
    if not given.index.equals(ratings.index):
        given = given.reindex(ratings.index)
    return given.fillna(False).astype(bool)


#: Fewer raters than this and an item has no majority: a majority of one is no agreement.
MIN_MAJORITY_RATERS = 2


def majority_holds(
    *,
    votes: np.ndarray | pd.Series,
    raters: np.ndarray | pd.Series,
    min_raters: int = MIN_MAJORITY_RATERS,
) -> np.ndarray:
    """The majority rule, per item: did more than half of the item's ``raters``
    give the vote (``votes`` of them did), with at least ``min_raters`` raters?
    Arrays of equal length; returns a boolean array."""
    votes = np.asarray(votes, dtype=np.int64)
    raters = np.asarray(raters, dtype=np.int64)
    if votes.shape != raters.shape:
        raise ValueError("votes and raters must have the same length")
    return protocol_majority_holds(votes=votes, raters=raters, min_raters=min_raters)


def majority_agreement_counts(
    *,
    ratings: pd.DataFrame,
    label_given: pd.Series | str,
    item: str = "item",
    rater: str = "rater",
    check_unique: bool = True,
) -> tuple[int, int]:
    """The two counts of :func:`majority_agreement_ratio`: ``(majority, flagged)``,
    over the items with at least :data:`MIN_MAJORITY_RATERS` raters.
    ``check_unique=False``: the caller has already checked that ``ratings`` hold one
    row per (item, rater) (one check for many labels of the same ratings)."""
    if check_unique:
        _check_unique_ratings(ratings, item=item, rater=rater)
    given = _given_column(ratings, label_given)
    per_item = (
        pd.DataFrame({"item": ratings[item].to_numpy(), "given": given.to_numpy()})
        .groupby("item")["given"]
        .agg(["sum", "size"])
    )
    per_item = per_item[per_item["size"] >= MIN_MAJORITY_RATERS]
    flagged = int((per_item["sum"] >= 1).sum())
    majority = int(majority_holds(votes=per_item["sum"], raters=per_item["size"]).sum())
    return majority, flagged


def majority_agreement_ratio(
    *,
    ratings: pd.DataFrame,
    label_given: pd.Series | str,
    item: str = "item",
    rater: str = "rater",
) -> float | None:
    """Per-label majority agreement ratio (Tsakalidis et al. 2022).

    ``label_given`` is a boolean column (name or Series aligned with
    ``ratings``): did this rater give the label on this item. For the binary
    label pass ``coherent`` or ``~coherent``; for an error category, whether
    the rater selected it (a rater who judged the item coherent did not).
    Missing values count as not given.

    ratio = #items where more than half of the item's raters gave the label
    (with 3 raters: at least 2) ÷ #items where at least one rater gave it.
    "Half" is per item, so unequal rater counts are handled. Items with fewer
    than :data:`MIN_MAJORITY_RATERS` raters are left out: a majority of one is
    no agreement. None when no rater of the remaining items gave the label.
    """
    majority, flagged = majority_agreement_counts(
        ratings=ratings, label_given=label_given, item=item, rater=rater
    )
    return majority / flagged if flagged else None


def coherence_scores(
    *, ratings: pd.DataFrame, item: str = "item", coherent: str = "coherent"
) -> pd.Series:
    """Coherence score per item: how many raters judged it coherent.

    Returns an int Series indexed by item (name ``coherence_score``), sorted by
    item; every item with at least one rating appears (score 0 included).
    """
    scores = ratings[coherent].fillna(False).astype(bool).groupby(ratings[item]).sum()
    return scores.astype(int).rename("coherence_score")
