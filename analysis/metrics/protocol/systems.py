"""Systems: which system (a stage × source cell: a model and decoding setting, or
the human reflections of a stage) is more coherent, by how much, and whether two
annotator groups rank the systems alike.

Per group, :func:`system_stats` reduces the judgements and the item table
(:mod:`.items`) to one row of counts per system; every other function here reads
those rows, so a system's counts are computed once. Effect sizes and tests:

* Cohen's h = 2·asin(√p_a) − 2·asin(√p_b) on two coherent rates (Cohen 1988:
  0.2 small, 0.5 medium, 0.8 large);
* the chi-squared test (:func:`analysis.metrics.chi2_test`) on the 2 × 2 table of
  coherent / incoherent judgement counts, Holm's correction over a group's pairs
  (``statsmodels.stats.multitest.multipletests``);
* Cohen's d on the 5-point empathy ratings, pooled sample SD;
* Kendall's tau-b (``scipy.stats.kendalltau``) between two groups' coherent
  rates, and the mean absolute difference between their pair effect sizes.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from .._common import clean
from ..association import chi2_test
from ..bootstrap import DEFAULT_RESAMPLES, rate_ci
from .items import majority_coherent_counts

SYSTEM_KEYS = ["stage", "source"]
#: A pair of systems differs when its Holm-adjusted p-value is below this.
SIGNIFICANCE = 0.05
EMPATHY_POINTS = (1, 2, 3, 4, 5)
EMPATHY_COLUMNS = [f"empathy_{point}" for point in EMPATHY_POINTS]


def system_order(systems: pd.DataFrame | pd.MultiIndex, stage_order: Sequence[str]) -> list:
    """(stage, source) pairs in reading order: stage order, then source in ``str`` order."""
    index = systems if isinstance(systems, pd.MultiIndex) else systems.index
    position = {stage: i for i, stage in enumerate(stage_order)}
    return sorted(index, key=lambda key: (position.get(key[0], len(position)), str(key[1])))


def system_stats(
    *, judgements: pd.DataFrame, items: pd.DataFrame, stage_order: Sequence[str]
) -> pd.DataFrame:
    """One group's systems as counts, indexed by (stage, source) in reading order.

    ``judgements``: the group's analysed judgements (``stage``, ``source``,
    ``coherent``, ``empathy``); ``items``: the group's rows of
    :func:`~analysis.metrics.protocol.items.item_table`. Columns:
    ``n_judgements``, ``n_coherent``, ``n_items``, ``n_majority_items`` (items
    with at least 2 raters), ``n_majority_coherent`` (those whose majority said
    coherent), ``n_empathy``, ``empathy_mean``, ``empathy_var`` (sample
    variance, NaN below 2 ratings) and ``empathy_1`` … ``empathy_5`` (counts).
    """
    empathy = pd.to_numeric(judgements["empathy"], errors="coerce")
    frame = pd.DataFrame(
        {
            "stage": judgements["stage"].array,
            "source": judgements["source"].array,
            "coherent": judgements["coherent"].astype(bool).to_numpy(),
            "empathy": empathy.to_numpy(dtype=float),
        }
    )
    base = frame.groupby(SYSTEM_KEYS, sort=False).agg(
        n_judgements=("coherent", "size"),
        n_coherent=("coherent", "sum"),
        n_empathy=("empathy", "count"),
        empathy_mean=("empathy", "mean"),
        empathy_var=("empathy", "var"),
    )
    rated = frame.loc[frame["empathy"].notna()]
    points = (
        rated.groupby([*SYSTEM_KEYS, "empathy"], sort=False)
        .size()
        .unstack("empathy", fill_value=0)
        .reindex(columns=[float(p) for p in EMPATHY_POINTS], fill_value=0)
    )
    points.columns = EMPATHY_COLUMNS
    by_items = majority_coherent_counts(items, by=SYSTEM_KEYS)
    result = base.join(by_items).join(points)
    counts = ["n_items", "n_majority_items", "n_majority_coherent", *EMPATHY_COLUMNS]
    result[counts] = result[counts].fillna(0).astype(np.int64)
    return result.loc[system_order(result, stage_order)]


def _share(numerator: float, denominator: float) -> float | None:
    return clean(numerator / denominator) if denominator else None


def system_entries(
    *,
    stats: pd.DataFrame,
    items: pd.DataFrame,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The report's entry per system (``systems`` key), in ``stats``' order.

    ``coherent_rate_ci`` is a percentile interval over an item bootstrap of the
    system's items (:func:`~analysis.metrics.bootstrap.rate_ci`, the same
    ``resamples`` and ``seed`` as every interval of the report).
    """
    positions = items.groupby(SYSTEM_KEYS, sort=False).indices
    score = items["coherence_score"].to_numpy()
    raters = items["n_raters"].to_numpy()
    entries = []
    for (stage, source), row in stats.iterrows():
        at = positions.get((stage, source), np.array([], dtype=np.int64))
        counts = np.column_stack([score[at], raters[at] - score[at]])
        n_empathy = int(row["n_empathy"])
        entries.append(
            {
                "stage": stage,
                "source": source,
                "n_judgements": int(row["n_judgements"]),
                "n_items": int(row["n_items"]),
                "coherent_rate": _share(row["n_coherent"], row["n_judgements"]),
                "coherent_rate_ci": list(rate_ci(counts, resamples=resamples, seed=seed)),
                "majority_coherent_rate": _share(
                    row["n_majority_coherent"], row["n_majority_items"]
                ),
                "empathy_mean": clean(row["empathy_mean"]),
                "empathy_distribution": {
                    str(point): _share(row[column], n_empathy)
                    for point, column in zip(EMPATHY_POINTS, EMPATHY_COLUMNS, strict=True)
                },
                "n_empathy": n_empathy,
            }
        )
    return entries


def cohens_h(p_a: Any, p_b: Any) -> np.ndarray:
    """Cohen's h = 2·asin(√p_a) − 2·asin(√p_b), elementwise (NaN where a rate is)."""
    p_a, p_b = np.asarray(p_a, dtype=float), np.asarray(p_b, dtype=float)
    return 2 * np.arcsin(np.sqrt(p_a)) - 2 * np.arcsin(np.sqrt(p_b))


def cohens_d(mean_a: Any, var_a: Any, n_a: Any, mean_b: Any, var_b: Any, n_b: Any) -> np.ndarray:
    """Cohen's d = (mean_a − mean_b) / pooled SD, the pooled variance weighting each
    side's sample variance by n − 1; elementwise, NaN where a side has fewer than 2
    ratings or the pooled SD is 0."""
    mean_a, var_a, n_a, mean_b, var_b, n_b = (
        np.asarray(x, dtype=float) for x in (mean_a, var_a, n_a, mean_b, var_b, n_b)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = np.sqrt(((n_a - 1) * var_a + (n_b - 1) * var_b) / (n_a + n_b - 2))
        d = (mean_a - mean_b) / pooled
    return np.where((n_a >= 2) & (n_b >= 2) & (pooled > 0), d, np.nan)


def mean_absolute_effect(effects: Any) -> float | None:
    """The mean of |effect| over the defined ones (e.g. a group's Cohen's h over its
    pairs of systems, as the evaluator-group paper reports per group); None without
    any."""
    values = np.abs(np.asarray(effects, dtype=float))
    values = values[np.isfinite(values)]
    return clean(values.mean()) if values.size else None


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (``multipletests(..., method="holm")``) over the
    non-null ones; None where the p-value is None."""
    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if present:
        # statsmodels ends its Holm step with a full ``gc.collect()``, which walks every
        # object of the process (0.1 s a call with a million judgements loaded):
        # frozen objects are left out of it, so it only looks at what the call made.
        gc.freeze()
        try:
            values = multipletests([p_values[i] for i in present], method="holm")[1]
        finally:
            gc.unfreeze()
        for i, value in zip(present, values, strict=True):
            adjusted[i] = clean(value)
    return adjusted


def coherent_rates(stats: pd.DataFrame) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (stats["n_coherent"] / stats["n_judgements"]).to_numpy(dtype=float)


def _label_table(row_a: pd.Series, row_b: pd.Series) -> list[list[int]]:
    return [
        [int(row_a["n_coherent"]), int(row_a["n_judgements"] - row_a["n_coherent"])],
        [int(row_b["n_coherent"]), int(row_b["n_judgements"] - row_b["n_coherent"])],
    ]


def _pair_effects(stats: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i, j) positions of every pair i < j of ``stats``' rows, with h and d per pair."""
    i, j = np.triu_indices(len(stats), k=1)
    rate = coherent_rates(stats)
    mean, var, n = (
        stats[c].to_numpy(dtype=float) for c in ("empathy_mean", "empathy_var", "n_empathy")
    )
    h = cohens_h(rate[i], rate[j])
    d = cohens_d(mean[i], var[i], n[i], mean[j], var[j], n[j])
    return i, j, h, d


def system_pairs(*, stats: pd.DataFrame) -> list[dict[str, Any]]:
    """Every pair (a, b) of one group's systems, a before b in ``stats``' order:
    ``cohens_h``, ``chi2_p``, ``p_holm`` (over the group's non-null ``chi2_p``) and
    ``cohens_d_empathy``."""
    i, j, h, d = _pair_effects(stats)
    keys = list(stats.index)
    rows = [row for _, row in stats.iterrows()]
    p = [chi2_test(table=_label_table(rows[a], rows[b])) for a, b in zip(i, j, strict=True)]
    adjusted = holm(p)
    return [
        {
            "a": {"stage": keys[a][0], "source": keys[a][1]},
            "b": {"stage": keys[b][0], "source": keys[b][1]},
            "cohens_h": clean(h[k]),
            "chi2_p": p[k],
            "p_holm": adjusted[k],
            "cohens_d_empathy": clean(d[k]),
        }
        for k, (a, b) in enumerate(zip(i, j, strict=True))
    ]


def group_comparison(*, stats: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """Two groups' systems compared over the systems both judged (in the first
    group's order): per system both coherent rates and the chi-squared p-value
    between the groups (all of each group's judgements of it); Kendall's tau-b
    between the rates (null with fewer than 3 systems or when undefined); the mean
    absolute difference of the groups' pair effect sizes (h, and d where both
    groups' d is defined; null without such a pair), and beside it each group's own
    mean absolute effect over those pairs (``mean_abs_h``: [first, second], the
    evaluator-group paper's per-group mean |h|; :func:`mean_absolute_effect`)."""
    (name_a, a), (name_b, b) = stats.items()
    common = [key for key in a.index if key in b.index]
    a, b = a.loc[common], b.loc[common]
    rate_a, rate_b = coherent_rates(a), coherent_rates(b)
    systems = [
        {
            "stage": stage,
            "source": source,
            "coherent_rate": {name_a: clean(rate_a[k]), name_b: clean(rate_b[k])},
            "chi2_p": chi2_test(table=_label_table(a.iloc[k], b.iloc[k])),
        }
        for k, (stage, source) in enumerate(common)
    ]
    tau = p_tau = None
    if len(common) >= 3:
        result = scipy_stats.kendalltau(rate_a, rate_b)
        tau, p_tau = clean(result.statistic), clean(result.pvalue)
        if tau is None or p_tau is None:
            tau = p_tau = None
    _, _, h_a, d_a = _pair_effects(a)
    _, _, h_b, d_b = _pair_effects(b)
    delta_h = np.abs(h_a - h_b)
    delta_d = np.abs(d_a - d_b)
    delta_d = delta_d[np.isfinite(delta_d)]
    return {
        "groups": [name_a, name_b],
        "systems": systems,
        "kendall_tau": tau,
        "kendall_p": p_tau,
        "mean_abs_delta_h": clean(delta_h.mean()) if delta_h.size else None,
        "mean_abs_delta_d_empathy": clean(delta_d.mean()) if delta_d.size else None,
        "mean_abs_h": [mean_absolute_effect(h_a), mean_absolute_effect(h_b)],
    }
