"""How diverse the candidates of one context are: Self-BLEU-n (Zhu et al. 2018), as the
laypeople-vs-experts paper reports it per model.

Every ordered pair of candidates (a, b) of the same context is scored once: NLTK's
``sentence_bleu`` of a as the hypothesis against b as its single reference, on
lower-cased whitespace tokens, uniform weights over 1- to n-grams, no smoothing (as the
platform's BLEU-4, :mod:`.overlap`: a pair sharing no n-gram of some order scores NLTK's
0, a value far below 1e-50). Self-BLEU-n is the mean over the pairs, on a 0–100 scale; the
higher, the more alike the candidates (the less diverse).

A context's n candidates make n(n − 1) pairs; with ``max_pairs`` set, a seeded sample of
that many pairs of the whole set (uniform over its pairs) stands for them, and with
``pairs_per_context`` set, a seeded sample of that many pairs of each context; the
result says how many pairs there were and how many were scored. A Python loop over the
pairs: BLEU of two token lists is NLTK's, one call per pair for every order at once.

The mean pairwise cosine similarity of the candidates' embeddings (:func:`mean_cosine`)
is taken over every pair of the same context, in closed form: for unit vectors, the
similarities of a context's n(n − 1) ordered pairs sum to |Σv|² − n.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: The Self-BLEU orders the paper reports.
SELF_BLEU_ORDERS = (2, 3, 4, 5)


def context_pairs(contexts: Sequence[Hashable]) -> np.ndarray:
    """Every ordered pair (i, j), i ≠ j, of positions sharing a context: pairs × 2."""
    codes, _ = pd.factorize(pd.Series(list(contexts), dtype=object))
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    sizes = np.diff(np.r_[starts, len(order)])
    pairs = []
    for start, size in zip(starts, sizes, strict=True):
        if size < 2:
            continue
        members = order[start : start + size]
        a, b = np.meshgrid(members, members, indexing="ij")
        keep = a != b
        pairs.append(np.column_stack([a[keep], b[keep]]))
    return np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)


def self_bleu_scores(
    texts: Sequence[str],
    contexts: Sequence[Hashable],
    *,
    orders: Sequence[int] = SELF_BLEU_ORDERS,
    max_pairs: int | None = None,
    pairs_per_context: int | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(pairs, scores, n_pairs)``: the scored ordered pairs (positions, pairs × 2),
    their BLEU-n (pairs × orders, on 0–1) and how many pairs there were in all."""
    from nltk.translate.bleu_score import sentence_bleu

    pairs = context_pairs(contexts)
    n_pairs = len(pairs)
    rng = np.random.default_rng(seed)
    if pairs_per_context is not None and n_pairs:
        pairs = _sample_per_context(pairs, contexts, pairs_per_context, rng)
    if max_pairs is not None and len(pairs) > max_pairs:
        pairs = pairs[np.sort(rng.choice(len(pairs), size=max_pairs, replace=False))]
    tokens = [str(text).lower().split() for text in texts]
    weights = [tuple([1.0 / n] * n) for n in orders]
    scores = np.zeros((len(pairs), len(orders)))
    with warnings.catch_warnings():
        # NLTK warns of a pair sharing no n-gram of some order: its "0" is kept.
        warnings.filterwarnings(
            "ignore", message=r"\s*The hypothesis contains 0 counts", category=UserWarning
        )
        for row, (a, b) in enumerate(pairs):
            scores[row] = sentence_bleu([tokens[b]], tokens[a], weights=weights)
    return pairs, scores, n_pairs


def self_bleu_summary(
    scores: np.ndarray,
    *,
    n_contexts: int,
    n_pairs: int,
    orders: Sequence[int] = SELF_BLEU_ORDERS,
) -> dict[str, Any]:
    """The Self-BLEU entry of scored pairs (:func:`self_bleu_scores` rows)."""
    means = scores.mean(axis=0) * 100 if len(scores) else [None] * len(orders)
    return {
        "n_contexts": n_contexts,
        "n_pairs": int(n_pairs),
        "n_pairs_scored": len(scores),
        "self_bleu": {
            str(n): (None if mean is None else float(mean))
            for n, mean in zip(orders, means, strict=True)
        },
    }


def self_bleu(
    texts: Sequence[str],
    contexts: Sequence[Hashable],
    *,
    orders: Sequence[int] = SELF_BLEU_ORDERS,
    max_pairs: int | None = None,
    pairs_per_context: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Self-BLEU of ``texts`` (each with its context) over the pairs of the same
    context: ``n_contexts`` (with two candidates or more), ``n_pairs`` (all of them),
    ``n_pairs_scored`` (the sample's size, or all), and ``self_bleu`` {"2": …, "5": …}
    on 0–100 (null without a pair)."""
    _, scores, n_pairs = self_bleu_scores(
        texts,
        contexts,
        orders=orders,
        max_pairs=max_pairs,
        pairs_per_context=pairs_per_context,
        seed=seed,
    )
    codes, _ = pd.factorize(pd.Series(list(contexts), dtype=object))
    n_contexts = int((np.bincount(codes) >= 2).sum()) if len(codes) else 0
    return self_bleu_summary(scores, n_contexts=n_contexts, n_pairs=n_pairs, orders=orders)


def _sample_per_context(
    pairs: np.ndarray, contexts: Sequence[Hashable], size: int, rng: np.random.Generator
) -> np.ndarray:
    """At most ``size`` pairs of each context, drawn uniformly without replacement
    (a random key per pair; each context keeps its ``size`` smallest)."""
    codes, _ = pd.factorize(pd.Series(list(contexts), dtype=object))
    frame = pd.DataFrame({"context": codes[pairs[:, 0]], "key": rng.random(len(pairs))})
    rank = frame.groupby("context")["key"].rank(method="first")
    return pairs[np.flatnonzero(rank.to_numpy() <= size)]


def mean_cosine(vectors: np.ndarray, contexts: Sequence[Hashable]) -> dict[str, Any]:
    """Mean cosine similarity of ``vectors`` (rows, each with its context) over every
    pair of the same context: ``n_contexts`` (with two candidates or more), ``n_pairs``
    and ``mean_cosine`` (null without a pair)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # A zero vector (no direction) has similarity 0 with every other.
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    codes, _ = pd.factorize(pd.Series(list(contexts), dtype=object))
    if not len(codes):
        return {"n_contexts": 0, "n_pairs": 0, "mean_cosine": None}
    sums = np.zeros((codes.max() + 1, vectors.shape[1]))
    np.add.at(sums, codes, vectors)
    sizes = np.bincount(codes).astype(np.float64)
    squares = np.bincount(codes, weights=np.einsum("ij,ij->i", vectors, vectors))
    pair_counts = sizes * (sizes - 1)
    n_pairs = int(pair_counts.sum())
    if not n_pairs:
        return {"n_contexts": 0, "n_pairs": 0, "mean_cosine": None}
    # Σ_{i≠j} v_i·v_j = |Σ v|² − Σ |v_i|² (1 for each unit vector).
    total = (np.einsum("ij,ij->i", sums, sums) - squares).sum()
    return {
        "n_contexts": int((sizes >= 2).sum()),
        "n_pairs": n_pairs,
        "mean_cosine": float(total / n_pairs),
    }
