"""Pay on hand-made batches: per batch and per hour, the hourly rates earned, the
share below the least hourly rate, and no sum across currencies."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.selectors.pay import PAY_COLUMNS

T = datetime(2026, 1, 1, tzinfo=UTC)


def batches(rows) -> pd.DataFrame:
    """(group, stage, status, minutes from claim to submission; None: no times)."""
    frame = pd.DataFrame(
        [
            (
                g,
                s,
                status,
                None if m is None else T,
                None if m is None else T + timedelta(minutes=m),
            )
            for g, s, status, m in rows
        ],
        columns=["group", "stage", "status", "assigned_at", "submitted_at"],
    )
    for column in ("assigned_at", "submitted_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def judged(counts: dict[tuple[str, str], int]) -> pd.DataFrame:
    return pd.DataFrame(
        [(g, s) for (g, s), n in counts.items() for _ in range(n)], columns=["group", "stage"]
    )


def test_pay_hand_worked():
    rates = pd.DataFrame(
        [
            ("Lay", "S1", "batch", 2.0, "GBP", 9.0),
            ("Expert", "S1", "hour", 30.0, "USD", 20.0),
        ],
        columns=PAY_COLUMNS,
    )
    assignments = batches(
        [
            # Lay: 3 submitted batches of 10, 15 and 20 minutes; a rejected one is not paid.
            ("Lay", "S1", "submitted", 10),
            ("Lay", "S1", "submitted", 15),
            ("Lay", "S1", "submitted", 20),
            ("Lay", "S1", "rejected", 5),
            # Expert: 2 batches of 30 and 90 minutes = 2 hours.
            ("Expert", "S1", "submitted", 30),
            ("Expert", "S1", "submitted", 90),
        ]
    )
    result = metrics.pay_summary(
        rates=rates,
        assignments=assignments,
        judgements=judged({("Lay", "S1"): 12, ("Expert", "S1"): 8}),
        stage_order=["S1"],
        group_order=["Expert", "Lay"],
    )
    expert, lay = result["cells"]
    # Lay: £2 a batch → £6; per judgement 6/12; hourly 12, 8, 6 → median 8, Q1 7, Q3 10;
    # below £9: two of three batches.
    assert (lay["n_batches"], lay["total_cost"], lay["cost_per_judgement"]) == (3, 6.0, 0.5)
    assert lay["hours"] == pytest.approx(0.75)
    assert lay["hourly_rate"] == {"median": 8.0, "q1": 7.0, "q3": 10.0}
    assert lay["share_below_minimum"] == pytest.approx(2 / 3)
    # Expert: $30 an hour × 2 hours = $60; the rate earned is the rate set, above $20.
    assert (expert["total_cost"], expert["cost_per_judgement"]) == (60.0, 7.5)
    assert expert["hourly_rate"] == {"median": 30.0, "q1": 30.0, "q3": 30.0}
    assert expert["share_below_minimum"] == 0.0
    # Never summed across currencies.
    assert result["totals"] == {"GBP": 6.0, "USD": 60.0}
    # Cross-checked with numpy's quantiles of the same rates.
    assert lay["hourly_rate"]["q1"] == pytest.approx(np.quantile([12, 8, 6], 0.25))


def test_pay_without_times_says_unknown():
    rates = pd.DataFrame(
        [("Lay", "S1", "batch", 2.0, "EUR", 9.0), ("Lay", "S2", "hour", 12.0, "EUR", None)],
        columns=PAY_COLUMNS,
    )
    assignments = batches([("Lay", "S1", "submitted", None), ("Lay", "S2", "submitted", None)])
    result = metrics.pay_summary(
        rates=rates,
        assignments=assignments,
        judgements=judged({("Lay", "S1"): 3, ("Lay", "S2"): 3}),
        stage_order=["S1", "S2"],
        group_order=["Lay"],
    )
    per_batch, per_hour = result["cells"]
    # Per batch the cost is known, what it earned an hour is not.
    assert per_batch["total_cost"] == 2.0 and per_batch["hours"] is None
    assert per_batch["hourly_rate"]["median"] is None and per_batch["share_below_minimum"] is None
    # Per hour, without hours the cost is unknown.
    assert per_hour["total_cost"] is None and per_hour["cost_per_judgement"] is None
    # One of the currency's costs is unknown, so its total is too.
    assert result["totals"] == {"EUR": None}
    empty = metrics.pay_summary(
        rates=pd.DataFrame(columns=PAY_COLUMNS),
        assignments=assignments,
        judgements=None,
        stage_order=[],
        group_order=[],
    )
    assert empty == {"cells": [], "totals": {}}


def test_a_batch_without_duration_earned_without_bound_and_is_not_dropped():
    rates = pd.DataFrame([("Lay", "S1", "batch", 2.0, "GBP", 9.0)], columns=PAY_COLUMNS)
    assignments = batches(
        [
            ("Lay", "S1", "submitted", 0),
            ("Lay", "S1", "submitted", 20),
            ("Lay", "S1", "submitted", 15),
        ]
    )
    (cell,) = metrics.pay_summary(
        rates=rates,
        assignments=assignments,
        judgements=None,
        stage_order=["S1"],
        group_order=["Lay"],
    )["cells"]
    # Rates inf, 6 and 8 an hour: median 8; two of three below 9.
    assert cell["hourly_rate"]["median"] == 8.0
    assert cell["share_below_minimum"] == pytest.approx(2 / 3)
    assert cell["hourly_rate"]["q3"] is None  # (the upper quartile is unbounded)
