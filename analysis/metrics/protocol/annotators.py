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
    frame = judgements[[rater, item, stage, coherent]].copy()
    frame[coherent] = frame[coherent].astype(bool)
    per_pair = frame.groupby([rater, item]).agg(
        n_stages=(stage, "nunique"), n_yes=(coherent, "sum"), n=(coherent, "size")
    )
    met_again = per_pair.loc[per_pair["n_stages"] > 1]
    identical = (met_again["n_yes"] == 0) | (met_again["n_yes"] == met_again["n"])
    rec = identical.groupby(level=0).agg(["sum", "size"])
    once = frame.join(per_pair["n_stages"], on=[rater, item])
    once_only = once["n_stages"] == 1
    if recurring is not None:
        once_only &= ~judgements[recurring].fillna(False).astype(bool).to_numpy()
    once = once.loc[once_only]
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
