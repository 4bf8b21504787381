"""Agreement over time: the kappas over the judgements submitted up to each day, pinned
by hand and checked against the whole cell's kappas on the last day."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa

from analysis.metrics.protocol.over_time import agreement_over_time
from analysis.metrics.protocol.summary import agreement_summary


def frame(rows):
    """rows: (item, rater, coherent, submitted at)."""
    data = pd.DataFrame(rows, columns=["item", "rater", "coherent", "submitted"])
    return data, pd.to_datetime(data["submitted"], utc=True)


def test_each_day_counts_what_was_submitted_up_to_its_end():
    judgements, submitted = frame(
        [
            # Day 1: items 1 and 2 judged twice (agree on 1, split on 2), item 3 once.
            (1, "a", True, "2026-03-01T09:00Z"),
            (1, "b", True, "2026-03-01T23:59Z"),
            (2, "a", True, "2026-03-01T10:00Z"),
            (2, "b", False, "2026-03-01T11:00Z"),
            (3, "a", False, "2026-03-01T12:00Z"),
            # Day 2 (a day without submissions between): every item's third judgement.
            (1, "c", True, "2026-03-03T00:00Z"),
            (2, "c", False, "2026-03-03T08:00Z"),
            (3, "b", False, "2026-03-03T08:00Z"),
            (3, "c", False, "2026-03-03T09:00Z"),
        ]
    )
    first, last = agreement_over_time(judgements=judgements, submitted=submitted)
    assert [first["day"], last["day"]] == ["2026-03-01", "2026-03-03"]
    assert (first["n_judgements"], last["n_judgements"]) == (5, 9)
    # Day 1: item 3 has one judgement and waits; items 1 and 2 by two raters.
    # Coherent/incoherent counts (2, 0) and (1, 1): P̄ = (1 + 0) / 2 = 0.5; the shares
    # are 3/4 and 1/4, P̄e = 9/16 + 1/16 = 5/8, Fleiss = (0.5 − 0.625) / 0.375 = −1/3;
    # Randolph: P̄e = 1/2, (0.5 − 0.5) / 0.5 = 0.
    assert (first["n_items"], first["raters_per_item"]) == (2, 2)
    assert first["fleiss_kappa"] == pytest.approx(-1 / 3)
    assert first["randolph_kappa"] == pytest.approx(0.0)
    # Day 3: (3, 0), (1, 2), (0, 3) by three raters, as statsmodels has it.
    table = np.array([[3, 0], [1, 2], [0, 3]])
    assert (last["n_items"], last["raters_per_item"]) == (3, 3)
    assert last["fleiss_kappa"] == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert last["randolph_kappa"] == pytest.approx(fleiss_kappa(table, method="randolph"))


def test_the_last_day_is_the_cells_own_kappas():
    rng = np.random.default_rng(5)
    rows = []
    for item in range(60):
        raters = 3 if item % 5 else 2  # the modal count is 3, some items have 2
        for rater in range(raters):
            day = int(rng.integers(1, 9))
            rows.append((item, f"r{rater}", bool(rng.random() < 0.6), f"2026-05-{day:02d}T10:00Z"))
    judgements, submitted = frame(rows)
    entries = agreement_over_time(judgements=judgements, submitted=submitted)
    summary = agreement_summary(
        ratings=judgements.assign(label=np.where(judgements["coherent"], "yes", "no")),
        categories=["yes", "no"],
        resamples=0,
    )
    assert entries[-1]["n_judgements"] == len(rows)
    assert entries[-1]["fleiss_kappa"] == pytest.approx(summary["fleiss_kappa"])
    assert entries[-1]["randolph_kappa"] == pytest.approx(summary["randolph_kappa"])
    assert entries[-1]["n_items"] == summary["n_items"]
    days = [entry["day"] for entry in entries]
    assert days == sorted(days) and len(set(days)) == len(days)
    assert [e["n_judgements"] for e in entries] == sorted(e["n_judgements"] for e in entries)


def test_judgements_without_a_time_are_left_out_and_none_gives_nothing():
    judgements, submitted = frame(
        [(1, "a", True, "2026-01-01T10:00Z"), (1, "b", True, None), (2, "a", False, None)]
    )
    (only,) = agreement_over_time(judgements=judgements, submitted=submitted)
    assert only["n_judgements"] == 1
    assert only["n_items"] == 0 and only["fleiss_kappa"] is None  # no item has two yet
    judgements, submitted = frame([(1, "a", True, None), (1, "b", False, None)])
    assert agreement_over_time(judgements=judgements, submitted=submitted) == []
