"""How diverse the candidates of one context are: Self-BLEU-n (Zhu et al. 2018), as the
laypeople-vs-experts paper reports it per model.

Every ordered pair of candidates (a, b) of the same context is scored once: NLTK's
``sentence_bleu`` of a as the hypothesis against b as its single reference, on
lower-cased whitespace tokens, uniform weights over 1- to n-grams, no smoothing (as the
platform's BLEU-4, :mod:`.overlap`: a pair sharing no n-gram of some order scores NLTK's
0, a value far below 1e-50). Self-BLEU-n is the mean over the pairs, on a 0–100 scale; the
higher, the more alike the candidates (the less diverse).

A context's n candidates make n(n − 1) pairs; with ``max_pairs`` set, a seeded sample of
that many pairs of the whole set (uniform over its pairs) stands for them, and the
result says how many pairs there were and how many were scored. A Python loop over the
pairs: BLEU of two token lists is NLTK's, one call per pair for every order at once.
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


def self_bleu(
    texts: Sequence[str],
    contexts: Sequence[Hashable],
    *,
    orders: Sequence[int] = SELF_BLEU_ORDERS,
    max_pairs: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Self-BLEU of ``texts`` (each with its context) over the pairs of the same
    context: ``n_contexts`` (with two candidates or more), ``n_pairs`` (all of them),
    ``n_pairs_scored`` (the sample's size, or all), and ``self_bleu`` {"2": …, "5": …}
    on 0–100 (null without a pair)."""
    from nltk.translate.bleu_score import sentence_bleu

    pairs = context_pairs(contexts)
    n_pairs = len(pairs)
    if max_pairs is not None and n_pairs > max_pairs:
        rng = np.random.default_rng(seed)
        pairs = pairs[np.sort(rng.choice(n_pairs, size=max_pairs, replace=False))]
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
    codes, _ = pd.factorize(pd.Series(list(contexts), dtype=object))
    n_contexts = int((np.bincount(codes) >= 2).sum()) if len(codes) else 0
    means = scores.mean(axis=0) * 100 if len(pairs) else [None] * len(orders)
    return {
        "n_contexts": n_contexts,
        "n_pairs": int(n_pairs),
        "n_pairs_scored": len(pairs),
        "self_bleu": {
            str(n): (None if mean is None else float(mean))
            for n, mean in zip(orders, means, strict=True)
        },
    }
