"""The workload overview on a hand-made frame, and cross-checked against plain loops
on random data."""

from datetime import UTC, datetime, timedelta
from statistics import median

import numpy as np
import pandas as pd
import pytest

from analysis import metrics

T = datetime(2026, 1, 1, tzinfo=UTC)


def judgements(rows) -> pd.DataFrame:
    """(group, stage, position, rater, item, kind, context, assignment, seconds)."""
    return pd.DataFrame(
        rows,
        columns=[
            "group",
            "stage",
            "stage_position",
            "rater",
            "item",
            "kind",
            "dialogue_id",
            "assignment_id",
            "seconds_spent",
        ],
    )


def assignments(times: dict[int, float | None]) -> pd.DataFrame:
    """assignment id → minutes from claim to submission (None: no times)."""
    frame = pd.DataFrame(
        {
            "assignment_id": list(times),
            "assigned_at": [None if m is None else T for m in times.values()],
            "submitted_at": [
                None if m is None else T + timedelta(minutes=m) for m in times.values()
            ],
        }
    )
    for column in ("assigned_at", "submitted_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


# Lay, stage S: rater a did batches 1 (context c1: human h1, synthetic x1, x2) and 2
# (context c2: h2, x3); rater b did c1 only (assignment 3). Expert, stage S: e did c2.
ROWS = [
    ("Lay", "S", 1, "a", "h1", "human", "c1", 1, 4.0),
    ("Lay", "S", 1, "a", "x1", "synthetic", "c1", 1, 6.0),
    ("Lay", "S", 1, "a", "x2", "synthetic", "c1", 1, None),
    ("Lay", "S", 1, "a", "h2", "human", "c2", 2, 2.0),
    ("Lay", "S", 1, "a", "x3", "synthetic", "c2", 2, 10.0),
    ("Lay", "S", 1, "b", "h1", "human", "c1", 3, 3.0),
    ("Lay", "S", 1, "b", "x1", "synthetic", "c1", 3, 5.0),
    ("Lay", "S", 1, "b", "x2", "synthetic", "c1", 3, 7.0),
    ("Expert", "S", 1, "e", "h2", "human", "c2", 4, None),
    ("Expert", "S", 1, "e", "x3", "synthetic", "c2", 4, None),
]


def test_workload_hand_worked():
    result = metrics.workload(
        judgements=judgements(ROWS), assignments=assignments({1: 10, 2: 4, 3: 6, 4: None})
    )
    assert [(e["group"], e["stage"]) for e in result] == [("Expert", "S"), ("Lay", "S")]
    expert, lay = result
    assert {k: lay[k] for k in lay if k.startswith("n_")} == {
        "n_annotators": 2,
        "n_batches": 2,
        "n_assignments": 3,
        "n_human": 2,
        "n_synthetic": 3,
        "n_judgements": 8,
    }
    # a did 2 batches, b 1; h1, x1, x2 had 2 raters, h2 and x3 one; c1 has 2 synthetic,
    # c2 one.
    assert lay["batches_per_annotator"] == {"mean": 1.5, "min": 1.0, "max": 2.0}
    assert lay["raters_per_reflection"] == {"mean": pytest.approx(8 / 5), "min": 1.0, "max": 2.0}
    assert lay["synthetic_per_batch"] == {"mean": 1.5, "min": 1.0, "max": 2.0}
    # Seconds per item: 2, 3, 4, 5, 6, 7, 10 (one missing) → 5; batches 10, 4, 6 minutes.
    assert lay["median_seconds_item"] == 5.0
    assert lay["median_seconds_batch"] == 360.0
    # No times at all: unknown, not zero.
    assert expert["median_seconds_item"] is None and expert["median_seconds_batch"] is None
    assert expert["n_assignments"] == 1 and expert["synthetic_per_batch"]["mean"] == 1.0


def test_a_batch_without_synthetic_reflections_counts_as_none():
    rows = [
        ("Lay", "S", 1, "a", "h1", "human", "c1", 1, 1.0),
        ("Lay", "S", 1, "a", "h2", "human", "c2", 2, 1.0),
        ("Lay", "S", 1, "a", "x2", "synthetic", "c2", 2, 1.0),
    ]
    (entry,) = metrics.workload(judgements=judgements(rows))
    assert entry["synthetic_per_batch"] == {"mean": 0.5, "min": 0.0, "max": 1.0}
    assert entry["median_seconds_batch"] is None  # no assignments given
    assert metrics.workload(judgements=judgements([])) == []


@pytest.mark.parametrize("seed", range(3))
def test_workload_matches_loops_on_random_data(seed):
    rng = np.random.default_rng(seed)
    rows, times, assignment = [], {}, 0
    for group in ("Lay", "Expert"):
        for position, stage in enumerate(("S1", "S2"), start=1):
            for context in range(6):
                items = [f"h{context}"] + [f"x{context}-{n}" for n in range(rng.integers(1, 4))]
                for rater in rng.choice(list("abcde"), size=rng.integers(1, 4), replace=False):
                    assignment += 1
                    times[assignment] = float(rng.integers(1, 30))
                    for item in items:
                        kind = "human" if item.startswith("h") else "synthetic"
                        seconds = None if rng.random() < 0.1 else float(rng.integers(1, 20))
                        rows.append(
                            (group, stage, position, f"{group}{rater}", item, kind, context,
                             assignment, seconds)
                        )  # fmt: skip
    frame = judgements(rows)
    result = {(e["group"], e["stage"]): e for e in metrics.workload(
        judgements=frame, assignments=assignments(times)
    )}  # fmt: skip
    for (group, stage), cell in frame.groupby(["group", "stage"]):
        entry = result[(group, stage)]
        per_rater = [len(set(r["assignment_id"])) for _, r in cell.groupby("rater")]
        per_item = [len(set(r["rater"])) for _, r in cell.groupby("item")]
        per_batch = [
            len({i for i, k in zip(r["item"], r["kind"], strict=True) if k == "synthetic"})
            for _, r in cell.groupby("dialogue_id")
        ]
        for name, values in (
            ("batches_per_annotator", per_rater),
            ("raters_per_reflection", per_item),
            ("synthetic_per_batch", per_batch),
        ):
            assert entry[name] == {
                "mean": pytest.approx(sum(values) / len(values)),
                "min": min(values),
                "max": max(values),
            }
        seconds = [s for s in cell["seconds_spent"] if s == s and s is not None]
        assert entry["median_seconds_item"] == pytest.approx(median(seconds))
        batch_minutes = [times[a] for a in set(cell["assignment_id"])]
        assert entry["median_seconds_batch"] == pytest.approx(60 * median(batch_minutes))
        assert entry["n_judgements"] == len(cell)
        assert entry["n_assignments"] == len(set(cell["assignment_id"]))
        assert entry["n_human"] + entry["n_synthetic"] == len(set(cell["item"]))
