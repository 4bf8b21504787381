"""The report's ``likert`` block: the ratings of the study's Likert stages, per group,
stage, system (the stage's source) and dimension, the systems of a group compared,
and each pair of groups compared (statistics: :mod:`analysis.metrics.protocol.likert`).

``dimensions`` lists each Likert stage's dimensions in order (name, statement, scale,
labels); ``cells[group][stage][dimension]`` holds ``alpha`` (the group's agreement on
the dimension, every system together), ``systems`` (source → the cell's summary) and
``system_pairs``; ``between_groups`` one entry per stage, dimension and
pair of groups; ``automatic_evaluators`` one entry per stage, evaluator, group and
dimension (the evaluator's scores against the group's item means). A study without
Likert stages has every part empty.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from ..metrics.association import inter_group_correlation
from ..metrics.protocol.likert import (
    item_means,
    likert_alpha,
    likert_cell,
    likert_groups_compared,
    likert_system_pairs,
)

#: The ratings frame (:func:`analysis.selectors.likert.likert_ratings_frame`): one row
#: per rating that counts.
LIKERT_COLUMNS = [
    "group",
    "stage",
    "source",
    "dimension",
    "item",
    "rater",
    "value",
    "cannot_judge",
]


@dataclass(frozen=True)
class LikertData:
    """What the block reads: the ratings, and each Likert stage's dimensions in order
    (``{"name", "statement", "scale", "points", "labels"}``), stages by position."""

    ratings: pd.DataFrame
    dimensions: Mapping[str, Sequence[dict]] = field(default_factory=dict)


def likert_empty() -> dict:
    return {"dimensions": {}, "cells": {}, "between_groups": [], "automatic_evaluators": []}


def likert_build(
    data: LikertData | None,
    *,
    resamples: int,
    seed: int,
    scores: pd.DataFrame | None = None,
) -> dict:
    """The block (see the module docstring); ``scores`` the automatic evaluators'
    scores (``stage``, ``evaluator``, ``reflection_id``, ``score``), each correlated
    with every group's item means per dimension of its stage (``automatic_evaluators``)."""
    if data is None or not data.dimensions:
        return likert_empty()
    ratings = data.ratings
    groups = sorted(ratings["group"].unique().tolist(), key=str) if len(ratings) else []
    cells: dict = {}
    means: dict = {}  # (group, stage, dimension) -> {source: item means}
    for group in groups:
        in_group = ratings[ratings["group"] == group]
        for stage, dimensions in data.dimensions.items():
            in_stage = in_group[in_group["stage"] == stage]
            if in_stage.empty:
                continue
            for dimension in dimensions:
                rated = in_stage[in_stage["dimension"] == dimension["name"]]
                if rated.empty:
                    continue
                by_source = {
                    str(source): rows
                    for source, rows in rated.groupby("source", sort=True, observed=True)
                }
                item_means_by_source = {s: item_means(rows) for s, rows in by_source.items()}
                means[(group, stage, dimension["name"])] = item_means_by_source
                cells.setdefault(group, {}).setdefault(stage, {})[dimension["name"]] = {
                    "alpha": likert_alpha(rated, points=dimension["points"]),
                    "systems": {
                        source: likert_cell(
                            rows, points=dimension["points"], resamples=resamples, seed=seed
                        )
                        for source, rows in by_source.items()
                    },
                    "system_pairs": likert_system_pairs(item_means_by_source),
                }
    between = []
    for stage, dimensions in data.dimensions.items():
        for dimension in dimensions:
            for group_a, group_b in itertools.combinations(groups, 2):
                a = means.get((group_a, stage, dimension["name"]))
                b = means.get((group_b, stage, dimension["name"]))
                if a is None or b is None:
                    continue
                between.append(
                    {
                        "stage": stage,
                        "dimension": dimension["name"],
                        "groups": [str(group_a), str(group_b)],
                        **likert_groups_compared(a, b),
                    }
                )
    return {
        "dimensions": {stage: list(dims) for stage, dims in data.dimensions.items()},
        "cells": cells,
        "between_groups": between,
        "automatic_evaluators": _automatic_evaluators(data, scores, groups),
    }


def _automatic_evaluators(
    data: LikertData, scores: pd.DataFrame | None, groups: list
) -> list[dict]:
    """Per Likert stage, evaluator, group and dimension: Spearman's (and Pearson's)
    correlation between the evaluator's scores and the group's item means (every
    system of the stage together), as the coherence scores are correlated."""
    if scores is None or scores.empty:
        return []
    ratings = data.ratings
    entries = []
    for stage, dimensions in data.dimensions.items():
        in_stage = scores[scores["stage"] == stage]
        for evaluator in sorted(in_stage["evaluator"].unique().tolist(), key=str):
            automatic = in_stage[in_stage["evaluator"] == evaluator].set_index("reflection_id")[
                "score"
            ]
            for group in groups:
                rated = ratings[(ratings["group"] == group) & (ratings["stage"] == stage)]
                for dimension in dimensions:
                    by_item = item_means(rated[rated["dimension"] == dimension["name"]])
                    if by_item.empty:
                        continue
                    entries.append(
                        {
                            "stage": stage,
                            "evaluator": str(evaluator),
                            "group": str(group),
                            "dimension": dimension["name"],
                            **inter_group_correlation(scores_a=automatic, scores_b=by_item),
                        }
                    )
    return entries
