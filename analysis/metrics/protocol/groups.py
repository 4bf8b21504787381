"""Agreement between two annotator groups, each group taken as one rater."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..agreement import alpha_from_counts, count_table
from ..bootstrap import DEFAULT_RESAMPLES, alpha_ci
from .items import NO_MAJORITY, majority_label


def majority_labels(*, scores: pd.Series, raters: pd.Series) -> pd.Series:
    """Majority label per item from its coherence score and rater count
    (:func:`analysis.metrics.protocol.items.majority_label`, a lone rater's answer
    counting as the group's): missing on a tie (possible with an even rater
    count)."""
    scores, raters = scores.align(raters, join="inner")
    labels = majority_label(votes=scores.to_numpy(), raters=raters.to_numpy(), min_raters=1)
    return pd.Series(labels, index=scores.index, dtype=object).replace(NO_MAJORITY, np.nan)


def between_group_agreement(
    *,
    scores: Mapping[str, pd.Series],
    raters: Mapping[str, pd.Series],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Krippendorff's alpha between two groups treated as two raters, on the
    items both judged: nominal on their majority labels, ordinal on their
    coherence scores (domain 0..the largest rater count), each with an item
    bootstrap interval."""
    (name_a, a), (name_b, b) = scores.items()
    common = a.index.intersection(b.index)
    frames = []
    for name, series in ((name_a, a), (name_b, b)):
        majority = majority_labels(scores=series.loc[common], raters=raters[name].loc[common])
        frames.append(
            pd.DataFrame(
                {
                    "item": common,
                    "rater": name,
                    "score": series.loc[common].to_numpy(),
                    "majority": majority.to_numpy(),
                }
            )
        )
    long = pd.concat(frames, ignore_index=True)
    top = int(max(raters[name_a].max(), raters[name_b].max())) if len(common) else 0
    majority_counts = count_table(
        ratings=long, label="majority", categories=["coherent", "incoherent"]
    ).to_numpy()
    score_counts = count_table(
        ratings=long, label="score", categories=list(range(top + 1))
    ).to_numpy()
    alpha_majority = alpha_from_counts(majority_counts, level="nominal")
    alpha_scores = alpha_from_counts(score_counts, level="ordinal")
    return {
        "n_items": len(common),
        "krippendorff_alpha_majority": alpha_majority,
        "krippendorff_alpha_majority_ci": list(
            alpha_ci(majority_counts, resamples=resamples, seed=seed)
        )
        if alpha_majority is not None
        else [None, None],
        "krippendorff_alpha_scores": alpha_scores,
        "krippendorff_alpha_scores_ci": list(
            alpha_ci(score_counts, level_of_measurement="ordinal", resamples=resamples, seed=seed)
        )
        if alpha_scores is not None
        else [None, None],
    }
