"""How diverse a set of candidates is (a pool, a selection, a stage's synthetic
reflections): Self-BLEU-2 to 5 and the mean pairwise cosine similarity of their
embeddings, over the pairs of candidates of the same context, overall, per source
(pairs of the same context and source) and per context.

Self-BLEU is scored on a seeded sample of at most ``pairs_per_context`` pairs of each
context (all pairs when it is None); the cosine is exact over all pairs
(:func:`analysis.metrics.mean_cosine`). Each entry carries its counts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..metrics.diversity import mean_cosine, self_bleu_scores, self_bleu_summary


def _entry(
    texts: Sequence[str],
    vectors: np.ndarray | None,
    keys: Sequence,
    *,
    pairs_per_context: int | None,
    seed: int,
) -> tuple[dict, np.ndarray, np.ndarray]:
    pairs, scores, n_pairs = self_bleu_scores(
        texts, keys, pairs_per_context=pairs_per_context, seed=seed
    )
    codes, _ = pd.factorize(pd.Series(list(keys), dtype=object))
    n_contexts = int((np.bincount(codes) >= 2).sum()) if len(codes) else 0
    entry = self_bleu_summary(scores, n_contexts=n_contexts, n_pairs=n_pairs)
    entry["mean_cosine"] = (
        mean_cosine(vectors, keys)["mean_cosine"] if vectors is not None and len(keys) else None
    )
    return entry, pairs, scores


def _positions(values: Sequence[str]) -> dict[str, np.ndarray]:
    """Each distinct value's positions, values sorted."""
    return dict(sorted(pd.Series(list(values), dtype=object).groupby(list(values)).indices.items()))


def diversity_of(
    *,
    texts: Sequence[str],
    contexts: Sequence[str],
    sources: Sequence[str],
    vectors: np.ndarray | None,
    pairs_per_context: int | None = None,
    seed: int = 0,
) -> dict:
    """``{"all": …, "sources": {source: …}, "contexts": {context: …}}``; each entry
    ``n_contexts``, ``n_pairs``, ``n_pairs_scored``, ``self_bleu`` {"2".."5"} (0–100)
    and ``mean_cosine`` (null without ``vectors`` or a pair)."""
    texts, contexts, sources = list(texts), list(contexts), list(sources)
    overall, pairs, scores = _entry(
        texts, vectors, contexts, pairs_per_context=pairs_per_context, seed=seed
    )
    by_source = {}
    for source, rows in _positions(sources).items():
        by_source[source], _, _ = _entry(
            [texts[i] for i in rows],
            vectors[rows] if vectors is not None else None,
            [contexts[i] for i in rows],
            pairs_per_context=pairs_per_context,
            seed=seed,
        )
    # Per context, from the pairs already scored for the whole set.
    context_of_pair = np.asarray(contexts, dtype=object)[pairs[:, 0]] if len(pairs) else []
    by_context = {}
    for context, rows in _positions(contexts).items():
        n = len(rows)
        mine = scores[np.asarray(context_of_pair) == context] if len(pairs) else scores
        entry = self_bleu_summary(mine, n_contexts=int(n >= 2), n_pairs=n * (n - 1))
        entry["mean_cosine"] = (
            mean_cosine(vectors[rows], [context] * n)["mean_cosine"]
            if vectors is not None
            else None
        )
        by_context[context] = entry
    return {"all": overall, "sources": by_source, "contexts": by_context}
