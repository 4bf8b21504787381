"""Order effects: does where an annotator saw a candidate in their shuffled batch
change their answer? Per group and stage, the coherent share by position, a
chi-squared test of position × label, and the human reflection's coherent share by
whether it came before or after the batch's first synthetic candidate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._common import clean
from ..association import chi2_test


def with_positions(judgements: pd.DataFrame, positions: pd.DataFrame | None) -> pd.DataFrame:
    """``judgements`` with ``position`` (where the annotator saw the item, 1 first,
    the attention check counted) and ``first_synthetic`` (the position of their
    batch's first synthetic candidate), from ``positions``
    (:func:`analysis.selectors.judgements.item_positions`); missing (NaN) without
    ``positions`` or for an item not in its assignment's recorded order."""
    if positions is None or positions.empty or "assignment_id" not in judgements:
        return judgements.assign(position=float("nan"), first_synthetic=float("nan"))
    first = (
        positions.loc[positions["kind"] == "synthetic"].groupby("assignment_id")["position"].min()
    )
    where = pd.MultiIndex.from_frame(positions[["assignment_id", "reflection_id"]])
    position = pd.Series(positions["position"].to_numpy(dtype=float), index=where)
    keys = pd.MultiIndex.from_arrays([judgements["assignment_id"], judgements["item"]])
    return judgements.assign(
        position=position.reindex(keys).to_numpy(),
        first_synthetic=judgements["assignment_id"].map(first).astype(float).to_numpy(),
    )


def order_effects(
    *, judgements: pd.DataFrame, stage_order: Sequence[str], group_order: Sequence[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{group: {stage: entry}}`` over the judgements with a ``position``
    (:func:`with_positions`):

    * ``positions``: per position, ``n_judgements`` and ``coherent_rate`` (attention
      checks are never among the judgements, but they take their place in the order);
    * ``chi2_p``: Pearson's chi-squared test of position × coherent/incoherent (null
      with fewer than two positions or one label);
    * ``human``: the human reflection's ``before`` and ``after`` (it came before or
      after the batch's first synthetic candidate), each ``{n_judgements,
      coherent_rate}``, and their ``chi2_p``.
    """
    if judgements.empty or "position" not in judgements:
        return {}
    placed = judgements.loc[judgements["position"].notna()]
    if placed.empty:
        return {}
    frame = placed[["group", "stage", "position", "first_synthetic", "coherent", "kind"]].assign(
        position=placed["position"].astype(int), coherent=placed["coherent"].astype(bool)
    )
    cells = {
        (str(group), str(stage)): rows
        for (group, stage), rows in frame.groupby(
            ["group", "stage"], sort=False, observed=True
        ).indices.items()
    }
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for group in group_order:
        for stage in stage_order:
            rows = cells.get((str(group), str(stage)))
            if rows is not None:
                result.setdefault(str(group), {})[str(stage)] = _cell(frame.iloc[rows])
    return result


def _cell(cell: pd.DataFrame) -> dict[str, Any]:
    counts = (
        cell.groupby(["position", "coherent"]).size().unstack("coherent", fill_value=0)
    ).reindex(columns=[True, False], fill_value=0)
    n = counts.sum(axis=1)
    human = cell.loc[cell["kind"] == "human"]
    side = pd.Series(
        (human["position"] < human["first_synthetic"]).map({True: "before", False: "after"}),
        index=human.index,
    ).where(human["first_synthetic"].notna())
    sides = human.groupby(side)["coherent"].agg(["sum", "size"])
    table = [
        [int(sides.at[s, "sum"]), int(sides.at[s, "size"] - sides.at[s, "sum"])]
        for s in ("before", "after")
        if s in sides.index
    ]
    return {
        "positions": [
            {
                "position": int(position),
                "n_judgements": int(n[position]),
                "coherent_rate": clean(counts.at[position, True] / n[position]),
            }
            for position in counts.index
        ],
        "chi2_p": chi2_test(table=counts.to_numpy()),
        "human": {
            **{
                s: {
                    "n_judgements": int(sides.at[s, "size"]) if s in sides.index else 0,
                    "coherent_rate": clean(sides.at[s, "sum"] / sides.at[s, "size"])
                    if s in sides.index
                    else None,
                }
                for s in ("before", "after")
            },
            "chi2_p": chi2_test(table=table) if len(table) == 2 else None,
        },
    }
