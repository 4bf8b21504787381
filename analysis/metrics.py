"""Pure agreement statistics (BRIEF §5). No Django, no ORM.

Every function takes pandas / numpy data in *long* form (one row per
judgement: item, rater, label ...) and returns plain Python numbers, with
``None`` wherever a statistic is undefined: the JSON report must never
contain NaN.

Vetted implementations are used where they exist (``statsmodels`` for
Fleiss/Randolph kappa, the ``krippendorff`` package, ``scipy.stats``); the
hand-written formulas (majority agreement ratio, coherence score, label
distribution) are pinned by hand-computed examples in
``tests/analysis/test_metrics.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats import inter_rater

__all__ = [
    "INCOHERENT_UNSPECIFIED",
    "bootstrap_ci",
    "chi2_test",
    "coherence_scores",
    "fleiss_kappa",
    "inter_group_correlation",
    "krippendorff_alpha",
    "label_distribution",
    "landis_koch_band",
    "majority_agreement_ratio",
    "randolph_kappa",
    "wilcoxon_paired",
]

#: Key under which :func:`label_distribution` counts an incoherent judgement
#: that selected no error category.
INCOHERENT_UNSPECIFIED = "incoherent_unspecified"


def _clean(value: Any) -> float | None:
    """A finite Python float, or None for None/NaN/inf."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _check_unique_ratings(ratings: pd.DataFrame, *, item: str, rater: str) -> None:
    if ratings.duplicated(subset=[item, rater]).any():
        raise ValueError(f"ratings contain more than one row per ({item!r}, {rater!r}) pair")


# --------------------------------------------------------------------------- bands


def landis_koch_band(value: float | None) -> str | None:
    """Landis & Koch (1977) interpretation band of a kappa/alpha value.

    ``< 0`` poor, ``<= 0.20`` slight, ``<= 0.40`` fair, ``<= 0.60`` moderate,
    ``<= 0.80`` substantial, ``<= 1`` almost perfect (upper bounds inclusive;
    0 itself is "slight"). ``None`` (or NaN) gives ``None``. A value above 1
    (beyond floating-point noise) is not a kappa and raises ``ValueError``.
    """
    value = _clean(value)
    if value is None:
        return None
    if value < 0:
        return "poor"
    for upper, name in (
        (0.20, "slight"),
        (0.40, "fair"),
        (0.60, "moderate"),
        (0.80, "substantial"),
        (1.0 + 1e-9, "almost perfect"),
    ):
        if value <= upper:
            return name
    raise ValueError(f"{value} is not a kappa/alpha value (greater than 1)")


# --------------------------------------------------------------------------- kappas


def _count_table(
    *,
    ratings: pd.DataFrame,
    item: str,
    rater: str,
    label: str,
    categories: Sequence[Hashable] | None,
) -> pd.DataFrame:
    """Items × categories table of rating counts (every category a column).

    Rows with a missing label are dropped. Labels outside ``categories``
    raise ``ValueError``.
    """
    data = ratings.loc[ratings[label].notna(), [item, rater, label]]
    _check_unique_ratings(data, item=item, rater=rater)
    if categories is None:
        categories = sorted(pd.unique(data[label]).tolist())
    else:
        categories = list(categories)
        unknown = set(pd.unique(data[label]).tolist()) - set(categories)
        if unknown:
            raise ValueError(f"labels not among the categories: {sorted(map(str, unknown))}")
    table = data.groupby([item, label], sort=True).size().unstack(label, fill_value=0)
    return table.reindex(columns=categories, fill_value=0)


def _kappa(
    *,
    ratings: pd.DataFrame,
    item: str,
    rater: str,
    label: str,
    categories: Sequence[Hashable] | None,
    method: Literal["fleiss", "randolph"],
) -> dict[str, Any]:
    table = _count_table(
        ratings=ratings, item=item, rater=rater, label=label, categories=categories
    )
    n_raters = table.sum(axis=1)
    if n_raters.empty:
        return {"value": None, "n_items": 0, "raters_per_item": None}
    # Modal number of raters; on a tie the larger count (more information per item).
    freq = n_raters.value_counts()
    modal = int(max(freq.index[freq == freq.max()]))
    kept = table.loc[n_raters == modal].to_numpy(dtype=float)
    result: dict[str, Any] = {"value": None, "n_items": len(kept), "raters_per_item": modal}
    # One rater per item (no pairs) or a single possible category: undefined.
    if modal < 2 or kept.shape[1] < 2:
        return result
    with np.errstate(divide="ignore", invalid="ignore"):
        value = inter_rater.fleiss_kappa(kept, method=method)
    result["value"] = _clean(value)
    return result


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


def krippendorff_alpha(
    *,
    ratings: pd.DataFrame,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    level: Literal["nominal", "ordinal"] = "nominal",
    values: Sequence[Hashable] | None = None,
) -> float | None:
    """Krippendorff's alpha via the ``krippendorff`` package.

    α = 1 − D_o / D_e from the coincidence matrix; missing ratings are
    allowed (items with a single rating are not pairable and drop out).

    ``values`` is the value domain, *in order* for ``level="ordinal"``
    (default: the sorted observed labels). The data are passed to the package
    as per-item value counts (``value_counts=``), which is exactly what it
    derives from a raters × items reliability matrix, without materialising
    that matrix.

    None when undefined: fewer than two items with at least two ratings (with a
    single unit α is identically 0 or NaN, not informative), or no variation
    among the pairable ratings (D_e = 0; the package raises or returns NaN).
    Labels outside ``values`` raise ``ValueError``.
    """
    data = ratings.loc[ratings[label].notna(), [item, rater, label]]
    _check_unique_ratings(data, item=item, rater=rater)
    if values is None:
        values = sorted(pd.unique(data[label]).tolist())
    domain = pd.Index(list(values))
    if not domain.is_unique:
        raise ValueError("values must not repeat")
    codes = domain.get_indexer(data[label])
    if (codes < 0).any():
        unknown = set(data[label][codes < 0].tolist())
        raise ValueError(f"labels not among the values: {sorted(map(str, unknown))}")
    counts = (
        pd.DataFrame({"item": data[item].to_numpy(), "code": codes})
        .groupby(["item", "code"])
        .size()
        .unstack("code", fill_value=0)
        .reindex(columns=range(len(domain)), fill_value=0)
        .to_numpy()
    )
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) < 2 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = krippendorff.alpha(
            value_counts=pairable,
            value_domain=np.arange(len(domain)),
            level_of_measurement=level,
        )
    return _clean(value)


# --------------------------------------------------------------------------- hand-written


def _given_column(ratings: pd.DataFrame, label_given: pd.Series | str) -> pd.Series:
    given = ratings[label_given] if isinstance(label_given, str) else label_given
    if not given.index.equals(ratings.index):
        given = given.reindex(ratings.index)
    return given.fillna(False).astype(bool)


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
    "Half" is per item, so unequal rater counts are handled. None when no
    rater gave the label.
    """
    _check_unique_ratings(ratings, item=item, rater=rater)
    given = _given_column(ratings, label_given)
    per_item = (
        pd.DataFrame({"item": ratings[item].to_numpy(), "given": given.to_numpy()})
        .groupby("item")["given"]
        .agg(["sum", "size"])
    )
    flagged = int((per_item["sum"] >= 1).sum())
    if flagged == 0:
        return None
    majority = int((2 * per_item["sum"] > per_item["size"]).sum())
    return majority / flagged


def coherence_scores(
    *, ratings: pd.DataFrame, item: str = "item", coherent: str = "coherent"
) -> pd.Series:
    """Coherence score per item: how many raters judged it coherent.

    Returns an int Series indexed by item (name ``coherence_score``), sorted by
    item; every item with at least one rating appears (score 0 included).
    """
    scores = ratings[coherent].fillna(False).astype(bool).groupby(ratings[item]).sum()
    return scores.astype(int).rename("coherence_score")


def label_distribution(
    *,
    judgements: pd.DataFrame,
    by: str,
    categories: Sequence[str],
    coherent: str = "coherent",
) -> dict[str, dict[str, float]]:
    """Share of each label per group (the stacked-bar figure).

    Every judgement has weight 1: all of it to ``"coherent"`` when judged
    coherent (any category flags on it are ignored), otherwise split equally
    among the selected error categories (one boolean column per category,
    named as in ``categories``). An incoherent judgement with no category
    selected gives its weight to ``"incoherent_unspecified"``, so shares
    still sum to 1 per group. Keys per group: ``"coherent"``, each category,
    ``"incoherent_unspecified"`` (always present, 0.0 when unused). Group
    keys are ``str`` of the ``by`` values; groups without judgements are
    absent.
    """
    categories = list(categories)
    if not categories:
        raise ValueError("categories must not be empty")
    if judgements.empty:
        return {}
    is_coherent = judgements[coherent].fillna(False).astype(bool).to_numpy()
    selected = judgements[categories].fillna(False).astype(bool).to_numpy() & ~is_coherent[:, None]
    n_selected = selected.sum(axis=1)
    weights = np.zeros((len(judgements), len(categories) + 2))
    weights[:, 0] = is_coherent
    with np.errstate(divide="ignore", invalid="ignore"):
        weights[:, 1:-1] = np.where(n_selected[:, None] > 0, selected / n_selected[:, None], 0.0)
    weights[:, -1] = ~is_coherent & (n_selected == 0)
    keys = ["coherent", *categories, INCOHERENT_UNSPECIFIED]
    frame = pd.DataFrame(weights, columns=keys, index=judgements.index)
    shares = frame.groupby(judgements[by], sort=True).mean()
    return {str(group): {key: float(row[key]) for key in keys} for group, row in shares.iterrows()}


# --------------------------------------------------------------------------- tests of association


def inter_group_correlation(*, scores_a: pd.Series, scores_b: pd.Series) -> dict[str, Any]:
    """Spearman and Pearson correlation (scipy) of two groups' item scores.

    Computed over the items in both indexes with a value in both (NaN pairs
    dropped). Returns ``spearman``, ``spearman_p``, ``pearson``,
    ``pearson_p``, ``n_items``; the four statistics are None with fewer than
    two items or when either side is constant (correlation undefined).
    """
    pairs = pd.concat([scores_a.rename("a"), scores_b.rename("b")], axis=1, join="inner").dropna()
    result: dict[str, Any] = {
        "spearman": None,
        "spearman_p": None,
        "pearson": None,
        "pearson_p": None,
        "n_items": len(pairs),
    }
    if len(pairs) < 2 or pairs["a"].nunique() < 2 or pairs["b"].nunique() < 2:
        return result
    a = pairs["a"].to_numpy(dtype=float)
    b = pairs["b"].to_numpy(dtype=float)
    spearman = stats.spearmanr(a, b)
    pearson = stats.pearsonr(a, b)
    result.update(
        spearman=_clean(spearman.statistic),
        spearman_p=_clean(spearman.pvalue),
        pearson=_clean(pearson.statistic),
        pearson_p=_clean(pearson.pvalue),
    )
    return result


def chi2_test(*, table: Any) -> float | None:
    """p-value of Pearson's chi-squared test of independence on a contingency table.

    ``scipy.stats.chi2_contingency`` with its defaults (Yates' continuity
    correction on 2 × 2 tables). None when the table has fewer than two rows
    or columns, or a row or column sums to zero (expected frequency 0; scipy
    raises).
    """
    observed = np.asarray(table, dtype=float)
    if observed.ndim != 2 or min(observed.shape) < 2:
        return None
    if (observed.sum(axis=0) == 0).any() or (observed.sum(axis=1) == 0).any():
        return None
    return _clean(stats.chi2_contingency(observed).pvalue)


def wilcoxon_paired(*, a: Any, b: Any) -> float | None:
    """p-value of the Wilcoxon signed-rank test on paired samples (scipy, two-sided).

    Pandas Series are paired on their common index; arrays by position (same
    length required). Pairs with a missing value are dropped and zero
    differences discarded (scipy's default ``zero_method="wilcox"``). None
    when no non-zero difference remains: scipy then reports p = 1.0 with a
    RuntimeWarning, which would wrongly read as "tested, no shift".
    """
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        pairs = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
        x, y = pairs["a"].to_numpy(dtype=float), pairs["b"].to_numpy(dtype=float)
    else:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if x.shape != y.shape:
            raise ValueError("a and b must have the same length")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if np.count_nonzero(x - y) == 0:
        return None
    return _clean(stats.wilcoxon(x, y).pvalue)


# --------------------------------------------------------------------------- bootstrap


def bootstrap_ci(
    *,
    ratings: pd.DataFrame,
    statistic: Callable[[pd.DataFrame], float | None],
    item: str = "item",
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap confidence interval, resampling items.

    Items are drawn with replacement (as many as there are items); all the
    ratings of an item travel together, and each drawn copy gets a fresh item
    label (its position in the resample) so a duplicate counts as a distinct
    item. ``statistic`` is applied to each resampled frame; resamples where it
    returns None/NaN are ignored. Returns the (1−level)/2 and (1+level)/2
    percentiles (numpy linear interpolation), or (None, None) when no
    resample gives a value. Deterministic for a given seed
    (``numpy.random.default_rng``).
    """
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    if resamples < 1 or ratings.empty:
        return (None, None)
    codes, _ = pd.factorize(ratings[item], sort=True)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    n_items = len(counts)
    base = ratings.iloc[order].reset_index(drop=True)
    columns = {name: base[name].to_numpy() for name in base.columns if name != item}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(resamples, n_items))

    values: list[float] = []
    for drawn in draws:
        lengths = counts[drawn]
        total = int(lengths.sum())
        # Row positions: for each drawn item, starts[item] + 0..count-1.
        offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
        rows = np.repeat(starts[drawn], lengths) + (np.arange(total) - offsets)
        sample = pd.DataFrame({name: column[rows] for name, column in columns.items()})
        sample[item] = np.repeat(np.arange(n_items), lengths)
        value = _clean(statistic(sample))
        if value is not None:
            values.append(value)
    if not values:
        return (None, None)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return (float(low), float(high))
