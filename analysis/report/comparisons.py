"""The report's ``pairwise`` and ``ranking`` blocks: the answers of the study's pairwise
and ranking stages, per group and stage (statistics:
:mod:`analysis.metrics.protocol.pairwise`, :mod:`~analysis.metrics.protocol.ranking`).

Each block's ``stages`` lists its stages in the study's order (the cells' keys do
not keep it). ``pairwise.cells[group][stage]`` holds the pairs of systems (wins, losses, ties, win
rate, Cohen's h, the binomial test with Holm's correction), the Bradley–Terry
strengths with bootstrap CIs, agreement on which candidate won, position bias and the
mean |h|; a ranking stage's cell is the pairwise wins its rankings imply, marked
``derived`` (no sides were shown: no position bias). ``pairwise.between_groups`` has
one entry per stage and pair of groups. ``ranking.cells[group][stage]`` holds each
system's mean rank with its CI, Kendall's W per context and overall, and the Friedman
test. A study without such stages has every part empty.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from ..metrics.protocol.pairwise import (
    PAIRWISE_FRAME,
    pair_outcomes,
    pairwise_cell,
    pairwise_groups_compared,
)
from ..metrics.protocol.ranking import RANKING_FRAME, implied_pairs, ranking_cell

#: The frames' columns: the group and stage, then the metrics' own.
PAIRWISE_COLUMNS = ["group", "stage", *PAIRWISE_FRAME]
RANKING_COLUMNS = ["group", "stage", *RANKING_FRAME]


@dataclass(frozen=True)
class ComparisonData:
    """What the blocks read: the pairwise answers and the rankings that count, and
    each pairwise or ranking stage (by position) with whether it allowed ties."""

    pairwise: pd.DataFrame
    ranking: pd.DataFrame
    ties: Mapping[str, bool] = field(default_factory=dict)


def comparisons_empty() -> dict:
    return {
        "pairwise": {"stages": [], "cells": {}, "between_groups": []},
        "ranking": {"stages": [], "cells": {}},
    }


def _cells(frame: pd.DataFrame, stages, build) -> dict:
    cells: dict = {}
    if frame.empty:
        return cells
    for group in sorted(frame["group"].unique().tolist(), key=str):
        in_group = frame[frame["group"] == group]
        for stage in stages:
            rows = in_group[in_group["stage"] == stage]
            cell = build(stage, rows) if not rows.empty else None
            if cell is not None:  # (none: nothing to compare, e.g. one system left)
                cells.setdefault(str(group), {})[stage] = cell
    return cells


def comparisons_build(data: ComparisonData | None, *, resamples: int, seed: int) -> dict:
    """Both blocks (see the module docstring)."""
    if data is None or not data.ties:
        return comparisons_empty()
    stages = list(data.ties)

    def pairwise(stage, rows):
        outcomes = pair_outcomes(rows)
        if outcomes.empty:
            return None
        return pairwise_cell(outcomes, ties=data.ties[stage], resamples=resamples, seed=seed)

    def derived(stage, rows):
        outcomes = pair_outcomes(implied_pairs(rows))
        if outcomes.empty:
            return None
        cell = pairwise_cell(
            outcomes, ties=data.ties[stage], resamples=resamples, seed=seed, shown=False
        )
        return {**cell, "derived": True}

    pairwise_cells = _cells(data.pairwise, stages, pairwise)
    for group, by_stage in _cells(data.ranking, stages, derived).items():
        pairwise_cells.setdefault(group, {}).update(by_stage)
    between = []
    groups = sorted(pairwise_cells, key=str)
    for stage in stages:
        for a, b in itertools.combinations(groups, 2):
            cell_a, cell_b = pairwise_cells[a].get(stage), pairwise_cells[b].get(stage)
            if cell_a is None or cell_b is None:
                continue
            between.append(
                {
                    "stage": stage,
                    "groups": [a, b],
                    "derived": bool(cell_a.get("derived")),
                    **pairwise_groups_compared(cell_a, cell_b),
                }
            )
    ranking_stages = [s for s in stages if not data.ranking[data.ranking["stage"] == s].empty]
    return {
        "pairwise": {
            "stages": [s for s in stages if any(s in c for c in pairwise_cells.values())],
            "cells": pairwise_cells,
            "between_groups": between,
        },
        "ranking": {
            "stages": ranking_stages,
            "cells": _cells(
                data.ranking,
                stages,
                lambda stage, rows: ranking_cell(rows, resamples=resamples, seed=seed),
            ),
        },
    }
