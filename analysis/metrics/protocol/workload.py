"""The workload overview (the laypeople-vs-experts paper's Table 2): per group and
stage, how the judgements that count were spread over annotators, batches and
reflections, and how long they took."""

from __future__ import annotations

from typing import Any

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
    keys = ["group", "stage"]
    frame = judgements[
        [*keys, "stage_position", "rater", "item", "kind", "dialogue_id", "assignment_id"]
    ].assign(
        seconds=judgements["seconds_spent"].astype(float)
        if "seconds_spent" in judgements
        else float("nan"),
        synthetic=judgements["kind"] != "human",
        group=judgements["group"].astype(str),
        stage=judgements["stage"].astype(str),
    )
    cells = frame.groupby(keys, sort=False)
    table = cells.agg(
        position=("stage_position", "first"),
        n_annotators=("rater", "nunique"),
        n_batches=("dialogue_id", "nunique"),
        n_assignments=("assignment_id", "nunique"),
        n_judgements=("item", "size"),
        median_seconds_item=("seconds", "median"),
    )
    kinds = frame.drop_duplicates([*keys, "item"]).groupby(keys)["synthetic"].agg(["sum", "size"])
    table["n_synthetic"] = kinds["sum"]
    table["n_human"] = kinds["size"] - kinds["sum"]
    spreads = {
        "batches_per_annotator": frame.groupby([*keys, "rater"])["assignment_id"].nunique(),
        "raters_per_reflection": frame.groupby([*keys, "item"])["rater"].nunique(),
        "synthetic_per_batch": frame.loc[frame["synthetic"]]
        .groupby([*keys, "dialogue_id"])["item"]
        .nunique()
        .reindex(frame.groupby([*keys, "dialogue_id"]).size().index, fill_value=0),
    }
    for name, values in spreads.items():
        stats = values.groupby(level=keys).agg(["mean", "min", "max"])
        for stat in ("mean", "min", "max"):
            table[f"{name}_{stat}"] = stats[stat]
    table["median_seconds_batch"] = _batch_medians(frame, assignments).reindex(table.index)
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
    """Per (group, stage): the median seconds from claim to submission of the batches
    the judgements come from (NaN where no time is known)."""
    keys = ["group", "stage"]
    done = frame.drop_duplicates("assignment_id")[[*keys, "assignment_id"]]
    if assignments is None or assignments.empty or "assignment_id" not in assignments:
        return pd.Series(float("nan"), index=pd.MultiIndex.from_frame(done[keys].drop_duplicates()))
    times = assignments.set_index("assignment_id")
    seconds = (times["submitted_at"] - times["assigned_at"]).dt.total_seconds()
    done = done.assign(seconds=done["assignment_id"].map(seconds))
    return done.groupby(keys)["seconds"].median()
