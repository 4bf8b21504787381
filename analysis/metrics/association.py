"""Label distributions and tests of association: the stacked-bar
shares, inter-group correlation, chi-squared and paired Wilcoxon tests.

``scipy.stats`` does the tests; the label distribution is hand-written and
pinned by a hand-computed example in ``tests/analysis/metrics/test_metrics.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ._common import clean as _clean

#: Key under which :func:`label_distribution` counts an incoherent judgement
#: that selected no error category.
INCOHERENT_UNSPECIFIED = "incoherent_unspecified"


def label_weights(
    *, judgements: pd.DataFrame, categories: Sequence[str], coherent: str = "coherent"
) -> pd.DataFrame:
    """Each judgement's weight of 1 spread over the labels, the unit of
    :func:`label_distribution`: all of it to ``"coherent"`` when judged coherent
    (any category flags on it are ignored), otherwise split equally among the
    selected error categories (one boolean column per category, named as in
    ``categories``), or all to ``"incoherent_unspecified"`` when none is selected.
    Columns ``"coherent"``, each category, ``"incoherent_unspecified"``; index as
    ``judgements``; every row sums to 1."""
    categories = list(categories)
    if not categories:
        raise ValueError("categories must not be empty")
    is_coherent = judgements[coherent].fillna(False).astype(bool).to_numpy()
    selected = judgements[categories].fillna(False).astype(bool).to_numpy() & ~is_coherent[:, None]
    n_selected = selected.sum(axis=1)
    weights = np.zeros((len(judgements), len(categories) + 2))
    weights[:, 0] = is_coherent
    with np.errstate(divide="ignore", invalid="ignore"):
        weights[:, 1:-1] = np.where(n_selected[:, None] > 0, selected / n_selected[:, None], 0.0)
    weights[:, -1] = ~is_coherent & (n_selected == 0)
    keys = ["coherent", *categories, INCOHERENT_UNSPECIFIED]
    return pd.DataFrame(weights, columns=keys, index=judgements.index)


def label_distribution(
    *,
    judgements: pd.DataFrame,
    by: str,
    categories: Sequence[str],
    coherent: str = "coherent",
) -> dict[str, dict[str, float]]:
    """Share of each label per group (the stacked-bar figure): the mean of
    :func:`label_weights` per value of ``by``, so shares sum to 1 per group.
    Keys per group: ``"coherent"``, each category, ``"incoherent_unspecified"``
    (always present, 0.0 when unused). Group keys are ``str`` of the ``by``
    values; groups without judgements are absent.
    """
    if not list(categories):
        raise ValueError("categories must not be empty")
    if judgements.empty:
        return {}
    frame = label_weights(judgements=judgements, categories=categories, coherent=coherent)
    keys = list(frame.columns)
    shares = frame.groupby(judgements[by], sort=True).mean()
    return {str(group): {key: float(row[key]) for key in keys} for group, row in shares.iterrows()}


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
