"""The report's ``diversity`` and ``spread`` blocks.

``diversity``: per stage, how alike the synthetic candidates of one context are
(Self-BLEU-2 to 5 and the mean pairwise cosine similarity of their embeddings,
:mod:`analysis.metrics.diversity`), over all of the stage's candidates and per source (a
model or system), pairs taken within a context (and a source); and, for a stage filled
by a candidate selection, that selection's record with the diversity of its pool and
of what it drew (``selections``).

``spread``: the coherent rate estimated by giving each member of a drawn cluster its
representative's majority label, per group and generation setting
(:mod:`analysis.metrics.protocol.spread`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .. import metrics

#: At most this many pairs are scored per stage and source (a seeded sample of its
#: pairs; the block says how many there were): BLEU is one Python call per pair.
DIVERSITY_MAX_PAIRS = 1000
#: At most this many contexts of a stage (a seeded sample) stand for it: their
#: candidates are embedded (the first time, about 2–3 ms per text on 2 cores).
DIVERSITY_MAX_CONTEXTS = 50


def diversity_sample(texts: pd.DataFrame, *, seed: int = 0) -> np.ndarray:
    """Which rows of :func:`analysis.selectors.judgements.stage_candidate_texts` the
    stage diversity reads: every row of a stage with at most
    :data:`DIVERSITY_MAX_CONTEXTS` contexts, else those of a seeded sample of that many
    of its contexts. A boolean mask; the run embeds the rows it keeps."""
    keep = np.ones(len(texts), dtype=bool)
    rng = np.random.default_rng(seed)
    for _, rows in texts.groupby("stage", sort=True, observed=True).indices.items():
        contexts = texts["context_id"].to_numpy()[rows]
        distinct = np.unique(contexts)
        if len(distinct) > DIVERSITY_MAX_CONTEXTS:
            chosen = rng.choice(distinct, size=DIVERSITY_MAX_CONTEXTS, replace=False)
            keep[rows] = np.isin(contexts, chosen)
    return keep


def _ordered(present: Sequence[str], stage_order: Sequence[str]) -> list[str]:
    return [s for s in stage_order if s in present] + [s for s in present if s not in stage_order]


def diversity_build(
    texts: pd.DataFrame | None,
    stage_order: Sequence[str],
    *,
    seed: int = 0,
    vectors: np.ndarray | None = None,
    embeddings_pending: int = 0,
    selections: dict[str, dict] | None = None,
) -> dict:
    """``{"max_pairs": …, "max_contexts": …, "stages": {stage: {"n_contexts_total": …,
    "all": …, "sources": {source: …}}}, "selections": {stage: …}}`` from
    :func:`analysis.selectors.judgements.stage_candidate_texts`, the embeddings of its
    rows :func:`diversity_sample` keeps (without them the cosine is null;
    ``embeddings_pending`` says how many texts the worker has yet to embed) and
    :func:`analysis.selectors.candidates.stage_selections`; each stage entry as
    :func:`analysis.metrics.self_bleu` gives it, with ``mean_cosine``. Stages in
    ``stage_order`` first."""
    block: dict = {
        "max_pairs": DIVERSITY_MAX_PAIRS,
        "max_contexts": DIVERSITY_MAX_CONTEXTS,
        "embeddings_pending": embeddings_pending,
        "stages": {},
        "selections": {},
    }
    for stage in _ordered(list(selections or {}), stage_order):
        record = selections[stage]
        block["selections"][stage] = {
            **{k: record[k] for k in ("selection_id", "seed", "parameters", "counts")},
            **{
                part: record["diversity"][part]
                for part in ("pool", "selection")
                if part in record["diversity"]
            },
        }
    if texts is None or texts.empty:
        return block
    totals = texts.groupby("stage", observed=True)["context_id"].nunique()
    texts = texts.loc[diversity_sample(texts, seed=seed)]
    for stage in _ordered(list(dict.fromkeys(texts["stage"])), stage_order):
        mask = (texts["stage"] == stage).to_numpy()
        rows = texts.loc[mask]
        stage_vectors = vectors[mask] if vectors is not None else None

        def score(part: pd.DataFrame, where: np.ndarray | None) -> dict:
            contexts = part["context_id"].tolist()
            entry = metrics.self_bleu(
                part["text"].tolist(), contexts, max_pairs=DIVERSITY_MAX_PAIRS, seed=seed
            )
            entry["mean_cosine"] = (
                metrics.mean_cosine(where, contexts)["mean_cosine"] if where is not None else None
            )
            return entry

        block["stages"][stage] = {
            "n_contexts_total": int(totals[stage]),
            "all": score(rows, stage_vectors),
            "sources": {
                str(source): score(
                    part,
                    stage_vectors[(rows["source"] == source).to_numpy()]
                    if stage_vectors is not None
                    else None,
                )
                for source, part in rows.groupby("source", sort=True)
            },
        }
    return block


def spread_build(
    members: pd.DataFrame | None, judgements: pd.DataFrame | None, stage_order: Sequence[str]
) -> list[dict]:
    """The ``spread`` rows, stages in ``stage_order``."""
    if members is None or judgements is None or members.empty:
        return []
    rows = metrics.label_spread(members=members, judgements=judgements)
    order = {stage: n for n, stage in enumerate(stage_order)}
    return sorted(rows, key=lambda r: order.get(r["stage"], len(order)))
