"""Automatic evaluators (BLEU, ROUGE-L, an LLM judge…) against the groups, per
source and per system: does a metric that tracks people across all reflections
also rank the reflections of one system, and the systems themselves, as people do?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from scipy import stats as scipy_stats

from .._common import clean
from ..association import inter_group_correlation
from .systems import SYSTEM_KEYS, coherent_rates

#: A (evaluator, group, stage, source) cell needs this many scored items.
MIN_SCORED_ITEMS = 3
#: The system-level correlation needs this many systems with scores.
MIN_SCORED_SYSTEMS = 3


def _scored_items(items: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The item table joined with the scores of the same (stage, reflection)."""
    scored = scores.rename(columns={"reflection_id": "item"})[
        ["stage", "item", "evaluator", "score"]
    ]
    return items[["stage", "item", "group", "source", "coherence_score"]].merge(
        scored, on=["stage", "item"], how="inner"
    )


def _order(values: Sequence[Any]) -> dict[Any, int]:
    return {value: i for i, value in enumerate(values)}


def evaluators_by_source(
    *,
    items: pd.DataFrame,
    scores: pd.DataFrame,
    stage_order: Sequence[str],
    group_order: Sequence[str],
    min_items: int = MIN_SCORED_ITEMS,
) -> list[dict[str, Any]]:
    """Per evaluator, group, stage and source with at least ``min_items`` scored
    items the group judged: Spearman and Pearson correlation (with p-values,
    :func:`~analysis.metrics.inter_group_correlation`) of the score with the
    group's coherence score over those items.

    ``items``: :func:`~analysis.metrics.protocol.items.item_table`; ``scores``:
    ``stage``, ``reflection_id``, ``evaluator``, ``score``. Ordered like the
    report's ``automatic_evaluators``: stage, evaluator name, group, then source
    (``str`` order).
    """
    if items.empty or scores is None or scores.empty:
        return []
    scored = _scored_items(items, scores)
    stages, groups = _order(stage_order), _order(group_order)
    entries = []
    for (evaluator, group, stage, source), rows in scored.groupby(
        ["evaluator", "group", *SYSTEM_KEYS], sort=False
    ):
        if len(rows) < min_items:
            continue
        correlation = inter_group_correlation(
            scores_a=rows.set_index("item")["score"],
            scores_b=rows.set_index("item")["coherence_score"],
        )
        entries.append(
            {
                "evaluator": str(evaluator),
                "group": group,
                "stage": stage,
                "source": source,
                **correlation,
            }
        )
    entries.sort(
        key=lambda e: (stages[e["stage"]], e["evaluator"], groups[e["group"]], str(e["source"]))
    )
    return entries


def evaluators_systems(
    *,
    items: pd.DataFrame,
    scores: pd.DataFrame,
    stats: Mapping[str, pd.DataFrame],
    group_order: Sequence[str],
    min_systems: int = MIN_SCORED_SYSTEMS,
) -> list[dict[str, Any]]:
    """Per evaluator and group: Spearman correlation (scipy) between each system's
    mean score (over its scored items the group judged) and its coherent rate
    (``stats``: :func:`~analysis.metrics.protocol.systems.system_stats` per group,
    all the system's judgements), over the systems with scores, pooled across
    stages. Null with fewer than ``min_systems`` systems or when a side is constant.
    Ordered by evaluator name, then group."""
    if items.empty or scores is None or scores.empty:
        return []
    scored = _scored_items(items, scores)
    means = scored.groupby(["evaluator", "group", *SYSTEM_KEYS], sort=True)["score"].mean()
    entries = []
    for evaluator in sorted(scored["evaluator"].unique(), key=str):
        for group in group_order:
            if (evaluator, group) not in means.index.droplevel([2, 3]):
                continue
            mean = means.loc[(evaluator, group)]
            rate = pd.Series(coherent_rates(stats[group]), index=stats[group].index)
            pairs = pd.concat([mean.rename("score"), rate.rename("rate")], axis=1, join="inner")
            rho = p = None
            if (
                len(pairs) >= min_systems
                and pairs["score"].nunique() > 1
                and pairs["rate"].nunique() > 1
            ):
                result = scipy_stats.spearmanr(pairs["score"], pairs["rate"])
                rho, p = clean(result.statistic), clean(result.pvalue)
            entries.append(
                {
                    "evaluator": str(evaluator),
                    "group": group,
                    "n_systems": len(pairs),
                    "spearman": rho,
                    "spearman_p": p,
                }
            )
    return entries
