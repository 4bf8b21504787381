"""Coherent shares compared: human vs synthetic, and one group's judgements of the
human reflections across two stages (all and recurrence-free)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..association import chi2_test, wilcoxon_paired


def coherent_rate_test(
    *, judgements: pd.DataFrame, by: str, coherent: str = "coherent", order: Sequence = ()
) -> dict[str, Any]:
    """Coherent share per value of ``by`` and the p-value of a chi-squared test
    on the ``by`` × {coherent, incoherent} table (:func:`chi2_test`). With
    ``order``, exactly those values are compared, in that order (null rate when one
    has no judgements); judgements with other values are left out."""
    flags = judgements[coherent].astype(bool)
    grouped = flags.groupby(judgements[by]).agg(["sum", "size"])
    keys = list(order) or list(grouped.index)
    grouped = grouped.reindex(keys)
    rates = {
        str(key): (float(row["sum"] / row["size"]) if row["size"] and row["size"] > 0 else None)
        for key, row in grouped.iterrows()
    }
    table = np.column_stack(
        [grouped["sum"].fillna(0), (grouped["size"] - grouped["sum"]).fillna(0)]
    )
    return {
        "coherent_rate": rates,
        "n_judgements": {str(k): int(v) for k, v in grouped["size"].fillna(0).items()},
        "chi2_p": chi2_test(table=table),
    }


def recurrence_free(
    *,
    judgements: pd.DataFrame,
    rater: str,
    item: str,
    stage: str,
    recurring: str | None = None,
) -> pd.DataFrame:
    """Drop every judgement of an (annotator, reflection) pair judged in more
    than one of the stages present (the recurrence-free view), and,
    with ``recurring`` (a boolean column: the annotator had met the reflection
    before, in work not counted here, e.g. a rejected batch), the flagged rows."""
    stages_seen = judgements.groupby([rater, item])[stage].transform("nunique")
    keep = stages_seen < 2
    if recurring is not None:
        keep &= ~judgements[recurring].fillna(False).astype(bool)
    return judgements.loc[keep]


def cross_stage_shift(
    *,
    judgements: pd.DataFrame,
    stage_from: str,
    stage_to: str,
    rater: str = "rater",
    item: str = "item",
    stage: str = "stage",
    coherent: str = "coherent",
    recurring: str | None = None,
) -> dict[str, Any]:
    """Shift in how one group judges the human reflections between two stages.

    ``judgements`` are the group's judgements of human reflections; ``item``
    identifies the human reflection across stages. Coherent share per stage
    with a chi-squared test on all judgements and on the recurrence-free
    subset, and a paired Wilcoxon signed-rank test on the coherence scores of
    the reflections judged in both stages.
    """
    pair = judgements.loc[judgements[stage].isin([stage_from, stage_to])]
    order = [stage_from, stage_to]
    scores = pair.assign(_c=pair[coherent].astype(int)).pivot_table(
        index=item, columns=stage, values="_c", aggfunc="sum"
    )
    if stage_from in scores and stage_to in scores:
        paired = scores[[stage_from, stage_to]].dropna()
        wilcoxon = wilcoxon_paired(a=paired[stage_from], b=paired[stage_to])
        n_paired = len(paired)
    else:
        wilcoxon, n_paired = None, 0
    return {
        "from": stage_from,
        "to": stage_to,
        "all": coherent_rate_test(judgements=pair, by=stage, coherent=coherent, order=order),
        "recurrence_free": coherent_rate_test(
            judgements=recurrence_free(
                judgements=pair, rater=rater, item=item, stage=stage, recurring=recurring
            ),
            by=stage,
            coherent=coherent,
            order=order,
        ),
        "wilcoxon_p": wilcoxon,
        "n_items_paired": n_paired,
    }
