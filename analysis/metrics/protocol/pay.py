"""Pay: what a study's batches cost and what annotators earned an hour, per group and
stage, from the pay the researcher set (per batch or per hour, in one currency) and
each submitted batch's working time, from its claim to its submission. Currencies
are never added together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._common import clean

SECONDS_PER_HOUR = 3600.0


def pay_summary(
    *,
    rates: pd.DataFrame,
    assignments: pd.DataFrame | None,
    judgements: pd.DataFrame | None,
    stage_order: Sequence[str],
    group_order: Sequence[str],
) -> dict[str, Any]:
    """``{"cells": [...], "totals": {currency: cost}}``.

    ``rates``: :func:`analysis.selectors.pay.pay_rates`; ``assignments``: every
    assignment (``group``, ``stage``, ``status``, ``assigned_at``, ``submitted_at``):
    the submitted ones are the batches paid; ``judgements``: the analysed ones (their
    number per group and stage divides the cost).

    Per (group, stage) with pay, in group then stage order: ``unit``, ``amount``,
    ``currency``, ``minimum_hourly_rate``; ``n_batches`` paid, ``n_judgements``;
    ``hours`` (their working time, null without times); ``total_cost`` (per batch:
    amount × batches; per hour: amount × hours, null without times);
    ``cost_per_judgement``; ``hourly_rate`` {median, q1, q3} over the batches (per
    batch: amount ÷ its hours; per hour: the amount); ``share_below_minimum`` (of the
    batches, earning less an hour than the minimum; null without a minimum or
    times). ``totals``: the cost per currency, null when one of its cells' is unknown;
    ``cost_per_judgement`` divides the cost of every submitted batch by the judgements
    the report analyses (fewer with sources left out)."""
    if rates.empty:
        return {"cells": [], "totals": {}}
    paid = (
        assignments.loc[assignments["status"] == "submitted"]
        if assignments is not None and not assignments.empty
        else pd.DataFrame(columns=["group", "stage", "assigned_at", "submitted_at"])
    )
    hours = (
        (paid["submitted_at"] - paid["assigned_at"]).dt.total_seconds() / SECONDS_PER_HOUR
        if not paid.empty
        else pd.Series(dtype=float)
    )
    paid = paid.assign(
        hours=hours, group=paid["group"].astype(str), stage=paid["stage"].astype(str)
    )
    counted = (
        {
            (str(group), str(stage)): n
            for (group, stage), n in judgements.groupby(["group", "stage"], observed=True)
            .size()
            .items()
        }
        if judgements is not None and not judgements.empty
        else {}
    )
    batches = paid.groupby(["group", "stage"])["hours"]
    cells, totals = [], {}
    order = {(g, s): (i, j) for i, g in enumerate(group_order) for j, s in enumerate(stage_order)}
    for rate in sorted(
        rates.itertuples(index=False),
        key=lambda r: order.get((r.group, r.stage), (len(order), 0)),
    ):
        key = (str(rate.group), str(rate.stage))
        worked = batches.get_group(key) if key in batches.groups else pd.Series(dtype=float)
        known = worked.notna().all() and len(worked) > 0
        minimum = None if pd.isna(rate.minimum_hourly_rate) else float(rate.minimum_hourly_rate)
        n_judgements = int(counted.get(key, 0))
        if rate.unit == "batch":
            total = rate.amount * len(worked)
            with np.errstate(divide="ignore"):
                earned = rate.amount / worked.to_numpy(dtype=float) if known else np.array([])
        else:
            total = rate.amount * worked.sum() if known else None
            earned = np.full(len(worked), rate.amount) if len(worked) else np.array([])
        # (A batch of no recorded duration earned without bound: inf, kept.)
        cell = {
            "group": key[0],
            "stage": key[1],
            "unit": rate.unit,
            "amount": float(rate.amount),
            "currency": rate.currency,
            "minimum_hourly_rate": minimum,
            "n_batches": len(worked),
            "n_judgements": n_judgements,
            "hours": clean(worked.sum()) if known else None,
            "total_cost": clean(total) if total is not None else None,
            "cost_per_judgement": clean(total / n_judgements)
            if total is not None and n_judgements
            else None,
            "hourly_rate": {
                name: clean(_quantile(earned, q)) if earned.size else None
                for name, q in (("median", 0.5), ("q1", 0.25), ("q3", 0.75))
            },
            "share_below_minimum": clean(np.mean(earned < minimum))
            if minimum is not None and earned.size
            else None,
        }
        cells.append(cell)
        # A currency's total is unknown (null) as soon as one of its costs is.
        if rate.currency not in totals or totals[rate.currency] is not None:
            so_far = totals.get(rate.currency, 0.0)
            totals[rate.currency] = (
                None if cell["total_cost"] is None else clean(so_far + cell["total_cost"])
            )
    return {"cells": cells, "totals": dict(sorted(totals.items()))}


def _quantile(values: np.ndarray, q: float) -> float:
    """numpy's (linear) quantile, where an unbounded value (a batch of no recorded
    duration) counts as one: infinite when the quantile reaches it, never NaN."""
    ordered = np.sort(values)
    at = q * (len(ordered) - 1)
    low, high = int(np.floor(at)), int(np.ceil(at))
    if low == high or ordered[low] == ordered[high]:
        return float(ordered[low])
    if np.isinf(ordered[high]):
        return float("inf")
    return float(ordered[low] + (at - low) * (ordered[high] - ordered[low]))
