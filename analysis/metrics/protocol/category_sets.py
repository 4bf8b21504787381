"""Agreement on the whole set of error categories an annotator ticked: Krippendorff's
alpha with the MASI and the Jaccard distance between sets
(:mod:`analysis.metrics.set_distances`), over the items every rater judged
incoherent, with item-bootstrap intervals.

Each judgement of such an item is rated by its set of ticked categories; a judgement
with none ticked (the annotator described the error in words only) has no set and
drops out, so the item has one rating fewer. The values of alpha are the distinct sets
the cell holds, so the coincidences are those of a count table (items × distinct sets)
and the package computes alpha with the distances between those sets as its metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..agreement import alpha_from_counts
from ..bootstrap import DEFAULT_RESAMPLES, alpha_ci
from ..set_distances import SET_DISTANCES, set_distance_matrix
from .errors import all_incoherent


def category_set_counts(
    judgements: pd.DataFrame, categories: Sequence[str], *, item: str = "item"
) -> tuple[np.ndarray, np.ndarray]:
    """Items × distinct sets count table of the judgements that ticked at least one of
    ``categories`` (boolean columns), and the sets as a membership matrix (distinct
    sets × categories, in the table's column order)."""
    categories = list(categories)
    ticked = judgements[categories].fillna(False).to_numpy(dtype=bool)
    if not categories or not len(ticked):
        return np.zeros((0, 0), dtype=np.int64), np.zeros((0, len(categories)), dtype=bool)
    keys = ticked.astype(np.int64) @ (1 << np.arange(len(categories), dtype=np.int64))
    rated = keys > 0
    distinct, set_codes = np.unique(keys[rated], return_inverse=True)
    item_codes, _ = pd.factorize(judgements.loc[rated, item])
    counts = np.zeros((item_codes.max() + 1 if len(item_codes) else 0, len(distinct)), np.int64)
    np.add.at(counts, (item_codes, set_codes), 1)
    members = (distinct[:, None] >> np.arange(len(categories))) & 1
    return counts, members.astype(bool)


def category_set_agreement(
    *,
    judgements: pd.DataFrame,
    categories: Sequence[str],
    item: str = "item",
    coherent: str = "coherent",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Alpha with each set distance over the items all their raters judged incoherent:
    ``n_items_all_incoherent`` (before judgements without a set drop out),
    ``n_items`` (items with at least two sets: alpha's pairable items),
    ``n_judgements`` (judgements with a set), ``n_sets`` (distinct sets), and per
    distance (``masi``, ``jaccard``) ``krippendorff_alpha`` with its 95 %
    ``krippendorff_alpha_ci`` (``[null, null]`` where alpha is undefined or
    ``resamples`` is 0)."""
    subset = judgements.loc[
        all_incoherent(judgements, item=item, coherent=coherent), [item, *categories]
    ]
    counts, members = category_set_counts(subset, categories, item=item)
    result: dict[str, Any] = {
        "n_items_all_incoherent": int(subset[item].nunique()),
        "n_items": int((counts.sum(axis=1) >= 2).sum()),
        "n_judgements": int(counts.sum()),
        "n_sets": len(members),
    }
    for metric in SET_DISTANCES:
        distance = set_distance_matrix(members, metric) if len(members) else None
        alpha = alpha_from_counts(counts, distance=distance) if distance is not None else None
        interval = (
            list(alpha_ci(counts, distance=distance, resamples=resamples, seed=seed))
            if alpha is not None
            else [None, None]
        )
        result[metric] = {"krippendorff_alpha": alpha, "krippendorff_alpha_ci": interval}
    return result
