"""The workload overview (the laypeople-vs-experts paper's Table 2): per group and
stage, how the judgements that count were spread over annotators, batches and
reflections, and how long they took."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._common import clean

SPREADS = ("batches_per_annotator", "raters_per_reflection", "synthetic_per_batch")


def workload(
    *, judgements: pd.DataFrame, assignments: pd.DataFrame | None = None
) -> list[dict[str, Any]]:
    """One entry per (group, stage) with judgements, in group then stage order:

    * ``n_annotators``, ``n_batches`` (the batches judged: one per stage and context),
      ``n_assignments`` (batches done: each annotator's of each batch),
      ``n_human`` and ``n_synthetic`` (reflections judged), ``n_judgements``;
    * ``batches_per_annotator``, ``raters_per_reflection`` and ``synthetic_per_batch``
      (synthetic reflections of each batch judged), each ``{mean, min, max}``;
    * ``median_seconds_item``: the median time on one item (over the items with a
      recorded time; null without); ``median_seconds_batch``: the median working
      time of a batch, from its claim to its submission (``assignments``, matched
      by ``assignment_id``; null where the times are missing, as in a study
      imported from a published file).

    ``judgements``: the analysed judgements (``group``, ``stage``, ``stage_position``,
    ``rater``, ``item``, ``kind``, ``dialogue_id``, ``assignment_id``,
    ``seconds_spent``, which may be absent); attention checks are never among them.
    Without ``assignment_id`` (judgements not read from a study) there is no workload."""
    if judgements.empty or "assignment_id" not in judgements:
        return []
    # Integer codes throughout: distinct rows then sizes (``nunique``, or hashing text,
    # on a million rows costs several times more).
    group_codes, group_names = pd.factorize(judgements["group"])
    stage_codes, stage_names = pd.factorize(judgements["stage"])
    cell = group_codes.astype(np.int64) * len(stage_names) + stage_codes
    frame = pd.DataFrame(
        {
            "cell": cell,
            "rater": pd.factorize(judgements["rater"])[0],
            "item": judgements["item"].to_numpy(),
            "dialogue": pd.factorize(judgements["dialogue_id"])[0],
            "assignment": judgements["assignment_id"].to_numpy(),
            "synthetic": (judgements["kind"] != "human").to_numpy(),
            "position": judgements["stage_position"].to_numpy(),
            "seconds": judgements["seconds_spent"].astype(float).to_numpy()
            if "seconds_spent" in judgements
            else np.nan,
        }
    )

    def distinct(*columns: str) -> pd.DataFrame:
        return frame[["cell", *columns]].drop_duplicates()

    def per_cell(rows: pd.DataFrame) -> pd.Series:
        return rows.groupby("cell", sort=False).size()

    table = frame.groupby("cell", sort=False).agg(
        position=("position", "first"),
        n_judgements=("item", "size"),
        median_seconds_item=("seconds", "median"),
    )
    raters, done = distinct("rater", "assignment"), distinct("assignment")
    items, batches = distinct("item", "synthetic", "dialogue"), distinct("dialogue")
    table["n_annotators"] = per_cell(raters[["cell", "rater"]].drop_duplicates())
    table["n_batches"] = per_cell(batches)
    table["n_assignments"] = per_cell(done)
    table["n_synthetic"] = items.groupby("cell", sort=False)["synthetic"].sum()
    table["n_human"] = per_cell(items) - table["n_synthetic"]
    spreads = {
        "batches_per_annotator": raters.groupby(["cell", "rater"], sort=False).size(),
        "raters_per_reflection": distinct("item", "rater").groupby(["cell", "item"]).size(),
        "synthetic_per_batch": items.groupby(["cell", "dialogue"], sort=False)["synthetic"].sum(),
    }
    for name, values in spreads.items():
        stats = values.groupby(level="cell").agg(["mean", "min", "max"])
        for stat in ("mean", "min", "max"):
            table[f"{name}_{stat}"] = stats[stat]
    table["group"] = [str(group_names[c // len(stage_names)]) for c in table.index]
    table["stage"] = [str(stage_names[c % len(stage_names)]) for c in table.index]
    table["median_seconds_batch"] = _batch_medians(frame, assignments)
    table = table.reset_index().sort_values(["group", "position"], kind="stable")
    return [
        {
            "group": row["group"],
            "stage": row["stage"],
            "n_annotators": int(row["n_annotators"]),
            "n_batches": int(row["n_batches"]),
            "n_assignments": int(row["n_assignments"]),
            "n_human": int(row["n_human"]),
            "n_synthetic": int(row["n_synthetic"]),
            "n_judgements": int(row["n_judgements"]),
            **{
                name: {stat: clean(row[f"{name}_{stat}"]) for stat in ("mean", "min", "max")}
                for name in SPREADS
            },
            "median_seconds_item": clean(row["median_seconds_item"]),
            "median_seconds_batch": clean(row["median_seconds_batch"]),
        }
        for _, row in table.iterrows()
    ]


def _batch_medians(frame: pd.DataFrame, assignments: pd.DataFrame | None) -> pd.Series:
    """Per cell: the median seconds from claim to submission of the batches the
    judgements come from (NaN where no time is known)."""
    done = frame.drop_duplicates("assignment")[["cell", "assignment"]]
    if assignments is None or assignments.empty or "assignment_id" not in assignments:
        return pd.Series(np.nan, index=pd.Index(done["cell"].unique(), name="cell"))
    times = assignments.set_index("assignment_id")
    seconds = (times["submitted_at"] - times["assigned_at"]).dt.total_seconds()
    done = done.assign(seconds=done["assignment"].map(seconds))
    return done.groupby("cell")["seconds"].median()
