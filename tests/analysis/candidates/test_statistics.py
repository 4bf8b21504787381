"""The diversity of a pool or selection (overall, per source, per context), and the
report's sample of a stage's contexts."""

import numpy as np
import pandas as pd
import pytest

from analysis.candidates.statistics import diversity_of
from analysis.metrics.diversity import mean_cosine, self_bleu
from analysis.report.diversity import DIVERSITY_MAX_CONTEXTS, diversity_build, diversity_sample


def pool():
    rng = np.random.default_rng(2)
    words = ["you", "feel", "worried", "about", "work", "and", "your", "family", "at", "home"]
    rows = []
    for context in ("c1", "c2", "c3"):
        for n in range(6):
            rows.append(
                {
                    "text": " ".join(rng.choice(words, size=8)),
                    "context": context,
                    "source": "A" if n % 2 else "B",
                }
            )
    frame = pd.DataFrame(rows)
    vectors = rng.normal(size=(len(frame), 5))
    return frame, vectors


def test_each_scope_is_the_metrics_on_its_rows():
    frame, vectors = pool()
    result = diversity_of(
        texts=frame["text"], contexts=frame["context"], sources=frame["source"], vectors=vectors
    )
    whole = self_bleu(frame["text"].tolist(), frame["context"].tolist())
    assert result["all"]["self_bleu"] == pytest.approx(whole["self_bleu"])
    assert result["all"]["n_pairs"] == 3 * 30
    assert result["all"]["mean_cosine"] == pytest.approx(
        mean_cosine(vectors, frame["context"].tolist())["mean_cosine"]
    )
    for source in ("A", "B"):
        part = frame["source"] == source
        expected = self_bleu(frame.loc[part, "text"].tolist(), frame.loc[part, "context"].tolist())
        assert result["sources"][source]["self_bleu"] == pytest.approx(expected["self_bleu"])
        assert result["sources"][source]["n_pairs"] == 3 * 6
    for context in ("c1", "c2", "c3"):
        part = frame["context"] == context
        expected = self_bleu(frame.loc[part, "text"].tolist(), [context] * 6)
        assert result["contexts"][context]["self_bleu"] == pytest.approx(expected["self_bleu"])
        assert result["contexts"][context]["mean_cosine"] == pytest.approx(
            mean_cosine(vectors[part.to_numpy()], [context] * 6)["mean_cosine"]
        )


def test_a_pool_s_pairs_are_sampled_per_context_with_the_seed():
    frame, vectors = pool()
    kwargs = dict(
        texts=frame["text"], contexts=frame["context"], sources=frame["source"], vectors=vectors
    )
    sampled = diversity_of(**kwargs, pairs_per_context=7, seed=4)
    assert (sampled["all"]["n_pairs"], sampled["all"]["n_pairs_scored"]) == (90, 21)
    assert all(entry["n_pairs_scored"] == 7 for entry in sampled["contexts"].values())
    assert sampled == diversity_of(**kwargs, pairs_per_context=7, seed=4)
    # The cosine stays exact over every pair.
    assert sampled["all"]["mean_cosine"] == diversity_of(**kwargs)["all"]["mean_cosine"]


def test_a_stage_with_many_contexts_is_read_on_a_seeded_sample_of_them():
    n_big = DIVERSITY_MAX_CONTEXTS + 10
    texts = pd.DataFrame(
        [
            {"stage": stage, "context_id": c, "source": "A", "text": f"text {c} {i}"}
            for stage, n in (("big", n_big), ("small", 5))
            for c in range(n)
            for i in range(2)
        ]
    )
    keep = diversity_sample(texts, seed=1)
    assert np.array_equal(keep, diversity_sample(texts, seed=1))
    big = texts.loc[keep & (texts["stage"] == "big").to_numpy()]
    assert big["context_id"].nunique() == DIVERSITY_MAX_CONTEXTS
    assert big.groupby("context_id").size().eq(2).all()  # whole contexts
    assert keep[(texts["stage"] == "small").to_numpy()].all()
    block = diversity_build(texts, ["big", "small"], seed=1)
    assert block["max_contexts"] == DIVERSITY_MAX_CONTEXTS
    assert block["stages"]["big"]["n_contexts_total"] == n_big
    assert block["stages"]["big"]["all"]["n_contexts"] == DIVERSITY_MAX_CONTEXTS
    assert block["stages"]["small"]["all"]["n_contexts"] == 5
    assert block["stages"]["big"]["all"]["mean_cosine"] is None  # no embeddings given
