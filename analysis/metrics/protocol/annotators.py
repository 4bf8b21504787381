"""Per-annotator consistency on the human reflections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd


def annotator_consistency(
    *,
    judgements: pd.DataFrame,
    stages: Sequence[str],
    rater: str = "rater",
    item: str = "item",
    stage: str = "stage",
    coherent: str = "coherent",
    recurring: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Per annotator, over their judgements of human reflections:

    * ``recurring_identical_rate``: of the human reflections they judged in
      more than one stage, the share they answered the same Yes/No every time
      (null when none recurred); ``n_recurring`` how many;
    * ``nonrecurring_human_coherent_rate``: per stage, the share of the human
      reflections they judged in that stage only that they called coherent
      (null for a stage without any); ``n_nonrecurring`` the counts. With
      ``recurring`` (a boolean column), flagged rows are not "judged in that stage
      only": the annotator had met the reflection before in work not counted here.
    """
    if judgements.empty:
        return {}
    frame, identical, once = _recurrences(
        judgements, rater=rater, item=item, stage=stage, coherent=coherent, recurring=recurring
    )
    rec = identical.groupby(level=0).agg(["sum", "size"])
    per_stage = once.groupby([rater, stage])[coherent].agg(["mean", "size"])
    names = sorted(frame[rater].unique(), key=str)
    n_rec = rec["size"].reindex(names, fill_value=0)
    identical_rate = (rec["sum"] / rec["size"]).reindex(names)
    stage_keys = [str(s) for s in stages]
    means = per_stage["mean"].unstack(stage).reindex(index=names, columns=list(stages))
    sizes = per_stage["size"].unstack(stage).reindex(index=names, columns=list(stages))
    means_rows = means.astype(object).where(means.notna(), None).to_numpy().tolist()
    sizes_rows = sizes.fillna(0).astype(int).to_numpy().tolist()
    return {
        str(name): {
            "recurring_identical_rate": None if pd.isna(rate) else float(rate),
            "n_recurring": int(count),
            "nonrecurring_human_coherent_rate": dict(zip(stage_keys, rates_row, strict=True)),
            "n_nonrecurring": dict(zip(stage_keys, sizes_row, strict=True)),
        }
        for name, rate, count, rates_row, sizes_row in zip(
            names, identical_rate, n_rec, means_rows, sizes_rows, strict=True
        )
    }


def annotator_consistency_pooled(
    *,
    judgements: pd.DataFrame,
    stages: Sequence[str],
    rater: str = "rater",
    item: str = "item",
    stage: str = "stage",
    coherent: str = "coherent",
    recurring: str | None = None,
) -> dict[str, Any] | None:
    """The group's "All" row of :func:`annotator_consistency`, pooling every
    annotator's pairs rather than averaging their rates: ``recurring_identical_rate``
    is the share of all (annotator, recurring human reflection) pairs answered the same
    every time, ``nonrecurring_human_coherent_rate`` per stage the share of all the
    once-only judgements that said coherent; the counts are the pooled ones. None
    without judgements."""
    if judgements.empty:
        return None
    _, identical, once = _recurrences(
        judgements, rater=rater, item=item, stage=stage, coherent=coherent, recurring=recurring
    )
    per_stage = once.groupby(stage)[coherent].agg(["mean", "size"])
    stage_keys = [str(s) for s in stages]
    means = per_stage["mean"].reindex(list(stages))
    sizes = per_stage["size"].reindex(list(stages)).fillna(0).astype(int)
    return {
        "recurring_identical_rate": float(identical.mean()) if len(identical) else None,
        "n_recurring": len(identical),
        "nonrecurring_human_coherent_rate": {
            key: None if pd.isna(mean) else float(mean)
            for key, mean in zip(stage_keys, means, strict=True)
        },
        "n_nonrecurring": {key: int(n) for key, n in zip(stage_keys, sizes, strict=True)},
    }


def _recurrences(
    judgements: pd.DataFrame, *, rater: str, item: str, stage: str, coherent: str, recurring
) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """The judgements' columns (``coherent`` as bool); per (rater, item) judged in more
    than one stage, whether every answer was the same; the once-only judgements."""
    frame = judgements[[rater, item, stage, coherent]].copy()
    frame[coherent] = frame[coherent].astype(bool)
    per_pair = frame.groupby([rater, item]).agg(
        n_stages=(stage, "nunique"), n_yes=(coherent, "sum"), n=(coherent, "size")
    )
    met_again = per_pair.loc[per_pair["n_stages"] > 1]
    identical = (met_again["n_yes"] == 0) | (met_again["n_yes"] == met_again["n"])
    once = frame.join(per_pair["n_stages"], on=[rater, item])
    once_only = once["n_stages"] == 1
    if recurring is not None:
        once_only &= ~judgements[recurring].fillna(False).astype(bool).to_numpy()
    return frame, identical, once.loc[once_only]
