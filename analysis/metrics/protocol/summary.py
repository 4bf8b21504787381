"""Agreement on one label with bootstrap intervals: the summary every protocol
measure reports (kappas with their Landis & Koch bands, alpha, item counts)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

import pandas as pd

from ..agreement import (
    alpha_from_counts,
    count_table,
    kappa_from_counts,
    landis_koch_band,
    modal_rows,
)
from ..bootstrap import DEFAULT_RESAMPLES, alpha_ci, kappa_ci


def agreement_summary(
    *,
    ratings: pd.DataFrame,
    categories: Sequence[Hashable],
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    alpha_level: Literal["nominal", "ordinal", "interval"] = "nominal",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Fleiss' and Randolph's kappa (with their Landis & Koch bands) and
    Krippendorff's alpha of one label, each with a 95% item-bootstrap interval.

    ``categories`` is every possible label in order (Randolph's q, the alpha
    value domain). Kappas use the items with the modal rater count
    (``n_items``, ``raters_per_item``); alpha uses every item with at least
    two ratings (``n_items_alpha``). ``resamples`` = 0 turns the intervals off
    (they are then ``[null, null]``).
    """
    table = count_table(ratings=ratings, item=item, rater=rater, label=label, categories=categories)
    kept, modal = modal_rows(table)
    counts = table.to_numpy()
    fleiss = kappa_from_counts(kept, method="fleiss")
    randolph = kappa_from_counts(kept, method="randolph")
    alpha = alpha_from_counts(counts, level=alpha_level)

    def interval(value, compute) -> list[float | None]:
        return list(compute()) if value is not None else [None, None]

    return {
        "n_items": len(kept),
        "raters_per_item": modal,
        "fleiss_kappa": fleiss,
        "fleiss_kappa_ci": interval(
            fleiss, lambda: kappa_ci(kept, method="fleiss", resamples=resamples, seed=seed)
        ),
        "fleiss_band": landis_koch_band(fleiss),
        "randolph_kappa": randolph,
        "randolph_kappa_ci": interval(
            randolph, lambda: kappa_ci(kept, method="randolph", resamples=resamples, seed=seed)
        ),
        "randolph_band": landis_koch_band(randolph),
        "krippendorff_alpha": alpha,
        "krippendorff_alpha_ci": interval(
            alpha,
            lambda: alpha_ci(
                counts, level_of_measurement=alpha_level, resamples=resamples, seed=seed
            ),
        ),
        "n_items_alpha": int((counts.sum(axis=1) >= 2).sum()) if counts.size else 0,
    }
