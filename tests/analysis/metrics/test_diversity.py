"""Self-BLEU: pinned by hand on two candidates, cross-checked with a BLEU written out
here from its definition (clipped n-gram precisions, brevity penalty), and its pairs
and sample."""

import math
from collections import Counter

import numpy as np
import pytest

from analysis.metrics.diversity import context_pairs, mean_cosine, self_bleu


def by_the_definition(hypothesis: str, reference: str, n: int) -> float:
    """BLEU-n of one hypothesis against one reference: the geometric mean of the clipped
    1- to n-gram precisions times the brevity penalty; 0 when a precision is 0."""
    hyp, ref = hypothesis.lower().split(), reference.lower().split()
    precisions = []
    for k in range(1, n + 1):
        grams = Counter(tuple(hyp[i : i + k]) for i in range(len(hyp) - k + 1))
        ref_grams = Counter(tuple(ref[i : i + k]) for i in range(len(ref) - k + 1))
        total = sum(grams.values())
        matched = sum(min(count, ref_grams[gram]) for gram, count in grams.items())
        if total == 0 or matched == 0:
            return 0.0
        precisions.append(matched / total)
    penalty = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return penalty * math.exp(sum(math.log(p) for p in precisions) / n)


def test_two_candidates_by_hand():
    """ "the cat sat on the mat" and "the cat sat on a mat", each way round: unigrams
    5/6, bigrams 3/5, trigrams 2/4, 4-grams 1/3, no shared 5-gram; same length."""
    result = self_bleu(["the cat sat on the mat", "The cat sat on a mat"], ["c", "c"])
    assert (result["n_contexts"], result["n_pairs"], result["n_pairs_scored"]) == (1, 2, 2)
    scores = result["self_bleu"]
    assert scores["2"] == pytest.approx(100 * math.sqrt(5 / 6 * 3 / 5))  # 70.71
    assert scores["3"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 2) ** (1 / 3))  # 63.00
    assert scores["4"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 2 * 1 / 3) ** (1 / 4))
    assert scores["5"] == pytest.approx(0.0, abs=1e-50)  # NLTK's "0"


def test_self_bleu_is_the_mean_over_every_pair_of_a_context_as_defined():
    texts = [
        "it sounds like you feel stuck at work",
        "you feel stuck and tired at work",
        "it sounds like work is hard for you",
        "you are worried about your sister",
        "your sister worries you a lot",
    ]
    contexts = ["a", "a", "a", "b", "b"]
    result = self_bleu(texts, contexts, orders=(2, 3))
    pairs = [(i, j) for i in range(5) for j in range(5) if i != j and contexts[i] == contexts[j]]
    assert result["n_pairs"] == len(pairs) == 3 * 2 + 2 * 1
    for n in (2, 3):
        expected = np.mean([by_the_definition(texts[i], texts[j], n) for i, j in pairs]) * 100
        assert result["self_bleu"][str(n)] == pytest.approx(expected, abs=1e-9)


def test_pairs_stay_within_a_context_and_a_sample_is_seeded():
    pairs = context_pairs(["x", "y", "x", "x", "z"])
    assert sorted(map(tuple, pairs)) == [(0, 2), (0, 3), (2, 0), (2, 3), (3, 0), (3, 2)]
    texts = [f"word{i % 3} other{i % 5} same" for i in range(40)]
    contexts = [i // 8 for i in range(40)]
    first = self_bleu(texts, contexts, max_pairs=30, seed=4)
    assert first == self_bleu(texts, contexts, max_pairs=30, seed=4)
    assert (first["n_pairs"], first["n_pairs_scored"], first["n_contexts"]) == (5 * 56, 30, 5)
    assert self_bleu(texts, contexts, max_pairs=30, seed=5) != first


def test_no_pairs_no_numbers():
    result = self_bleu(["one candidate", "another context"], ["a", "b"])
    assert result["n_pairs"] == 0 and result["n_contexts"] == 0
    assert set(result["self_bleu"].values()) == {None}


def test_mean_cosine_by_hand():
    """One context of three unit vectors a = (1, 0), b = (0, 1), c = (1, 1)/√2: the
    ordered pairs' similarities are 0, 0 (a, b), and 1/√2 four times (a or b with c),
    so the mean is 4/√2 ÷ 6 = 0.4714; a second context of one vector adds no pair."""
    vectors = np.array([[1, 0], [0, 1], [1, 1], [3, 4]], dtype=float)  # c unnormalised
    result = mean_cosine(vectors, ["x", "x", "x", "y"])
    assert result == {
        "n_contexts": 1,
        "n_pairs": 6,
        "mean_cosine": pytest.approx(4 / np.sqrt(2) / 6),
    }
    assert mean_cosine(vectors[:1], ["x"])["mean_cosine"] is None


def test_mean_cosine_equals_the_pairwise_mean_on_random_vectors():
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(40, 8))
    contexts = rng.integers(0, 6, size=40).tolist()
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = [
        unit[i] @ unit[j]
        for i in range(40)
        for j in range(40)
        if i != j and contexts[i] == contexts[j]
    ]
    result = mean_cosine(vectors, contexts)
    assert result["n_pairs"] == len(pairs)
    assert result["mean_cosine"] == pytest.approx(np.mean(pairs))


def test_self_bleu_samples_pairs_per_context():
    texts = [f"word{i} shared tokens here" for i in range(12)]
    contexts = ["a"] * 8 + ["b"] * 4  # 56 and 12 pairs
    result = self_bleu(texts, contexts, pairs_per_context=10, seed=3)
    assert result["n_pairs"] == 68
    assert result["n_pairs_scored"] == 20
    again = self_bleu(texts, contexts, pairs_per_context=10, seed=3)
    assert again == result
    assert self_bleu(texts, contexts, pairs_per_context=100)["n_pairs_scored"] == 68
