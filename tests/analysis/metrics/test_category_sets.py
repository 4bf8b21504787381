"""Krippendorff's alpha on the sets of ticked categories with the MASI and Jaccard
distances: the distances and alpha pinned by hand, cross-checked with NLTK's
``AnnotationTask`` (an independent implementation), and the bootstrap's resampled
values checked against the package on the expanded tables."""

import itertools

import numpy as np
import pandas as pd
import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance, masi_distance

from analysis.metrics.agreement import alpha_from_counts
from analysis.metrics.bootstrap import alpha_ci, alpha_resampled, resample_weights
from analysis.metrics.protocol.category_sets import category_set_agreement, category_set_counts
from analysis.metrics.set_distances import set_distance_matrix

CATEGORIES = ["off_topic", "parroting", "malformed", "dialogue_contradicting"]
NLTK = {"masi": masi_distance, "jaccard": jaccard_distance}


def judgement_rows(answers: dict[int, list[set[str] | None]], *, coherent_items=()) -> pd.DataFrame:
    """One row per (item, rater): the set ticked (None: judged coherent)."""
    rows = []
    for item, sets in answers.items():
        for rater, ticked in enumerate(sets):
            rows.append(
                {
                    "item": item,
                    "rater": f"r{rater}",
                    "coherent": ticked is None,
                    **{slug: slug in (ticked or ()) for slug in CATEGORIES},
                }
            )
    return pd.DataFrame(rows)


def nltk_alpha(frame: pd.DataFrame, metric: str) -> float:
    data = [
        (row.rater, row.item, frozenset(slug for slug in CATEGORIES if getattr(row, slug)))
        for row in frame.itertuples()
        if any(getattr(row, slug) for slug in CATEGORIES)
    ]
    return AnnotationTask(data=data, distance=NLTK[metric]).alpha()


def test_the_distances_by_hand():
    members = np.array(
        [
            [1, 0, 0, 0],  # {off-topic}
            [1, 1, 0, 0],  # {off-topic, parroting}
            [1, 0, 1, 0],  # {off-topic, malformed}
            [0, 0, 0, 1],  # {dialogue-contradicting}
        ],
        dtype=bool,
    )
    jaccard = set_distance_matrix(members, "jaccard")
    masi = set_distance_matrix(members, "masi")
    assert np.allclose(np.diag(jaccard), 0) and np.allclose(np.diag(masi), 0)
    assert jaccard[0, 1] == pytest.approx(0.5)  # 1 shared of 2
    assert masi[0, 1] == pytest.approx(1 - 1 / 2 * 2 / 3)  # a subset: M = 2/3
    assert jaccard[1, 2] == pytest.approx(1 - 1 / 3)
    assert masi[1, 2] == pytest.approx(1 - 1 / 3 * 1 / 3)  # an overlap: M = 1/3
    assert jaccard[0, 3] == masi[0, 3] == 1.0  # disjoint
    assert np.array_equal(masi, masi.T)


def test_the_distances_match_nltk_on_every_pair_of_sets():
    all_sets = [
        frozenset(itertools.compress(CATEGORIES, bits))
        for bits in itertools.product([0, 1], repeat=len(CATEGORIES))
        if any(bits)
    ]
    members = np.array([[slug in s for slug in CATEGORIES] for s in all_sets])
    for metric, function in NLTK.items():
        matrix = set_distance_matrix(members, metric)
        expected = np.array([[function(set(a), set(b)) for b in all_sets] for a in all_sets])
        assert np.allclose(matrix, expected), metric


def test_an_empty_set_or_an_unknown_distance_is_refused():
    with pytest.raises(ValueError, match="at least one label"):
        set_distance_matrix(np.array([[1, 0], [0, 0]], dtype=bool), "masi")
    with pytest.raises(ValueError, match="unknown set distance"):
        set_distance_matrix(np.array([[1, 0]], dtype=bool), "dice")


def test_set_alpha_by_hand():
    """The worked example of the statistics page: O = {off-topic} ×3, OR = {off-topic,
    parroting} ×1, R = {parroting} ×2; within items O–O twice, O–OR, R–R twice."""
    frame = judgement_rows(
        {
            1: [{"off_topic"}, {"off_topic"}],
            2: [{"off_topic"}, {"off_topic", "parroting"}],
            3: [{"parroting"}, {"parroting"}],
        }
    )
    result = category_set_agreement(judgements=frame, categories=CATEGORIES, resamples=0)
    assert result["jaccard"]["krippendorff_alpha"] == pytest.approx(12 / 17)
    assert result["masi"]["krippendorff_alpha"] == pytest.approx(9 / 14)
    assert result["jaccard"]["krippendorff_alpha_ci"] == [None, None]  # resamples = 0
    assert (result["n_items"], result["n_judgements"], result["n_sets"]) == (3, 6, 3)
    for metric in ("masi", "jaccard"):
        assert nltk_alpha(frame, metric) == pytest.approx(result[metric]["krippendorff_alpha"])


def test_only_items_all_incoherent_count_and_answers_without_a_set_drop_out():
    frame = judgement_rows(
        {
            1: [{"off_topic"}, {"off_topic", "parroting"}, set()],  # the third: words only
            2: [{"malformed"}, {"malformed"}, {"malformed", "parroting"}],
            3: [{"parroting"}, None, {"parroting"}],  # one said coherent: not counted
            4: [{"dialogue_contradicting"}, set(), set()],  # one set left: not pairable
            5: [{"off_topic"}, {"parroting"}, {"off_topic"}],
        }
    )
    result = category_set_agreement(judgements=frame, categories=CATEGORIES, resamples=0)
    assert result["n_items_all_incoherent"] == 4
    assert result["n_judgements"] == 9  # 2 + 3 + 1 + 3
    assert result["n_items"] == 3
    assert result["n_sets"] == 6
    counted = frame[frame["item"] != 3]
    for metric in ("masi", "jaccard"):
        assert result[metric]["krippendorff_alpha"] == pytest.approx(nltk_alpha(counted, metric))


def test_random_studies_match_nltk_and_the_coincidence_path():
    rng = np.random.default_rng(7)
    for trial in range(5):
        answers = {
            item: [
                {slug for slug in CATEGORIES if rng.random() < 0.35}
                for _ in range(int(rng.integers(2, 5)))
            ]
            for item in range(40)
        }
        frame = judgement_rows(answers)
        result = category_set_agreement(judgements=frame, categories=CATEGORIES, resamples=0)
        counts, members = category_set_counts(frame, CATEGORIES)
        for metric in ("masi", "jaccard"):
            value = result[metric]["krippendorff_alpha"]
            assert value == pytest.approx(nltk_alpha(frame, metric)), (trial, metric)
            distance = set_distance_matrix(members, metric)
            by_matrix = alpha_from_counts(counts, distance=distance, package_max=0)
            assert by_matrix == pytest.approx(value), (trial, metric)


def test_the_resampled_alphas_are_the_package_on_the_expanded_tables():
    rng = np.random.default_rng(3)
    answers = {
        item: [{slug for slug in CATEGORIES[:3] if rng.random() < 0.5} or {"malformed"}
               for _ in range(3)]
        for item in range(25)
    }  # fmt: skip
    counts, members = category_set_counts(judgement_rows(answers), CATEGORIES)
    distance = set_distance_matrix(members, "masi")
    patterns, weights = resample_weights(counts, resamples=20, seed=1)
    resampled = alpha_resampled(patterns, weights, distance=distance)
    for row, value in zip(weights, resampled, strict=True):
        expanded = np.repeat(patterns, row.astype(int), axis=0)
        assert value == pytest.approx(alpha_from_counts(expanded, distance=distance))
    low, high = alpha_ci(counts, distance=distance, resamples=200, seed=0)
    point = alpha_from_counts(counts, distance=distance)
    assert low < point < high


def test_a_distance_matrix_of_the_wrong_size_is_refused():
    with pytest.raises(ValueError, match="one row and column per value"):
        alpha_from_counts(np.array([[2, 0], [1, 1]]), distance=np.zeros((3, 3)))


def test_no_sets_at_all_is_undefined_not_an_error():
    frame = judgement_rows({1: [None, None], 2: [set(), set()]})
    result = category_set_agreement(judgements=frame, categories=CATEGORIES)
    assert result["n_sets"] == 0 and result["n_items"] == 0
    assert result["masi"] == {"krippendorff_alpha": None, "krippendorff_alpha_ci": [None, None]}
