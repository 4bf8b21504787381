"""Annotator quality and waiting periods (analysis.metrics.protocol.quality): worked by
hand, and cross-checked against a plain re-implementation of the definitions."""

import statistics
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import annotator_quality, waiting_periods
from analysis.metrics.protocol.quality import (
    FLAG_BELOW_FLOOR,
    FLAG_FAST,
    FLAG_OUTLIER,
    agreement_with_group,
)
from analysis.report.build import no_judgements_frame


def frame(rows, *, seconds=None):
    """Judgements from (rater, stage, item, coherent) rows, one batch per rater and
    stage, every item answered in 10 s unless ``seconds`` gives the times."""
    data = pd.DataFrame(rows, columns=["rater", "stage", "item", "coherent"])
    data["group"] = "Lay"
    data["seconds_spent"] = 10.0 if seconds is None else seconds
    data["assignment_id"] = data["rater"] + "/" + data["stage"]
    return data


NO_ASSIGNMENTS = pd.DataFrame(columns=["group", "annotator", "attention_passed"])

# Four raters; item 3 has only A and B (each has one other rater: left out), and item 1
# recurs in stage 2 as a separate item (where C, D and A agree on No).
WORKED = [
    ("A", "s1", 1, True), ("B", "s1", 1, True), ("C", "s1", 1, True), ("D", "s1", 1, False),
    ("A", "s1", 2, True), ("B", "s1", 2, False), ("C", "s1", 2, False), ("D", "s1", 2, True),
    ("A", "s1", 3, True), ("B", "s1", 3, False),
    ("A", "s2", 1, False), ("C", "s2", 1, False), ("D", "s2", 1, False),
]  # fmt: skip


def test_agreement_with_group_worked_example():
    # Item 1 (s1): A, B, C each meet a Yes majority of the others (agree); D's others
    # are all Yes (disagrees). Item 2: every rater's others split 2–1 against them.
    # Item 1 (s2): everyone's two others say No, as they do (agree).
    # A: 2 of 3; B: 1 of 2; C: 2 of 3; D: 1 of 3.
    result = agreement_with_group(frame(WORKED))
    assert result.to_dict() == pytest.approx(
        {("Lay", "A"): 2 / 3, ("Lay", "B"): 1 / 2, ("Lay", "C"): 2 / 3, ("Lay", "D"): 1 / 3}
    )


def test_agreement_is_null_without_decided_items_and_ties_are_left_out():
    rows = [
        ("A", "s1", 1, True), ("B", "s1", 1, True),  # A's others: 1 rater
        ("A", "s1", 2, True), ("B", "s1", 2, True), ("C", "s1", 2, False),
    ]  # fmt: skip
    # Item 2: A's others B=Yes, C=No tie: left out; C's others are both Yes.
    report = annotator_quality(judgements=frame(rows), assignments=NO_ASSIGNMENTS)["Lay"]
    assert report["A"]["agreement_with_group"] is None
    assert report["B"]["agreement_with_group"] is None
    assert report["C"]["agreement_with_group"] == 0.0


def plain_agreement(rows):
    """The definition read literally, one rater and item at a time."""
    result = {}
    for rater in sorted({r for r, *_ in rows}):
        agree = decided = 0
        for r, stage, item, yes in rows:
            if r != rater:
                continue
            others = [y for r2, s2, i2, y in rows if (s2, i2) == (stage, item) and r2 != rater]
            n_yes = sum(others)
            if len(others) < 2 or 2 * n_yes == len(others):
                continue
            decided += 1
            agree += (2 * n_yes > len(others)) == yes
        result[rater] = agree / decided if decided else None
    return result


def test_agreement_matches_a_plain_reimplementation_on_random_data():
    rng = np.random.default_rng(7)
    rows = [
        (f"R{r}", f"s{s}", int(i), bool(rng.random() < 0.7))
        for s in (1, 2)
        for i in range(12)
        for r in rng.choice(8, size=int(rng.integers(1, 6)), replace=False)
    ]
    report = annotator_quality(judgements=frame(rows), assignments=NO_ASSIGNMENTS)["Lay"]
    expected = plain_agreement(rows)
    for rater, value in expected.items():
        got = report[rater]["agreement_with_group"]
        assert (got is None and value is None) or got == pytest.approx(value)


def test_speed_yes_rate_batches_and_attention_failures():
    rows = [("A", "s1", 1, True), ("A", "s1", 2, True), ("A", "s2", 3, False)]
    assignments = pd.DataFrame(
        {
            "group": ["Lay"] * 4,
            "annotator": ["A", "A", "A", "Z"],
            "attention_passed": [True, False, None, False],
        }
    )
    report = annotator_quality(
        judgements=frame(rows, seconds=[1.0, 2.0, 10.0]), assignments=assignments
    )["Lay"]
    assert report["A"] == {
        "n_batches": 2,
        "median_seconds": 2.0,
        "fast_share": pytest.approx(2 / 3),
        "attention_failed": 1,
        "partial_stages": 0,
        "yes_rate": pytest.approx(2 / 3),
        "agreement_with_group": None,
        "flags": [FLAG_FAST],  # two of three items under 3 s
    }
    # Z's only batch was rejected for its attention check: listed, nothing counted.
    assert report["Z"]["n_batches"] == 0 and report["Z"]["attention_failed"] == 1
    assert report["Z"]["median_seconds"] is None and report["Z"]["flags"] == []


def test_stages_ended_early_count_each_stage_once():
    # A's part of s1 ended early after two batches (both rows carry the flag), and of
    # s2 after one; B finished s1 in full: A 2 stages, B none.
    rows = [("A", "s1", 1, True), ("A", "s1", 2, True), ("A", "s2", 3, True), ("B", "s1", 1, True)]
    assignments = pd.DataFrame(
        {
            "group": ["Lay"] * 4,
            "annotator": ["A", "A", "A", "B"],
            "stage": ["s1", "s1", "s2", "s1"],
            "attention_passed": [True] * 4,
            "ended_early": [True, True, True, False],
        }
    )
    report = annotator_quality(judgements=frame(rows), assignments=assignments)["Lay"]
    assert (report["A"]["partial_stages"], report["B"]["partial_stages"]) == (2, 0)


def test_fast_threshold_and_unrecorded_times():
    rows = [("A", "s1", 1, True), ("A", "s1", 2, True), ("A", "s1", 3, True)]
    judgements = frame(rows, seconds=[1.0, 5.0, np.nan])
    report = annotator_quality(judgements=judgements, assignments=NO_ASSIGNMENTS)["Lay"]["A"]
    assert report["fast_share"] == 0.5 and report["flags"] == []  # half is not most
    report = annotator_quality(judgements=judgements, assignments=NO_ASSIGNMENTS, fast_seconds=6)[
        "Lay"
    ]["A"]
    assert report["fast_share"] == 1.0 and report["flags"] == [FLAG_FAST]


def unanimous_but_one(n_raters):
    """``n_raters`` raters on 10 items: all say Yes but the last, who says No."""
    return [(f"R{r}", "s1", item, r < n_raters - 1) for item in range(10) for r in range(n_raters)]


def test_outlier_flag_only_in_groups_of_five_or_more():
    # Six raters: R0..R4 agree on every item (1.0), R5 on none (0.0). Mean 5/6, sample
    # SD sqrt(1/6) = 0.408; 5/6 - 2 × 0.408 = 0.017 > 0: R5 is an outlier.
    report = annotator_quality(judgements=frame(unanimous_but_one(6)), assignments=NO_ASSIGNMENTS)
    assert report["Lay"]["R5"]["flags"] == [FLAG_BELOW_FLOOR, FLAG_OUTLIER]
    assert all(report["Lay"][f"R{r}"]["flags"] == [] for r in range(5))
    mean, sd = statistics.mean([1] * 5 + [0]), statistics.stdev([1] * 5 + [0])
    assert mean - 2 * sd > 0  # the cross-check of the threshold
    # Four raters: too few for a spread; the floor still applies.
    report = annotator_quality(judgements=frame(unanimous_but_one(4)), assignments=NO_ASSIGNMENTS)
    assert report["Lay"]["R3"]["flags"] == [FLAG_BELOW_FLOOR]
    report = annotator_quality(
        judgements=frame(unanimous_but_one(4)), assignments=NO_ASSIGNMENTS, agreement_floor=0
    )
    assert report["Lay"]["R3"]["flags"] == []


def day(n: float) -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=n)


def assignment_rows(rows):
    data = pd.DataFrame(
        rows, columns=["group", "annotator", "stage", "assigned_at", "submitted_at"]
    )
    for column in ("assigned_at", "submitted_at"):
        data[column] = pd.to_datetime(data[column], utc=True)
    return data


def test_waiting_periods_worked_example():
    data = assignment_rows(
        [
            # X: last submission in s1 on day 1, first claim in s2 on day 4.5 → 3.5 days.
            ("Lay", "X", "s1", day(0), day(0.1)),
            ("Lay", "X", "s1", day(0.5), day(1)),
            ("Lay", "X", "s2", day(4.5), day(4.6)),
            ("Lay", "X", "s2", day(6), None),
            # Y: day 2 → day 5: 3 days. Z never reached s2; W's s1 batch never submitted.
            ("Lay", "Y", "s1", day(1), day(2)),
            ("Lay", "Y", "s2", day(5), None),
            ("Lay", "Z", "s1", day(1), day(2)),
            ("Lay", "W", "s1", day(1), None),
            ("Lay", "W", "s2", day(9), None),
            ("Expert", "E", "s1", day(0), day(1)),
        ]
    )
    result = waiting_periods(assignments=data, stage_order=["s1", "s2", "s3"])
    lay = result["Lay"]
    assert lay[0] == {
        "from": "s1",
        "to": "s2",
        "n": 2,
        "mean_days": pytest.approx(3.25),
        "sd_days": pytest.approx(statistics.stdev([3.5, 3.0])),
        "min_days": pytest.approx(3.0),
        "max_days": pytest.approx(3.5),
    }
    empty = {"n": 0, "mean_days": None, "sd_days": None, "min_days": None, "max_days": None}
    assert lay[1] == {"from": "s2", "to": "s3", **empty}
    assert result["Expert"][0] == {"from": "s1", "to": "s2", **empty}
    # One annotator: a mean, no standard deviation.
    one = waiting_periods(assignments=data.loc[data["annotator"] != "Y"], stage_order=["s1", "s2"])
    assert one["Lay"][0]["n"] == 1 and one["Lay"][0]["sd_days"] is None
    assert one["Lay"][0]["mean_days"] == pytest.approx(3.5)


def test_waiting_periods_without_recorded_times_are_unknown_not_zero():
    """A study imported from a published file: the frame has no times. The annotators
    who went on are counted; their waits are unknown (null), not 0.0 ± 0.0."""
    data = assignment_rows(
        [
            ("Lay", "X", "s1", None, None),
            ("Lay", "X", "s2", None, None),
            ("Lay", "Y", "s1", None, None),
            ("Lay", "Y", "s2", None, None),
            ("Lay", "Z", "s1", None, None),
        ]
    )
    (entry,) = waiting_periods(assignments=data, stage_order=["s1", "s2"])["Lay"]
    assert entry == {
        "from": "s1",
        "to": "s2",
        "n": 2,
        "mean_days": None,
        "sd_days": None,
        "min_days": None,
        "max_days": None,
    }


def test_waiting_periods_without_a_second_stage():
    data = assignment_rows([("Lay", "X", "s1", day(0), day(1))])
    assert waiting_periods(assignments=data, stage_order=["s1"]) == {}


def test_annotators_with_only_rejected_work_still_show_their_failed_checks():
    assignments = pd.DataFrame({"group": ["Lay"], "annotator": ["A"], "attention_passed": [False]})
    report = annotator_quality(judgements=no_judgements_frame(), assignments=assignments)
    assert report == {
        "Lay": {
            "A": {
                "n_batches": 0,
                "median_seconds": None,
                "fast_share": None,
                "attention_failed": 1,
                "partial_stages": 0,
                "yes_rate": None,
                "agreement_with_group": None,
                "flags": [],
            }
        }
    }
