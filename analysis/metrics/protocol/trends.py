"""Trends over a numeric generation setting (the error-scheme paper relates nucleus p
to coherence): per group and stage, a logistic regression of each judgement's
coherent label on the setting's value, with standard errors robust to the
judgements of one item being alike (clustered by item; statsmodels), and Spearman's
rho between the values and their coherent rates (scipy)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats as scipy_stats
from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

from .._common import clean

#: A setting is numeric when every value of it parses as a number, and has a trend
#: when it has at least this many distinct values in the cell.
MIN_TREND_VALUES = 3


def numeric_settings(values: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`~analysis.metrics.protocol.generation.generation_values` whose
    key only ever has numeric values (``null``, i.e. not set, is left out), with
    ``number`` the value as a float."""
    # Each distinct value parsed once (a handful), read back through its code.
    codes, distinct = pd.factorize(values["value"])
    parsed = pd.to_numeric(pd.Series(distinct).astype(str), errors="coerce").to_numpy(float)
    numbers = pd.Series(parsed[codes], index=values.index)
    unset = pd.Series(
        (pd.Series(distinct).astype(str) == "null").to_numpy()[codes], index=values.index
    )
    bad_keys = set(values.loc[numbers.isna() & ~unset, "key"].astype(str))
    keep = numbers.notna() & ~values["key"].astype(str).isin(bad_keys)
    return values.loc[keep, ["item", "key"]].assign(
        key=lambda f: f["key"].astype(str), number=numbers[keep].to_numpy()
    )


def setting_trend(cell: pd.DataFrame) -> dict[str, Any] | None:
    """One group × stage × setting: ``cell`` has a row per judgement (``item``,
    ``coherent`` bool, ``number`` the item's setting value). None with fewer than
    :data:`MIN_TREND_VALUES` distinct values. Otherwise ``n_judgements``,
    ``n_items``, ``n_values``; ``slope`` (the log-odds of coherent per unit of the
    setting), ``slope_ci`` (95 %), ``p_value``; ``odds_ratio`` (exp slope); ``spearman``
    and ``spearman_p`` between the values and their coherent rates. The regression's
    numbers are null where it cannot be fitted (every answer the same, or perfect
    separation). With a ``position`` column (where each item was seen), also the
    position's own slope and p-value in a regression on both (``position_slope``,
    ``position_p``; null otherwise)."""
    n_values = int(cell["number"].nunique())
    if n_values < MIN_TREND_VALUES:
        return None
    result: dict[str, Any] = {
        "n_judgements": len(cell),
        "n_items": int(cell["item"].nunique()),
        "n_values": n_values,
        "slope": None,
        "slope_ci": [None, None],
        "p_value": None,
        "odds_ratio": None,
        "position_slope": None,
        "position_p": None,
    }
    rates = cell.groupby("number")["coherent"].mean()
    result["spearman"], result["spearman_p"] = spearman_exact(
        rates.index.to_numpy(dtype=float), rates.to_numpy(dtype=float)
    )
    y = cell["coherent"].astype(float).to_numpy()
    if y.min() == y.max():
        return result
    clusters = pd.factorize(cell["item"])[0]
    fit = _logit(y, [cell["number"]], clusters)
    if fit is None:
        return result
    low, high = fit.conf_int()[1]
    slope = clean(fit.params[1])
    result.update(
        slope=slope,
        slope_ci=[clean(low), clean(high)],
        p_value=clean(fit.pvalues[1]),
        odds_ratio=clean(np.exp(fit.params[1])) if slope is not None else None,
    )
    # With where each item was seen (order effects), the position's own term beside it.
    if "position" in cell and cell["position"].notna().all() and cell["position"].nunique() > 1:
        both = _logit(y, [cell["number"], cell["position"]], clusters)
        if both is not None:
            result["position_slope"] = clean(both.params[2])
            result["position_p"] = clean(both.pvalues[2])
    return result


def _logit(y: np.ndarray, columns: list[pd.Series], clusters: np.ndarray):
    """statsmodels' ``Logit`` of ``y`` on a constant and ``columns``, standard errors
    clustered by item; None when it cannot be fitted or does not converge."""
    x = sm.add_constant(np.column_stack([c.to_numpy(dtype=float) for c in columns]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ConvergenceWarning, PerfectSeparationWarning))
        try:
            fit = sm.Logit(y, x).fit(disp=False, cov_type="cluster", cov_kwds={"groups": clusters})
        except (np.linalg.LinAlgError, ValueError):
            return None
    return fit if fit.mle_retvals.get("converged", False) else None


#: Up to this many values, Spearman's p-value comes from every ordering (exact).
EXACT_SPEARMAN_VALUES = 8


def spearman_exact(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """Spearman's rho of ``x`` and ``y`` and its two-sided p-value; both null when
    either is constant. With a few values (the settings' usual 3 to 8) scipy's
    large-sample p-value is far off (0 for any monotone 3 or 4 values), so the p-value
    is exact there: the share of all orderings of ``y`` with a rho at least as far
    from 0 (``scipy.stats.permutation_test``); beyond, scipy's."""
    if len(x) < 2 or np.unique(x).size < 2 or np.unique(y).size < 2:
        return None, None
    result = scipy_stats.spearmanr(x, y)
    if len(x) > EXACT_SPEARMAN_VALUES:
        return clean(result.statistic), clean(result.pvalue)
    exact = scipy_stats.permutation_test(
        (y,),
        lambda ys: scipy_stats.spearmanr(x, ys).statistic,
        permutation_type="pairings",
        n_resamples=np.inf,
        alternative="two-sided",
    )
    return clean(result.statistic), clean(exact.pvalue)


def setting_trends(
    *, judgements: pd.DataFrame, values: pd.DataFrame, stage_order, group_order
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{group: {stage: {key: trend}}}`` over the judgements of the items that have a
    numeric value of each key (:func:`numeric_settings`, :func:`setting_trend`);
    only cells with a trend."""
    numeric = numeric_settings(values) if not values.empty else values
    if judgements.empty or numeric.empty:
        return {}
    columns = ["group", "stage", "item", "coherent"]
    columns += ["position"] if "position" in judgements else []
    frame = judgements[columns].merge(numeric, on="item")
    # (Grouped by the categoricals, named after: turning a million names into text is
    # the slow part.)
    cells = {
        (str(group), str(stage), key): rows
        for (group, stage, key), rows in frame.groupby(
            ["group", "stage", "key"], sort=False, observed=True
        ).indices.items()
    }
    result: dict[str, dict[str, dict[str, Any]]] = {}
    keys = sorted(numeric["key"].unique())
    for group in group_order:
        for stage in stage_order:
            for key in keys:
                rows = cells.get((str(group), str(stage), key))
                if rows is None:
                    continue
                trend = setting_trend(frame.iloc[rows])
                if trend is not None:
                    result.setdefault(str(group), {}).setdefault(str(stage), {})[key] = trend
    return result
