"""Likert ratings on named dimensions: what a cell of ratings (one group, stage, system
and dimension) says, how the systems of a group differ, and whether two groups see
the systems alike.

Every statistic is over individual ratings, "cannot judge" answers counted apart and
left out; comparisons are over item means (an item's mean of its raters), so an item
rated by more annotators does not count more:

* per cell (a system's ratings): n ratings and items, mean with a percentile
  bootstrap 95% CI resampling items (:func:`analysis.metrics.bootstrap.mean_ci`), SD
  (n − 1), median, the share of each point;
* per dimension (every system of a group and stage together): Krippendorff's alpha
  (``krippendorff``), ordinal on points and interval on a slider;
* between two systems of a group: Cohen's d on their item means (pooled SD,
  :func:`.systems.cohens_d`) and the two-sided Mann–Whitney U test
  (``scipy.stats.mannwhitneyu``), Holm's correction over the group's pairs;
* between two groups: per system the Mann–Whitney U test on the item means, Kendall's
  tau-b (``scipy.stats.kendalltau``) between their orderings of the systems by mean,
  and Spearman's rho between their item means
  (:func:`analysis.metrics.inter_group_correlation`).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from studies.protocol import likert_scale_range

from .._common import clean
from ..agreement import krippendorff_alpha
from ..association import inter_group_correlation
from ..bootstrap import DEFAULT_RESAMPLES, mean_ci
from .systems import cohens_d, holm

#: The columns a frame of ratings has: one row per (item, rater), ``value`` NaN when
#: the rater answered "cannot judge".
RATING_COLUMNS = ["item", "rater", "value", "cannot_judge"]


def likert_cell(
    ratings: pd.DataFrame,
    *,
    points: int | None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """The summary of one cell's ratings (``RATING_COLUMNS``) on a dimension of
    ``points`` points (None: a 0–100 slider)."""
    judged = ratings[~ratings["cannot_judge"].astype(bool)]
    values = judged["value"].to_numpy(dtype=float)
    low, high = likert_scale_range(points)
    per_item = judged.groupby("item", sort=True)["value"].agg(["sum", "count"])
    ci = mean_ci(per_item.to_numpy(), resamples=resamples, seed=seed)
    result: dict[str, Any] = {
        "n_ratings": len(values),
        "n_cannot_judge": int(len(ratings) - len(judged)),
        "n_items": len(per_item),
        "mean": clean(values.mean()) if len(values) else None,
        "mean_ci": [ci[0], ci[1]],
        "sd": clean(values.std(ddof=1)) if len(values) >= 2 else None,
        "median": clean(np.median(values)) if len(values) else None,
        "shares": None,
    }
    if points is not None and len(values):
        counts = np.bincount(values.astype(int) - low, minlength=high - low + 1)
        result["shares"] = {
            str(point): float(count / len(values))
            for point, count in zip(range(low, high + 1), counts, strict=True)
        }
    return result


def likert_alpha(ratings: pd.DataFrame, *, points: int | None) -> float | None:
    """Krippendorff's alpha of ratings (``RATING_COLUMNS``, "cannot judge" left out) on a
    dimension of ``points`` points: ordinal, or interval on a slider (None)."""
    judged = ratings[~ratings["cannot_judge"].astype(bool)]
    if judged.empty:
        return None
    low, high = likert_scale_range(points)
    return krippendorff_alpha(
        ratings=judged.assign(value=judged["value"].astype(int)),
        item="item",
        rater="rater",
        label="value",
        level="interval" if points is None else "ordinal",
        values=list(range(low, high + 1)),
    )


def likert_item_table(ratings: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per item and each of ``keys`` (e.g. stage, group, dimension): ``n_raters`` (its
    ratings, "cannot judge" included), ``n_cannot_judge``, and the ``mean``, ``sd``
    (n − 1; None under two ratings) and ``median`` of the other ratings (None when
    every rater said "cannot judge")."""
    by = [*keys, "item"]
    frame = ratings.assign(
        cannot_judge=ratings["cannot_judge"].astype(bool),
        judged=ratings["value"].where(~ratings["cannot_judge"].astype(bool)),
    )
    grouped = frame.groupby(by, sort=True, dropna=False)
    table = pd.DataFrame(
        {
            "n_raters": grouped.size(),
            "n_cannot_judge": grouped["cannot_judge"].sum().astype(int),
            "mean": grouped["judged"].mean(),
            "sd": grouped["judged"].std(ddof=1),
            "median": grouped["judged"].median(),
        }
    )
    return table.reset_index()


def item_means(ratings: pd.DataFrame) -> pd.Series:
    """Each item's mean of its ratings ("cannot judge" left out), by item."""
    judged = ratings[~ratings["cannot_judge"].astype(bool)]
    return judged.groupby("item", sort=True)["value"].mean()


def _mann_whitney(a: pd.Series, b: pd.Series) -> float | None:
    """Two-sided p-value of the Mann–Whitney U test; None with an empty side or when
    every value is the same (the test is then undefined)."""
    a, b = a.dropna().to_numpy(dtype=float), b.dropna().to_numpy(dtype=float)
    if not len(a) or not len(b) or np.unique(np.concatenate([a, b])).size < 2:
        return None
    return clean(scipy_stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def likert_system_pairs(means: dict[str, pd.Series]) -> list[dict[str, Any]]:
    """Every pair of systems of one group and dimension (``means``: system → item
    means), in the order of the systems given: Cohen's d (a − b) and the Mann–Whitney
    p-value, Holm-adjusted over the pairs."""
    pairs = []
    for a, b in combinations(means, 2):
        x, y = means[a].dropna(), means[b].dropna()
        d = cohens_d(x.mean(), x.var(ddof=1), len(x), y.mean(), y.var(ddof=1), len(y))
        pairs.append({"a": a, "b": b, "cohens_d": clean(d.item()), "p": _mann_whitney(x, y)})
    for pair, adjusted in zip(pairs, holm([p["p"] for p in pairs]), strict=True):
        pair["p_holm"] = adjusted
    return pairs


def likert_groups_compared(
    means_a: dict[str, pd.Series], means_b: dict[str, pd.Series]
) -> dict[str, Any]:
    """Two groups on one stage and dimension (each: system → item means): per system
    shared by both, the Mann–Whitney p-value between their item means and Spearman's
    rho between the item means of the items both rated; Kendall's tau-b between their
    orderings of those systems by the mean of their item means (None with fewer than
    two systems, or a side whose systems all have the same mean)."""
    systems = [s for s in means_a if s in means_b]
    per_system = {}
    for system in systems:
        correlation = inter_group_correlation(scores_a=means_a[system], scores_b=means_b[system])
        per_system[system] = {
            "p": _mann_whitney(means_a[system], means_b[system]),
            "spearman": correlation["spearman"],
            "n_items_both": correlation["n_items"],
        }
    mean_a = np.array([means_a[s].mean() for s in systems], dtype=float)
    mean_b = np.array([means_b[s].mean() for s in systems], dtype=float)
    tau = None
    if len(systems) >= 2 and np.unique(mean_a).size > 1 and np.unique(mean_b).size > 1:
        tau = clean(scipy_stats.kendalltau(mean_a, mean_b, variant="b").statistic)
    return {"systems": per_system, "kendall_tau_b": tau}
