"""The selection's steps on one context's pool, without the database: duplicates,
agglomerative clusters of the embeddings, each cluster's representative, and the
seeded sample of clusters. Every step is deterministic given its ``random.Random``
(the selection seeds one per context from its seed and the dialogue id)."""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Sequence

import numpy as np

#: The linkages scikit-learn's AgglomerativeClustering offers; ward needs euclidean.
LINKAGES = ("average", "complete", "single", "ward")
METRICS = ("cosine", "euclidean", "manhattan")


def normalised(text: str) -> str:
    """``text`` lower-cased, without punctuation (Unicode P* characters), its
    whitespace runs made single spaces: equal for texts that differ only in case and
    punctuation."""
    kept = "".join(ch for ch in text.casefold() if not unicodedata.category(ch).startswith("P"))
    return " ".join(kept.split())


def duplicates(texts: Sequence[str]) -> tuple[np.ndarray, int, int]:
    """``(kept_of, exact, near)``: ``kept_of[i]`` is the position of the first
    candidate that ``texts[i]`` repeats (``i`` itself when it is kept); ``exact``
    counts the candidates removed as the same text as an earlier one, ``near`` those
    removed as the same but for case and punctuation."""
    kept_of = np.arange(len(texts))
    by_text: dict[str, int] = {}
    by_normalised: dict[str, int] = {}
    exact = near = 0
    for i, text in enumerate(texts):
        if text in by_text:
            kept_of[i] = by_text[text]
            exact += 1
            continue
        key = normalised(text)
        if key in by_normalised:
            kept_of[i] = by_normalised[key]
            by_text[text] = kept_of[i]
            near += 1
            continue
        by_text[text] = by_normalised[key] = i
    return kept_of, exact, near


def clusters(vectors: np.ndarray, *, threshold: float, metric: str, linkage: str) -> np.ndarray:
    """Agglomerative clusters of ``vectors`` (rows) merged while their linkage
    distance is below ``threshold``: each row's cluster number, 1, 2, … in the order of
    each cluster's first row."""
    n = len(vectors)
    if n < 2:
        return np.ones(n, dtype=np.int64)
    from sklearn.cluster import AgglomerativeClustering

    labels = AgglomerativeClustering(
        n_clusters=None, distance_threshold=threshold, metric=metric, linkage=linkage
    ).fit_predict(np.asarray(vectors, dtype=np.float64))
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)  # label codes by first appearance
    numbers = np.empty(len(order), dtype=np.int64)
    numbers[np.unique(labels)[order]] = np.arange(1, len(order) + 1)
    return numbers[labels]


def token_count(text: str) -> int:
    """Whitespace-separated tokens, as the papers count a candidate's length."""
    return len(text.split())


def representatives(labels: np.ndarray, tokens: Sequence[int], rng: random.Random) -> dict:
    """Each cluster's representative: {cluster number: position} of its member with
    the most tokens, a tie drawn with ``rng`` (clusters in number order)."""
    tokens = np.asarray(tokens)
    chosen = {}
    for number in np.unique(labels):
        members = np.flatnonzero(labels == number)
        most = members[tokens[members] == tokens[members].max()]
        chosen[int(number)] = int(most[0] if len(most) == 1 else rng.choice(list(most)))
    return chosen


def sample(
    numbers: Sequence[int],
    n: int,
    rng: random.Random,
    strata: Sequence[str] | None = None,
) -> list[int]:
    """``n`` of the cluster ``numbers`` (all when there are no more), drawn with
    ``rng``. With ``strata`` (each cluster's value of a generation setting), the draw
    takes from the values in turn, in an order drawn with ``rng``, so each value gets an
    equal share while it has clusters left (and the remainder falls on values drawn
    too). Returned sorted."""
    numbers = list(numbers)
    if len(numbers) <= n:
        return sorted(numbers)
    if strata is None:
        return sorted(rng.sample(numbers, n))
    groups: dict[str, list[int]] = {}
    for number, value in zip(numbers, strata, strict=True):
        groups.setdefault(value, []).append(number)
    queues = [rng.sample(groups[value], len(groups[value])) for value in sorted(groups)]
    rng.shuffle(queues)  # which values take the draws left over is drawn too
    chosen: list[int] = []
    while len(chosen) < n:
        for queue in queues:
            if queue and len(chosen) < n:
                chosen.append(queue.pop())
    return sorted(chosen)
