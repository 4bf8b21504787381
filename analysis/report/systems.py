"""The report's system-level keys (``systems``, ``system_pairs``,
``group_comparisons``, ``generation_settings``, ``generation_trends``,
``generation_crossed``,
``automatic_evaluators_by_source``,
``automatic_evaluators_systems``): which system is more coherent, for which group,
per generation setting, and whether automatic metrics agree at system level.

A *system* is a (stage, source) cell of the analysed judgements, the human
reflections of each stage included; excluded sources never appear (they are not
in the judgements). This module only slices the analysed frame and names the
results; the statistics live in :mod:`analysis.metrics.protocol`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import metrics
from ..metrics.protocol.items import ITEM_TABLE_INPUT

SYSTEM_REPORT_KEYS = (
    "systems",
    "system_pairs",
    "group_comparisons",
    "generation_settings",
    "generation_trends",
    "generation_crossed",
    "automatic_evaluators_by_source",
    "automatic_evaluators_systems",
)


def systems_empty() -> dict[str, Any]:
    """The keys of a report without judgements."""
    return {
        "systems": {},
        "system_pairs": {},
        "group_comparisons": [],
        "generation_settings": {},
        "generation_trends": {},
        "generation_crossed": {},
        "automatic_evaluators_by_source": [],
        "automatic_evaluators_systems": [],
    }


def _generation(
    items: pd.DataFrame,
    values: pd.DataFrame,
    slugs: list[str],
    stage_order: list[str],
    group_order: list[str],
    merge: dict[str, str],
) -> dict:
    result: dict = {}
    if values.empty:
        return result
    cells = items.groupby(["group", "stage"], sort=False).indices
    for group in group_order:
        for stage in stage_order:
            if (group, stage) not in cells:
                continue
            settings = metrics.generation_settings(
                items=items.iloc[cells[(group, stage)]],
                values=values,
                categories=slugs,
                mee_merge=merge,
            )
            if settings:
                result.setdefault(group, {})[stage] = settings
    return result


def _crossed(
    items: pd.DataFrame,
    values: pd.DataFrame,
    slugs: list[str],
    stage_order: list[str],
    group_order: list[str],
    merge: dict[str, str],
    keys: list[str],
) -> dict:
    """``{group: {stage: [entry per combination of the settings keys]}}``."""
    if not keys or values.empty:
        return {}
    crossed = metrics.crossed_values(values=values, keys=keys)
    per_cell = _generation(items, crossed, slugs, stage_order, group_order, merge)
    return {
        group: {
            stage: metrics.crossed_entries(settings, keys) for stage, settings in stages.items()
        }
        for group, stages in per_cell.items()
    }


def systems_build(
    *,
    data: pd.DataFrame,
    slugs: Sequence[str],
    stage_order: list[str],
    group_order: list[str],
    scores: pd.DataFrame | None,
    generation: pd.Series | None,
    resamples: int,
    seed: int,
    mee_merge: dict[str, list[str]] | None = None,
    crossed: Sequence[str] = (),
) -> dict[str, Any]:
    """The six system-level keys from the analysed judgements
    (:func:`analysis.report.build.judgements_with_categories`), the automatic scores
    and the reflections' generation metadata (JSON text indexed by reflection id,
    :func:`analysis.selectors.judgements.generation_metadata`). ``mee_merge`` (the
    study's: merged label → slugs) gives the generation settings' merged majority
    MEEs; ``crossed`` (the run's ``crossed_settings``) the settings whose every
    combination ``generation_crossed`` gives."""
    slugs = list(slugs)
    # Only the columns used here, and the grouping keys as categoricals: every slice
    # and groupby below then moves and hashes less (categories in sorted, str order).
    columns = [*ITEM_TABLE_INPUT, *slugs, *(["position"] if "position" in data else [])]
    data = data[columns].assign(
        **{key: data[key].astype("category") for key in ("stage", "group", "source")}
    )
    values = metrics.generation_values(
        generation=generation if generation is not None else pd.Series(dtype=object)
    )
    merge = {
        slug: label
        for label, merged in (mee_merge or {}).items()
        for slug in merged
        if slug in slugs
    }
    # The majority MEE's variants only where the generation settings read them.
    items = metrics.item_table(
        judgements=data, categories=slugs, mee_variants=None if values.empty else merge
    )
    by_group_items = items.groupby("group", sort=False).indices
    by_group_data = data.groupby("group", sort=False).indices
    stats: dict[str, pd.DataFrame] = {}
    systems: dict[str, list] = {}
    pairs: dict[str, list] = {}
    for group in group_order:
        group_items = items.iloc[by_group_items[group]].reset_index(drop=True)
        stats[group] = metrics.system_stats(
            judgements=data.iloc[by_group_data[group]],
            items=group_items,
            stage_order=stage_order,
        )
        systems[group] = metrics.system_entries(
            stats=stats[group], items=group_items, resamples=resamples, seed=seed
        )
        pairs[group] = metrics.system_pairs(stats=stats[group])
    comparisons = [
        metrics.group_comparison(stats={a: stats[a], b: stats[b]})
        for a, b in itertools.combinations(group_order, 2)
    ]
    labelled = metrics.item_label_sums(judgements=data, items=items, categories=slugs)
    if scores is None:
        scores = pd.DataFrame(columns=["stage", "reflection_id", "evaluator", "score"])
    return {
        "systems": systems,
        "system_pairs": pairs,
        "group_comparisons": comparisons,
        "generation_settings": _generation(
            labelled, values, slugs, stage_order, group_order, merge
        ),
        "generation_trends": metrics.setting_trends(
            judgements=data, values=values, stage_order=stage_order, group_order=group_order
        ),
        "generation_crossed": _crossed(
            labelled, values, slugs, stage_order, group_order, merge, list(crossed)
        ),
        "automatic_evaluators_by_source": metrics.evaluators_by_source(
            items=items, scores=scores, stage_order=stage_order, group_order=group_order
        ),
        "automatic_evaluators_systems": metrics.evaluators_systems(
            items=items, scores=scores, stats=stats, group_order=group_order
        ),
    }
