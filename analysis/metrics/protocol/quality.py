"""Annotator quality and the waiting periods annotators actually kept.

* :func:`annotator_quality`: per group and annotator, the numbers a researcher checks
  before paying or rejecting work (speed, attention checks, Yes rate, agreement with
  the rest of the group) and the flags raised on them;
* :func:`waiting_periods`: per group and pair of consecutive stages, the wait between
  an annotator's last submission in one stage and their first claim in the next.

Vectorised pandas; no Django.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pandas as pd

from .._common import clean

#: Flag codes, in the order a row lists them.
FLAG_FAST = "fast"  # most items answered faster than the threshold
FLAG_BELOW_FLOOR = "agreement_below_floor"
FLAG_OUTLIER = "agreement_outlier"  # > 2 SD below the group mean (groups of 5 or more)
FLAGS = (FLAG_FAST, FLAG_BELOW_FLOOR, FLAG_OUTLIER)

#: Below this many annotators with an agreement, a group has no meaningful spread.
OUTLIER_MIN_GROUP = 5
OUTLIER_SDS = 2.0

DEFAULT_FAST_SECONDS = 3.0
DEFAULT_AGREEMENT_FLOOR = 0.5

SECONDS_PER_DAY = 86_400.0


def agreement_with_group(
    judgements: pd.DataFrame,
    *,
    group: str = "group",
    rater: str = "rater",
    item: Sequence[str] = ("stage", "item"),
    coherent: str = "coherent",
) -> pd.Series:
    """Per (group, rater): the share of their items on which their Yes/No equals the
    majority of the item's *other* raters of the group. Items whose other raters are
    fewer than 2 or tie are left out; NaN when none remain."""
    keys = [group, *item]
    yes = judgements[coherent].astype(bool).astype(int)
    totals = yes.groupby([judgements[k] for k in keys]).transform("sum")
    counts = yes.groupby([judgements[k] for k in keys]).transform("size")
    others_yes = totals - yes
    others_n = counts - 1
    decided = (others_n >= 2) & (2 * others_yes != others_n)
    majority_yes = 2 * others_yes > others_n
    agrees = (majority_yes == yes.astype(bool)).where(decided)
    frame = pd.DataFrame(
        {group: judgements[group], rater: judgements[rater], "agrees": agrees.astype(float)}
    )
    return frame.groupby([group, rater])["agrees"].mean()


def annotator_quality(
    *,
    judgements: pd.DataFrame,
    assignments: pd.DataFrame,
    fast_seconds: float = DEFAULT_FAST_SECONDS,
    agreement_floor: float = DEFAULT_AGREEMENT_FLOOR,
    group: str = "group",
    rater: str = "rater",
) -> dict[str, dict[str, dict]]:
    """``{group: {annotator: {n_batches, median_seconds, fast_share, attention_failed,
    yes_rate, agreement_with_group, flags}}}``.

    ``partial_stages``: the stages in which a crowd worker's part ended early (they
    submitted some batches, then none could be theirs right away: the assignments'
    optional ``ended_early`` column, with ``stage``).

    ``judgements``: the analysed judgements (``group``, ``rater``, ``stage``, ``item``,
    ``coherent``, ``seconds_spent`` and ``assignment_id``, whose distinct values are the
    batches that count). ``assignments``: every assignment of the annotators
    (``group``, ``annotator``, ``attention_passed``), whatever its status, so that a
    batch rejected for its attention check still counts as a failure.

    ``median_seconds`` and ``fast_share`` (the share of items answered in less than
    ``fast_seconds``) are over the items with a recorded time; null without any.
    Flags: :data:`FLAG_FAST` when more than half the items are fast,
    :data:`FLAG_BELOW_FLOOR` when the agreement is below ``agreement_floor``,
    :data:`FLAG_OUTLIER` when it is more than 2 standard deviations below the mean of
    the group's annotators (groups with at least 5 annotators with an agreement).
    """
    seconds = judgements["seconds_spent"].astype(float)
    per_rater = pd.DataFrame(
        {
            group: judgements[group],
            rater: judgements[rater],
            "batch": judgements["assignment_id"],
            "seconds": seconds,
            "fast": (seconds < fast_seconds).astype(float).where(seconds.notna()),
            "yes": judgements["coherent"].astype(bool).astype(float),
        }
    ).groupby([group, rater])
    table = pd.DataFrame(
        {
            "n_batches": per_rater["batch"].nunique(),
            "median_seconds": per_rater["seconds"].median(),
            "fast_share": per_rater["fast"].mean(),
            "yes_rate": per_rater["yes"].mean(),
            "agreement_with_group": agreement_with_group(judgements, group=group, rater=rater),
        }
    )
    failed = (
        assignments.assign(failed=assignments["attention_passed"].eq(False))
        .groupby(["group", "annotator"])["failed"]
        .sum()
        .rename_axis([group, rater])
    )
    table = table.join(failed.rename("attention_failed"), how="outer")
    if "ended_early" in assignments:
        ended_early = (
            assignments.loc[assignments["ended_early"].astype(bool)]
            .groupby(["group", "annotator"])["stage"]
            .nunique()
            .rename_axis([group, rater])
        )
        table = table.join(ended_early.rename("partial_stages"), how="left")
    else:
        table["partial_stages"] = 0
    table["n_batches"] = table["n_batches"].fillna(0)
    table["attention_failed"] = table["attention_failed"].fillna(0)
    # Annotators with neither counted work nor a failed check (only open batches, say)
    # have nothing to show yet.
    table = table.loc[(table["n_batches"] > 0) | (table["attention_failed"] > 0)]

    agreement = table["agreement_with_group"]
    by_group = agreement.groupby(level=0)
    mean, sd, n = by_group.transform("mean"), by_group.transform("std"), by_group.transform("count")
    flags = pd.DataFrame(
        {
            FLAG_FAST: table["fast_share"] > 0.5,
            FLAG_BELOW_FLOOR: agreement < agreement_floor,
            FLAG_OUTLIER: (n >= OUTLIER_MIN_GROUP) & (agreement < mean - OUTLIER_SDS * sd),
        }
    )
    result: dict[str, dict[str, dict]] = {}
    for (group_name, name), row, row_flags in zip(
        table.index, table.to_dict("records"), flags.to_numpy().tolist(), strict=True
    ):
        result.setdefault(str(group_name), {})[str(name)] = {
            "n_batches": int(row["n_batches"]),
            "median_seconds": clean(row["median_seconds"]),
            "fast_share": clean(row["fast_share"]),
            "attention_failed": int(row["attention_failed"]),
            "partial_stages": int(0 if pd.isna(row["partial_stages"]) else row["partial_stages"]),
            "yes_rate": clean(row["yes_rate"]),
            "agreement_with_group": clean(row["agreement_with_group"]),
            "flags": [code for code, on in zip(FLAGS, row_flags, strict=True) if on],
        }
    return result


def waiting_periods(
    *, assignments: pd.DataFrame, stage_order: Sequence[str]
) -> dict[str, list[dict]]:
    """``{group: [{from, to, n, mean_days, sd_days, min_days, max_days}]}``, one entry
    per pair of consecutive stages of ``stage_order`` (the study's stages by position).

    ``assignments``: one row per assignment (``group``, ``annotator``, ``stage``,
    ``assigned_at``, ``submitted_at``, timezone-aware). An annotator's wait is from
    their last submission in a stage (any batch they submitted, even one rejected
    later) to their first claim in the next; annotators without both are not counted
    (``n``). The standard deviation is the sample one (null below 2 annotators).

    Without any time (a study whose times were not recorded: ``assignments_frame``
    leaves them missing) ``n`` counts the annotators with work in both stages and
    every statistic of days is null: unknown, not zero."""
    if assignments.empty or len(stage_order) < 2:
        return {}
    position = {str(name): i for i, name in enumerate(stage_order)}
    frame = assignments.assign(step=assignments["stage"].astype(str).map(position))
    per_stage = frame.groupby(["group", "annotator", "step"]).agg(
        last_submitted=("submitted_at", "max"), first_claimed=("assigned_at", "min")
    )
    times_known = assignments["assigned_at"].notna().any()
    ends = per_stage["last_submitted"]
    ends = (ends.dropna() if times_known else ends).reset_index()
    starts = per_stage["first_claimed"].reset_index()
    starts["step"] -= 1  # the claim in stage i + 1 ends the wait after stage i
    waits = ends.merge(starts, on=["group", "annotator", "step"])
    waits["days"] = (
        waits["first_claimed"] - waits["last_submitted"]
    ).dt.total_seconds() / SECONDS_PER_DAY
    stats = waits.groupby(["group", "step"])["days"].agg(["size", "mean", "std", "min", "max"])
    result: dict[str, list[dict]] = {}
    for group_name in sorted(assignments["group"].unique(), key=str):
        entries = []
        for step, (stage_from, stage_to) in enumerate(itertools.pairwise(stage_order)):
            row = stats.loc[(group_name, step)] if (group_name, step) in stats.index else None
            n = 0 if row is None else int(row["size"])
            entries.append(
                {
                    "from": str(stage_from),
                    "to": str(stage_to),
                    "n": n,
                    "mean_days": clean(row["mean"]) if n else None,
                    "sd_days": clean(row["std"]) if n >= 2 else None,
                    "min_days": clean(row["min"]) if n else None,
                    "max_days": clean(row["max"]) if n else None,
                }
            )
        result[str(group_name)] = entries
    return result
