"""Agreement over time: Fleiss' and Randolph's kappa on coherent / incoherent over the
judgements submitted up to the end of each day, so researchers see early whether
agreement is settling.

Each day's kappas use the kappas' rule (:func:`analysis.metrics.agreement.modal_rows`)
over the items with at least two judgements so far: items one annotator has judged
cannot show agreement yet, and would otherwise be the modal count while a stage's
batches are under way. Judgements without a submission time (an imported study's, an
expired batch's) are left out; when none is, and the whole cell's modal rater count is
two or more, the last day's values are the cell's own kappas.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..agreement import kappa_from_counts, modal_rows


def agreement_over_time(
    *,
    judgements: pd.DataFrame,
    submitted: pd.Series,
    item: str = "item",
    coherent: str = "coherent",
) -> list[dict[str, Any]]:
    """One entry per day (UTC) on which judgements of ``judgements`` were submitted
    (``submitted``: their times, aligned; judgements without a time are left out), in
    order: ``day`` (ISO date), ``n_judgements`` (submitted up to that day's end),
    ``n_items`` and ``raters_per_item`` (the items the kappas used), ``fleiss_kappa``
    and ``randolph_kappa`` (null where undefined)."""
    times = pd.to_datetime(submitted, utc=True)
    known = times.notna().to_numpy()
    if not known.any():
        return []
    day_codes, days = pd.factorize(times[known].dt.strftime("%Y-%m-%d"), sort=True)
    item_codes, _ = pd.factorize(judgements.loc[known, item])
    labels = (~judgements.loc[known, coherent].astype(bool)).to_numpy().astype(np.int64)
    order = np.argsort(day_codes, kind="stable")
    ends = np.searchsorted(day_codes[order], np.arange(len(days)), side="right")
    counts = np.zeros((item_codes.max() + 1, 2), dtype=np.int64)
    entries = []
    start = 0
    for day, end in zip(days, ends, strict=True):
        rows = order[start:end]
        np.add.at(counts, (item_codes[rows], labels[rows]), 1)
        start = end
        kept, modal = modal_rows(counts[counts.sum(axis=1) >= 2])
        entries.append(
            {
                "day": day,
                "n_judgements": int(end),
                "n_items": len(kept),
                "raters_per_item": modal,
                "fleiss_kappa": kappa_from_counts(kept, method="fleiss"),
                "randolph_kappa": kappa_from_counts(kept, method="randolph"),
            }
        )
    return entries
