"""The report's ``diversity`` block: per stage, how alike the synthetic candidates of
one context are (Self-BLEU-2 to 5, :mod:`analysis.metrics.diversity`), over all of the
stage's candidates and per source (a model or system), pairs taken within a context
(and a source)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import metrics

#: At most this many pairs are scored per stage and source (a seeded sample of its
#: pairs; the block says how many there were): BLEU is one Python call per pair.
DIVERSITY_MAX_PAIRS = 1000


def diversity_build(
    texts: pd.DataFrame | None, stage_order: Sequence[str], *, seed: int = 0
) -> dict:
    """``{"max_pairs": …, "stages": {stage: {"all": …, "sources": {source: …}}}}`` from
    :func:`analysis.selectors.judgements.stage_candidate_texts`; each entry as
    :func:`analysis.metrics.self_bleu` gives it. Stages in ``stage_order`` first."""
    block: dict = {"max_pairs": DIVERSITY_MAX_PAIRS, "stages": {}}
    if texts is None or texts.empty:
        return block
    present = list(dict.fromkeys(texts["stage"]))
    ordered = [s for s in stage_order if s in present] + [
        s for s in present if s not in stage_order
    ]
    for stage in ordered:
        rows = texts.loc[texts["stage"] == stage]

        def score(part: pd.DataFrame, contexts) -> dict:
            return metrics.self_bleu(
                part["text"].tolist(), contexts, max_pairs=DIVERSITY_MAX_PAIRS, seed=seed
            )

        block["stages"][stage] = {
            "all": score(rows, rows["context_id"].tolist()),
            "sources": {
                str(source): score(part, part["context_id"].tolist())
                for source, part in rows.groupby("source", sort=True)
            },
        }
    return block
