"""Agreement on the 5-point understanding (empathy) statement, raw and merged to
three points."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..bootstrap import DEFAULT_RESAMPLES
from .summary import agreement_summary

#: The empathy scale (1–5) merged to three points: disagree / neutral / agree.
EMPATHY_MERGED = {1: "disagree", 2: "disagree", 3: "neutral", 4: "agree", 5: "agree"}
EMPATHY_MERGED_ORDER = ("disagree", "neutral", "agree")


def empathy_agreement(
    *,
    judgements: pd.DataFrame,
    item: str = "item",
    rater: str = "rater",
    coherent: str = "coherent",
    empathy: str = "empathy",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Agreement on the 5-point empathy statement over the items that all their
    raters judged coherent; ``merged`` repeats it on disagree / neutral / agree.
    Krippendorff's alpha is ordinal; the kappas treat the points as nominal."""
    all_coherent = judgements[coherent].astype(bool).groupby(judgements[item]).transform("all")
    subset = judgements.loc[all_coherent, [item, rater, empathy]]  # narrow: rows copied once
    ratings = pd.DataFrame(
        {
            "item": subset[item].array,
            "rater": subset[rater].array,
            "label": pd.to_numeric(subset[empathy], errors="coerce").to_numpy(),
        }
    )
    raw = agreement_summary(
        ratings=ratings,
        categories=[1, 2, 3, 4, 5],
        alpha_level="ordinal",
        resamples=resamples,
        seed=seed,
    )
    merged_ratings = ratings.assign(label=ratings["label"].map(EMPATHY_MERGED))
    merged = agreement_summary(
        ratings=merged_ratings,
        categories=list(EMPATHY_MERGED_ORDER),
        alpha_level="ordinal",
        resamples=resamples,
        seed=seed,
    )
    raw["n_items_all_coherent"] = int(subset[item].nunique())
    raw["merged"] = merged
    return raw
