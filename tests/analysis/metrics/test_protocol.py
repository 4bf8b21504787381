"""Tests of analysis.metrics.protocol: a hand-computed example per measure, cross-checks
against independent implementations, and the edge cases of the protocol (all raters
agree, one item, a label nobody used, unequal rater counts, a group with one
annotator, no judgements at all).

Plain pytest, no database.
"""

from __future__ import annotations

import itertools
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import metrics
from tests.analysis.metrics.test_metrics import SMALL, long_from_table

# Any warning (a RuntimeWarning from a 0/0, a pandas FutureWarning) fails the test.
pytestmark = pytest.mark.filterwarnings("error")

CATS = [
    "dialogue_contradicting",
    "malformed",
    "off_topic",
    "on_topic_but_unverifiable",
    "parroting",
]
MERGE = {
    "dialogue_contradicting": "hallucinatory",
    "off_topic": "hallucinatory",
    "on_topic_but_unverifiable": "hallucinatory",
}
SHORT = {
    "D": "dialogue_contradicting",
    "M": "malformed",
    "O": "off_topic",
    "U": "on_topic_but_unverifiable",
    "P": "parroting",
}

# --------------------------------------------------------------------------- helpers


def judgements(rows, *, categories=CATS) -> pd.DataFrame:
    """Long judgements from (item, rater, answer[, mee]) tuples.

    ``answer`` is ``"Y"`` (coherent) or the letters of the selected error
    categories (``SHORT``), e.g. ``"MP"``; ``""`` is an incoherent answer with
    no category. ``mee`` is a letter or None.
    """
    records = []
    for item, rater, answer, *rest in rows:
        coherent = answer == "Y"
        chosen = set() if coherent else {SHORT[c] for c in answer}
        mee = SHORT[rest[0]] if rest and rest[0] else None
        records.append(
            {
                "item": item,
                "rater": rater,
                "coherent": coherent,
                "mee": mee,
                **{c: c in chosen for c in categories},
            }
        )
    return pd.DataFrame(records, columns=["item", "rater", "coherent", "mee", *categories])


def shift_rows(rows) -> pd.DataFrame:
    """(stage, item, rater, "Y"/"N") tuples → judgements with a boolean ``coherent``."""
    frame = pd.DataFrame(rows, columns=["stage", "item", "rater", "answer"])
    return frame.assign(coherent=frame["answer"] == "Y").drop(columns="answer")


def assert_strict_json(value, path="result") -> None:
    """No NaN or infinity anywhere, and only plain JSON types (no numpy scalars)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            assert type(key) is str, f"{path}: key {key!r}"
            assert_strict_json(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            assert_strict_json(inner, f"{path}[{index}]")
    elif type(value) is float:
        assert math.isfinite(value), path
    else:
        assert value is None or type(value) in (int, str, bool), f"{path}: {value!r}"


def reliability_alpha(matrix, *, level: str, domain) -> float:
    """The ``krippendorff`` package on a raters × items reliability matrix (NaN = missing)."""
    return float(
        krippendorff.alpha(
            reliability_data=np.asarray(matrix, dtype=float),
            value_domain=domain,
            level_of_measurement=level,
        )
    )


# --------------------------------------------------------------------------- agreement_summary


def test_agreement_summary_small_hand_computed_example():
    # SMALL: three items, three raters, binary label: 1 1 0 | 0 0 0 | 1 1 1.
    # Fleiss: P̄ = (1/3 + 1 + 1)/3 = 7/9, p = 4/9, 5/9 → P̄e = 41/81,
    #   κ = (63 − 41)/(81 − 41) = 22/40 = 0.55 (moderate).
    # Randolph: κ = (7/9 − 1/2)/(1/2) = 5/9 ≈ 0.556 (moderate).
    # Alpha: o_00 = 3, o_11 = 4, o_01 = o_10 = 1; n_0 = 4, n_1 = 5, n = 9:
    #   α = 1 − 8 · 2/(2 · 4 · 5) = 0.6.
    result = metrics.agreement_summary(ratings=SMALL, categories=[0, 1], resamples=0)
    assert result == {
        "n_items": 3,
        "raters_per_item": 3,
        "fleiss_kappa": pytest.approx(0.55),
        "fleiss_kappa_ci": [None, None],
        "fleiss_band": "moderate",
        "randolph_kappa": pytest.approx(5 / 9),
        "randolph_kappa_ci": [None, None],
        "randolph_band": "moderate",
        "krippendorff_alpha": pytest.approx(0.6),
        "krippendorff_alpha_ci": [None, None],
        "n_items_alpha": 3,
    }


@pytest.mark.parametrize("seed", range(5))
def test_agreement_summary_equals_the_long_form_functions_and_interval_functions(seed):
    # Unequal rater counts (2-4 per item) on three labels, one of them never used.
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(40):
        truth = int(rng.integers(0, 2))
        for rater in range(int(rng.integers(2, 5))):
            label = truth if rng.random() < 0.7 else int(rng.integers(0, 2))
            rows.append((item, f"r{rater}", label))
    ratings = pd.DataFrame(rows, columns=["item", "rater", "label"])
    categories = [0, 1, 2]
    result = metrics.agreement_summary(ratings=ratings, categories=categories, resamples=200)
    fleiss = metrics.fleiss_kappa(ratings=ratings, categories=categories)
    randolph = metrics.randolph_kappa(ratings=ratings, categories=categories)
    assert result["fleiss_kappa"] == pytest.approx(fleiss["value"])
    assert result["randolph_kappa"] == pytest.approx(randolph["value"])
    assert result["n_items"] == fleiss["n_items"] == randolph["n_items"]
    assert result["raters_per_item"] == fleiss["raters_per_item"]
    assert result["krippendorff_alpha"] == pytest.approx(
        metrics.krippendorff_alpha(ratings=ratings, values=categories)
    )
    assert result["n_items_alpha"] == 40
    assert result["fleiss_band"] == metrics.landis_koch_band(fleiss["value"])
    # The intervals are the bootstrap module's, on the modal rows / all rows.
    table = metrics.count_table(ratings=ratings, categories=categories)
    kept, _ = metrics.modal_rows(table)
    assert result["fleiss_kappa_ci"] == list(
        metrics.kappa_ci(kept, method="fleiss", resamples=200, seed=0)
    )
    assert result["randolph_kappa_ci"] == list(
        metrics.kappa_ci(kept, method="randolph", resamples=200, seed=0)
    )
    assert result["krippendorff_alpha_ci"] == list(
        metrics.alpha_ci(table.to_numpy(), resamples=200, seed=0)
    )


def test_agreement_summary_counts_a_label_nobody_used_only_in_randolphs_q():
    # q = 3: κ = (7/9 − 1/3)/(2/3) = 2/3; Fleiss and nominal alpha unchanged.
    result = metrics.agreement_summary(ratings=SMALL, categories=[0, 1, 2], resamples=0)
    assert result["randolph_kappa"] == pytest.approx(2 / 3)
    assert result["fleiss_kappa"] == pytest.approx(0.55)
    assert result["krippendorff_alpha"] == pytest.approx(0.6)


def test_agreement_summary_when_all_raters_agree():
    # Everything "coherent": Fleiss P̄e = 1 (undefined), Randolph (1 − 1/2)/(1/2) = 1,
    # alpha has no variation (undefined). Randolph's interval is [1, 1].
    ratings = long_from_table([[0, 3]] * 4, [False, True])
    result = metrics.agreement_summary(ratings=ratings, categories=[False, True], resamples=50)
    assert result["fleiss_kappa"] is None
    assert result["fleiss_kappa_ci"] == [None, None]
    assert result["fleiss_band"] is None
    assert result["randolph_kappa"] == 1.0
    assert result["randolph_kappa_ci"] == [1.0, 1.0]
    assert result["randolph_band"] == "almost perfect"
    assert result["krippendorff_alpha"] is None
    assert result["krippendorff_alpha_ci"] == [None, None]


def test_agreement_summary_of_one_item():
    # One item rated 1, 1, 0: Fleiss −0.5 (see test_metrics), Randolph
    # (1/3 − 1/2)/(1/2) = −1/3, both "poor"; alpha undefined on a single unit.
    # Resampling one item always gives it back: the intervals are the point values.
    ratings = long_from_table([[1, 2]], [0, 1])
    result = metrics.agreement_summary(ratings=ratings, categories=[0, 1], resamples=30)
    assert result["fleiss_kappa"] == pytest.approx(-0.5)
    assert result["fleiss_kappa_ci"] == [pytest.approx(-0.5)] * 2
    assert result["randolph_kappa"] == pytest.approx(-1 / 3)
    assert result["randolph_band"] == "poor"
    assert result["krippendorff_alpha"] is None
    assert result["krippendorff_alpha_ci"] == [None, None]


def test_agreement_summary_of_one_annotator_and_of_nothing():
    solo = pd.DataFrame({"item": [1, 2, 3], "rater": "solo", "label": [0, 1, 1]})
    result = metrics.agreement_summary(ratings=solo, categories=[0, 1], resamples=20)
    assert result["raters_per_item"] == 1
    assert result["n_items"] == 3
    assert result["n_items_alpha"] == 0
    for key in ("fleiss_kappa", "randolph_kappa", "krippendorff_alpha"):
        assert result[key] is None
        assert result[f"{key}_ci"] == [None, None]
    empty = pd.DataFrame({"item": [], "rater": [], "label": []})
    result = metrics.agreement_summary(ratings=empty, categories=[0, 1], resamples=20)
    assert result["n_items"] == 0
    assert result["raters_per_item"] is None
    assert result["n_items_alpha"] == 0
    assert result["fleiss_kappa"] is result["randolph_kappa"] is None


# --------------------------------------------------------------------------- MEE labels

# Three raters; the letters are the selected categories, the last field the named MEE.
#   item 1: a M | b M | c P                   → MEE M, M, P (single selections)
#   item 2: a P | b P | c P                   → P, P, P
#   item 3: a MP (none named) | b M | c M     → missing, M, M
#   item 4: a O | b D | c MO (named M)        → O, D, M
#   item 5: a coherent | b M | c M            → not all incoherent: left out of the MEE agreement
MEE_EXAMPLE = judgements(
    [
        (1, "a", "M"),
        (1, "b", "M"),
        (1, "c", "P"),
        (2, "a", "P"),
        (2, "b", "P"),
        (2, "c", "P"),
        (3, "a", "MP"),
        (3, "b", "M"),
        (3, "c", "M"),
        (4, "a", "O"),
        (4, "b", "D"),
        (4, "c", "MO", "M"),
        (5, "a", "Y"),
        (5, "b", "M"),
        (5, "c", "M"),
    ]
)
INCOHERENT_ITEMS = MEE_EXAMPLE[MEE_EXAMPLE["item"] != 5]


def test_mee_labels_single_category_is_the_mee_several_without_a_named_one_is_missing():
    labels = metrics.mee_labels(judgements=INCOHERENT_ITEMS, categories=CATS)
    assert labels.tolist()[:6] == ["malformed", "malformed", "parroting"] + ["parroting"] * 3
    assert pd.isna(labels.iloc[6])  # item 3, rater a: two categories, none named
    assert labels.tolist()[7:] == [
        "malformed",
        "malformed",
        "off_topic",
        "dialogue_contradicting",
        "malformed",
    ]
    assert labels.index.equals(INCOHERENT_ITEMS.index)


def test_mee_labels_merge_the_hallucination_categories():
    # Item 4: O → hallucinatory, D → hallucinatory, c named M → malformed.
    labels = metrics.mee_labels(judgements=INCOHERENT_ITEMS, categories=CATS, merge=MERGE)
    assert labels.iloc[9:].tolist() == ["hallucinatory", "hallucinatory", "malformed"]
    # Two hallucination categories and nothing else: a single merged category,
    # so the MEE is hallucinatory even with none named.
    two = judgements([(1, "a", "DO"), (1, "b", "DOM")])
    merged = metrics.mee_labels(judgements=two, categories=CATS, merge=MERGE)
    assert merged.iloc[0] == "hallucinatory"
    assert pd.isna(merged.iloc[1])  # hallucinatory + malformed, none named


def test_mee_labels_consensus_uses_a_category_every_rater_selected():
    # Item 3: every rater selected M (a selected M and P): a's missing MEE becomes M.
    # Item 1: a {M}, b {M}, c {P}: nothing shared, unchanged. Item 4: a {O}, b {D},
    # c {M, O}: nothing shared before merging, unchanged.
    labels = metrics.mee_labels(judgements=INCOHERENT_ITEMS, categories=CATS, consensus=True)
    assert labels.tolist() == [
        "malformed",
        "malformed",
        "parroting",
        "parroting",
        "parroting",
        "parroting",
        "malformed",
        "malformed",
        "malformed",
        "off_topic",
        "dialogue_contradicting",
        "malformed",
    ]


def test_mee_labels_consensus_after_merging():
    # Item 4 merged: a {H}, b {H}, c {M, H} named M → H is shared; c's MEE (M) is not,
    # so c gets the shared category most often named: H (named twice).
    labels = metrics.mee_labels(
        judgements=INCOHERENT_ITEMS, categories=CATS, consensus=True, merge=MERGE
    )
    assert labels.iloc[9:].tolist() == ["hallucinatory"] * 3


def test_mee_consensus_replacement_is_the_shared_category_most_often_named():
    # All four selected M and P. a named P, b named P, c named M; d also selected O
    # and named it. Shared: M and P → every rater gets the shared category most
    # often named: P (2 times) over M (1 time), although M comes first in category
    # order; c's M is replaced too (each MEE by a category all selected).
    frame = judgements(
        [(1, "a", "MP", "P"), (1, "b", "MP", "P"), (1, "c", "MP", "M"), (1, "d", "MPO", "O")]
    )
    labels = metrics.mee_labels(judgements=frame, categories=CATS, consensus=True)
    assert labels.tolist() == ["parroting"] * 4


@pytest.mark.parametrize(
    ("categories", "expected"),
    [
        (CATS, "malformed"),  # M before P
        (["parroting", "off_topic", "malformed"], "parroting"),  # P before M
    ],
)
def test_mee_consensus_tie_goes_to_the_first_category_in_order(categories, expected):
    # Shared: M and P, each named once (a: M, b: P); c named O (not shared) → tie.
    frame = judgements(
        [(1, "a", "MP", "M"), (1, "b", "MP", "P"), (1, "c", "MPO", "O")],
        categories=categories,
    )
    labels = metrics.mee_labels(judgements=frame, categories=categories, consensus=True)
    assert labels.tolist() == [expected] * 3


def test_mee_consensus_with_no_mee_named_on_the_item_takes_the_first_shared_category():
    # Shared: M and P, nobody named an MEE (all counts 0, a tie) → M for all three.
    frame = judgements([(1, "a", "MP"), (1, "b", "MP"), (1, "c", "PMO")])
    labels = metrics.mee_labels(judgements=frame, categories=CATS, consensus=True)
    assert labels.tolist() == ["malformed"] * 3


def test_mee_labels_follow_a_non_default_index_and_item_order():
    shuffled = INCOHERENT_ITEMS.sample(frac=1, random_state=3)
    shuffled.index = shuffled.index * 10 + 7
    expected = metrics.mee_labels(judgements=INCOHERENT_ITEMS, categories=CATS, consensus=True)
    labels = metrics.mee_labels(judgements=shuffled, categories=CATS, consensus=True)
    assert labels.index.equals(shuffled.index)
    assert labels.tolist() == expected.loc[(shuffled.index - 7) // 10].tolist()


def reference_mee_labels(frame, *, consensus: bool, merge) -> list:
    """mee_labels' docstring written as a loop over judgements and items."""
    merge = merge or {}
    labels = list(dict.fromkeys(merge.get(c, c) for c in CATS))
    chosen, mees = {}, {}
    for index, row in frame.iterrows():
        chosen[index] = {merge.get(c, c) for c in CATS if row[c]}
        if not pd.isna(row["mee"]):
            mees[index] = merge.get(row["mee"], row["mee"])
        elif len(chosen[index]) == 1:
            (mees[index],) = chosen[index]
        else:
            mees[index] = None
    adjusted = dict(mees)
    if consensus:
        for _, group in frame.groupby("item"):
            shared = set.intersection(*(chosen[i] for i in group.index))
            if not shared:
                continue
            named = {lab: sum(mees[i] == lab for i in group.index) for lab in shared}
            most = max(named.values())
            replacement = next(lab for lab in labels if named.get(lab) == most)
            for index in group.index:
                adjusted[index] = replacement
    return [adjusted[i] for i in frame.index]


@pytest.mark.parametrize("seed", range(12))
def test_mee_labels_match_a_loop_over_items_on_random_data(seed):
    # 1-5 items, 1-4 raters, any subset of categories (none included), an MEE named
    # for 60 % of multi-category answers; rows shuffled.
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(int(rng.integers(1, 6))):
        for rater in "abcd"[: int(rng.integers(1, 5))]:
            chosen = "".join(c for c in "DMOUP" if rng.random() < 0.5)
            named = (
                str(rng.choice(list(chosen))) if len(chosen) > 1 and rng.random() < 0.6 else None
            )
            rows.append((item, rater, chosen, named))
    frame = judgements(rows).sample(frac=1, random_state=seed)
    for consensus in (False, True):
        for merge in (None, MERGE):
            labels = metrics.mee_labels(
                judgements=frame, categories=CATS, consensus=consensus, merge=merge
            )
            actual = [None if pd.isna(label) else label for label in labels]
            assert actual == reference_mee_labels(frame, consensus=consensus, merge=merge)


def test_mee_labels_reject_an_mee_outside_the_categories():
    frame = judgements([(1, "a", "MP")]).assign(mee="typo")
    with pytest.raises(ValueError, match=r"MEE labels not among the categories: \['typo'\]"):
        metrics.mee_labels(judgements=frame, categories=CATS)


# --------------------------------------------------------------------------- MEE agreement


def test_mee_agreement_hand_computed_example():
    # Items 1-4 are all-incoherent (item 5 is not). Item 3 has two MEEs, so the
    # kappas use items 1, 2, 4 (3 raters), categories D M O U P (q = 5):
    #   item 1: M2 P1 → P_1 = 2·1/6 = 1/3; item 2: P3 → 1; item 4: D1 M1 O1 → 0.
    #   P̄ = 4/9; totals D1 M3 O1 P4 of 9 → P̄e = (1 + 9 + 1 + 16)/81 = 1/3.
    #   Fleiss κ = (4/9 − 3/9)/(6/9) = 1/6; Randolph κ = (4/9 − 1/5)/(4/5) = 11/36.
    # Alpha (items 1-4, item 3 with two ratings M M):
    #   o_MM = 1 (item 1) + 2 (item 3) = 3, o_MP = o_PM = 1, o_PP = 3,
    #   item 4 adds 1/2 to each of o_DM, o_MD, o_DO, o_OD, o_MO, o_OM;
    #   n_D = 1, n_M = 5, n_O = 1, n_P = 4, n = 11;
    #   Σ_{c≠k} o_ck = 2 + 3 = 5, Σ_{c≠k} n_c n_k = 11² − (1 + 25 + 1 + 16) = 78;
    #   α = 1 − 10 · 5/78 = 14/39.
    result = metrics.mee_agreement(judgements=MEE_EXAMPLE, categories=CATS, resamples=0)
    assert result["n_items_all_incoherent"] == 4
    assert result["n_items"] == 3
    assert result["raters_per_item"] == 3
    assert result["n_items_alpha"] == 4
    assert result["fleiss_kappa"] == pytest.approx(1 / 6)
    assert result["randolph_kappa"] == pytest.approx(11 / 36)
    assert result["krippendorff_alpha"] == pytest.approx(14 / 39)
    assert result["categories"] == CATS


def test_mee_agreement_with_merged_categories():
    # Labels H(allucinatory) M P, q = 3. Items 1, 2, 4 (item 3 still has two MEEs):
    #   item 1: M2 P1 → 1/3; item 2: P3 → 1; item 4: H2 M1 → 1/3; P̄ = 5/9.
    #   Totals H2 M3 P4 of 9 → P̄e = (4 + 9 + 16)/81 = 29/81.
    #   Fleiss κ = (45/81 − 29/81)/(52/81) = 4/13; Randolph κ = (5/9 − 1/3)/(2/3) = 1/3.
    result = metrics.mee_agreement(
        judgements=MEE_EXAMPLE, categories=CATS, merge=MERGE, resamples=0
    )
    assert result["categories"] == ["hallucinatory", "malformed", "parroting"]
    assert result["n_items"] == 3
    assert result["fleiss_kappa"] == pytest.approx(4 / 13)
    assert result["randolph_kappa"] == pytest.approx(1 / 3)


def test_mee_agreement_consensus_adjusted():
    # Consensus fills item 3 (a → M), so all four items have three MEEs:
    #   item 1: M2 P1 → 1/3; item 2: P3 → 1; item 3: M3 → 1; item 4: D1 M1 O1 → 0.
    #   P̄ = (7/3)/4 = 7/12; totals D1 M6 O1 P4 of 12 → P̄e = (1 + 36 + 1 + 16)/144 = 3/8.
    #   Fleiss κ = (7/12 − 3/8)/(5/8) = 1/3; Randolph κ = (7/12 − 1/5)/(4/5) = 23/48.
    result = metrics.mee_agreement(
        judgements=MEE_EXAMPLE, categories=CATS, consensus=True, resamples=0
    )
    assert result["n_items"] == 4
    assert result["fleiss_kappa"] == pytest.approx(1 / 3)
    assert result["randolph_kappa"] == pytest.approx(23 / 48)


def test_mee_agreement_consensus_adjusted_with_merged_categories():
    # Item 3 → M M M, item 4 → H H H:
    #   P̄ = (1/3 + 1 + 1 + 1)/4 = 5/6; totals H3 M5 P4 of 12 → P̄e = 50/144 = 25/72.
    #   Fleiss κ = (60/72 − 25/72)/(47/72) = 35/47; Randolph κ = (5/6 − 1/3)/(2/3) = 3/4.
    result = metrics.mee_agreement(
        judgements=MEE_EXAMPLE, categories=CATS, consensus=True, merge=MERGE, resamples=0
    )
    assert result["n_items"] == 4
    assert result["fleiss_kappa"] == pytest.approx(35 / 47)
    assert result["randolph_kappa"] == pytest.approx(3 / 4)


@pytest.mark.parametrize("consensus", [False, True])
@pytest.mark.parametrize("merge", [None, MERGE])
def test_mee_agreement_equals_agreement_summary_of_mee_labels(consensus, merge):
    # Cross-check on random data: the MEE agreement is the plain agreement summary of
    # the mee_labels of the all-incoherent items, computed independently here.
    rng = np.random.default_rng(7)
    rows = []
    for item in range(60):
        p_coherent = rng.choice([0.0, 0.0, 0.3])
        for rater in "abc":
            if rng.random() < p_coherent:
                rows.append((item, rater, "Y"))
                continue
            chosen = "".join(c for c in "DMOUP" if rng.random() < 0.35) or "M"
            named = (
                str(rng.choice(list(chosen))) if len(chosen) > 1 and rng.random() < 0.7 else None
            )
            rows.append((item, rater, chosen, named))
    frame = judgements(rows)
    all_incoherent = [i for i, g in frame.groupby("item") if not g["coherent"].any()]
    subset = frame[frame["item"].isin(all_incoherent)]
    labels = metrics.mee_labels(
        judgements=subset, categories=CATS, consensus=consensus, merge=merge
    )
    categories = list(dict.fromkeys((merge or {}).get(c, c) for c in CATS))
    expected = metrics.agreement_summary(
        ratings=subset.assign(label=labels), categories=categories, resamples=50, seed=4
    )
    result = metrics.mee_agreement(
        judgements=frame, categories=CATS, consensus=consensus, merge=merge, resamples=50, seed=4
    )
    assert result.pop("n_items_all_incoherent") == len(all_incoherent)
    assert result.pop("categories") == categories
    assert result == expected


def test_mee_agreement_edge_cases():
    # All raters name the same MEE on every item: Fleiss undefined, Randolph 1.
    same = judgements([(i, r, "P") for i in range(3) for r in "abc"])
    result = metrics.mee_agreement(judgements=same, categories=CATS, resamples=10)
    assert result["fleiss_kappa"] is None
    assert result["randolph_kappa"] == 1.0
    assert result["krippendorff_alpha"] is None
    # One item, M M P: Fleiss P̄ = 1/3, P̄e = 4/9 + 1/9 = 5/9, κ = (3/9 − 5/9)/(4/9) = −1/2.
    one = judgements([(1, "a", "M"), (1, "b", "M"), (1, "c", "P")])
    result = metrics.mee_agreement(judgements=one, categories=CATS, resamples=10)
    assert result["fleiss_kappa"] == pytest.approx(-0.5)
    assert result["krippendorff_alpha"] is None
    # A group with one annotator: one MEE per item, nothing to agree on.
    solo = judgements([(1, "a", "M"), (2, "a", "P"), (3, "a", "MP", "M")])
    result = metrics.mee_agreement(judgements=solo, categories=CATS, resamples=10)
    assert result["raters_per_item"] == 1
    assert result["fleiss_kappa"] is result["randolph_kappa"] is None
    assert result["n_items_all_incoherent"] == 3
    # Every item had a coherent answer, and no judgements at all.
    for frame in (judgements([(1, "a", "Y"), (1, "b", "M")]), judgements([])):
        result = metrics.mee_agreement(judgements=frame, categories=CATS, consensus=True)
        assert result["n_items_all_incoherent"] == 0
        assert result["n_items"] == 0
        assert result["fleiss_kappa"] is result["krippendorff_alpha"] is None
        assert_strict_json(result)


# --------------------------------------------------------------------------- empathy

# Three raters. Items 0-2 all coherent with ratings (5, 4, 4), (1, 2, 3), (3, 3, 3);
# item 3 has an incoherent answer and is left out.
EMPATHY_EXAMPLE = pd.DataFrame(
    [
        (0, "a", True, 5),
        (0, "b", True, 4),
        (0, "c", True, 4),
        (1, "a", True, 1),
        (1, "b", True, 2),
        (1, "c", True, 3),
        (2, "a", True, 3),
        (2, "b", True, 3),
        (2, "c", True, 3),
        (3, "a", True, 5),
        (3, "b", False, None),
        (3, "c", True, 5),
    ],
    columns=["item", "rater", "coherent", "empathy"],
)


def test_empathy_agreement_hand_computed_example():
    # Raw 5-point scale (nominal kappas):
    #   P_i = 2/6 = 1/3, 0, 1 → P̄ = 4/9; shares 1:1/9 2:1/9 3:4/9 4:2/9 5:1/9
    #   → P̄e = (1 + 1 + 16 + 4 + 1)/81 = 23/81; Fleiss κ = (36 − 23)/(81 − 23) = 13/58;
    #   Randolph κ = (4/9 − 1/5)/(4/5) = 11/36.
    # Ordinal alpha: o_44 = 1, o_45 = o_54 = 1, o_33 = 3, and item 1 adds 1/2 to each
    #   ordered pair of 1, 2, 3; n_1 = 1, n_2 = 1, n_3 = 4, n_4 = 2, n_5 = 1, n = 9.
    #   δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²: δ²12 = 1, δ²13 = 12.25, δ²14 = 42.25,
    #   δ²15 = 64, δ²23 = 6.25, δ²24 = 30.25, δ²25 = 49, δ²34 = 9, δ²35 = 20.25, δ²45 = 2.25.
    #   Σ o δ² = 2 · ½ · (1 + 12.25 + 6.25) + 2 · 1 · 2.25 = 24.
    #   Σ n_c n_k δ² = 2 · (1 + 4·12.25 + 2·42.25 + 64 + 4·6.25 + 2·30.25 + 49 + 8·9
    #                       + 4·20.25 + 2·2.25) = 2 · 490.5 = 981.
    #   α = 1 − 8 · 24/981 = 263/327.
    result = metrics.empathy_agreement(judgements=EMPATHY_EXAMPLE, resamples=0)
    assert result["n_items_all_coherent"] == 3
    assert result["n_items"] == 3
    assert result["fleiss_kappa"] == pytest.approx(13 / 58)
    assert result["randolph_kappa"] == pytest.approx(11 / 36)
    assert result["krippendorff_alpha"] == pytest.approx(263 / 327)
    # Cross-check with the package on the raters × items matrix.
    matrix = [[5, 1, 3], [4, 2, 3], [4, 3, 3]]
    assert result["krippendorff_alpha"] == pytest.approx(
        reliability_alpha(matrix, level="ordinal", domain=[1, 2, 3, 4, 5])
    )


def test_empathy_agreement_on_the_merged_scale():
    # 1-2 disagree, 3 neutral, 4-5 agree: (A, A, A), (D, D, N), (N, N, N).
    #   P̄ = (1 + 1/3 + 1)/3 = 7/9; shares D 2/9, N 4/9, A 3/9 → P̄e = 29/81;
    #   Fleiss κ = (63 − 29)/(81 − 29) = 17/26; Randolph κ = (7/9 − 1/3)/(2/3) = 2/3.
    # Ordinal alpha (D < N < A): o_AA = 3, o_DD = 1, o_DN = o_ND = 1, o_NN = 3;
    #   n_D = 2, n_N = 4, n_A = 3, n = 9.
    #   δ²DN = (6 − 3)² = 9, δ²NA = (7 − 3.5)² = 12.25, δ²DA = (9 − 2.5)² = 42.25.
    #   Σ o δ² = 2 · 9 = 18; Σ n_c n_k δ² = 2 · (8·9 + 12·12.25 + 6·42.25) = 945.
    #   α = 1 − 8 · 18/945 = 89/105.
    merged = metrics.empathy_agreement(judgements=EMPATHY_EXAMPLE, resamples=0)["merged"]
    assert merged["n_items"] == 3
    assert merged["fleiss_kappa"] == pytest.approx(17 / 26)
    assert merged["randolph_kappa"] == pytest.approx(2 / 3)
    assert merged["krippendorff_alpha"] == pytest.approx(89 / 105)
    matrix = [[2, 0, 1], [2, 0, 1], [2, 1, 1]]  # D = 0, N = 1, A = 2
    assert merged["krippendorff_alpha"] == pytest.approx(
        reliability_alpha(matrix, level="ordinal", domain=[0, 1, 2])
    )


def test_empathy_alpha_is_ordinal_not_nominal():
    # Near misses (4 vs 5) cost less than far ones (1 vs 5) on an ordinal scale:
    # same nominal disagreement, different alpha.
    def frame(first, second):
        rows = [(0, "a", True, first), (0, "b", True, second), (1, "a", True, 3)]
        return pd.DataFrame(
            [*rows, (1, "b", True, 3), (2, "a", True, 2), (2, "b", True, 2)],
            columns=["item", "rater", "coherent", "empathy"],
        )

    near = metrics.empathy_agreement(judgements=frame(4, 5), resamples=0)
    far = metrics.empathy_agreement(judgements=frame(1, 5), resamples=0)
    assert near["fleiss_kappa"] == pytest.approx(far["fleiss_kappa"])
    assert near["krippendorff_alpha"] > far["krippendorff_alpha"]


def test_empathy_agreement_with_a_missing_rating_and_unequal_rater_counts():
    # Item 2's rater c gave no rating: items 0, 1 keep three ratings (kappas use
    # them), item 2 has two (alpha still uses it).
    frame = EMPATHY_EXAMPLE.copy()
    frame.loc[(frame["item"] == 2) & (frame["rater"] == "c"), "empathy"] = None
    result = metrics.empathy_agreement(judgements=frame, resamples=20)
    assert result["n_items_all_coherent"] == 3
    assert result["n_items"] == 2
    assert result["n_items_alpha"] == 3
    matrix = [[5, 1, 3], [4, 2, 3], [4, 3, np.nan]]
    assert result["krippendorff_alpha"] == pytest.approx(
        reliability_alpha(matrix, level="ordinal", domain=[1, 2, 3, 4, 5])
    )
    assert_strict_json(result)


def test_empathy_agreement_edge_cases():
    # Everyone "agree" (5) on every item: Fleiss and alpha undefined, Randolph 1.
    same = pd.DataFrame(
        [(i, r, True, 5) for i in range(3) for r in "abc"],
        columns=["item", "rater", "coherent", "empathy"],
    )
    result = metrics.empathy_agreement(judgements=same, resamples=10)
    assert result["fleiss_kappa"] is None
    assert result["randolph_kappa"] == 1.0
    assert result["merged"]["randolph_kappa"] == 1.0
    assert result["krippendorff_alpha"] is None
    # No item judged coherent by all, and no judgements at all.
    none_coherent = EMPATHY_EXAMPLE[EMPATHY_EXAMPLE["item"] == 3]
    for frame in (none_coherent, EMPATHY_EXAMPLE.iloc[:0]):
        result = metrics.empathy_agreement(judgements=frame, resamples=10)
        assert result["n_items_all_coherent"] == 0
        assert result["n_items"] == 0
        assert result["merged"]["n_items"] == 0
        assert_strict_json(result)


# --------------------------------------------------------------------------- majority labels


def test_majority_labels_hand_computed_with_ties_missing():
    # score/raters: 3/3, 2/3 → coherent; 1/3, 0/3 → incoherent; 2/4, 1/2 → tie (missing);
    # 3/4 → coherent; 1/1 → coherent (one annotator). Item "x" has no rater count.
    scores = pd.Series([3, 2, 1, 0, 2, 1, 3, 1, 0], index=list("abcdefghx"))
    raters = pd.Series([3, 3, 3, 3, 4, 2, 4, 1], index=list("abcdefgh"))
    labels = metrics.majority_labels(scores=scores, raters=raters)
    assert sorted(labels.index) == list("abcdefgh")  # "x" has no rater count
    assert labels.drop(["e", "f"]).to_dict() == {
        "a": "coherent",
        "b": "coherent",
        "c": "incoherent",
        "d": "incoherent",
        "g": "coherent",
        "h": "coherent",
    }
    assert labels[["e", "f"]].isna().all()


# --------------------------------------------------------------------------- between groups

# Laypeople and experts, three annotators each. Items a-d judged by both, "e" only
# by laypeople, "f" only by experts.
LAY_SCORES = pd.Series({"a": 3, "b": 2, "c": 0, "d": 1, "e": 3})
EXPERT_SCORES = pd.Series({"a": 3, "b": 1, "c": 0, "d": 1, "f": 2})


def three_raters(scores: pd.Series) -> pd.Series:
    return pd.Series(3, index=scores.index)


def test_between_group_agreement_hand_computed_example():
    # Majority labels: lay C C I I, experts C I I I (a-d).
    #   Pairs (C, C), (C, I), (I, I), (I, I): o_CC = 2, o_CI = o_IC = 1, o_II = 4;
    #   n_C = 3, n_I = 5, n = 8: α = 1 − 7 · 2/(2 · 3 · 5) = 8/15.
    # Scores (ordinal, domain 0-3): pairs (3, 3), (2, 1), (0, 0), (1, 1):
    #   o_33 = 2, o_21 = o_12 = 1, o_00 = 2, o_11 = 2; n_0 = 2, n_1 = 3, n_2 = 1, n_3 = 2.
    #   δ²01 = 2.5² = 6.25, δ²02 = 4.5² = 20.25, δ²03 = 6² = 36, δ²12 = 2² = 4,
    #   δ²13 = 3.5² = 12.25, δ²23 = 1.5² = 2.25.
    #   Σ o δ² = 2 · 4 = 8; Σ n_c n_k δ² = 2 · (6·6.25 + 2·20.25 + 4·36 + 3·4
    #                                          + 6·12.25 + 2·2.25) = 2 · 312 = 624.
    #   α = 1 − 7 · 8/624 = 71/78.
    result = metrics.between_group_agreement(
        scores={"Layperson": LAY_SCORES, "Expert": EXPERT_SCORES},
        raters={"Layperson": three_raters(LAY_SCORES), "Expert": three_raters(EXPERT_SCORES)},
        resamples=0,
    )
    assert result == {
        "n_items": 4,
        "krippendorff_alpha_majority": pytest.approx(8 / 15),
        "krippendorff_alpha_majority_ci": [None, None],
        "krippendorff_alpha_scores": pytest.approx(71 / 78),
        "krippendorff_alpha_scores_ci": [None, None],
    }
    # The package on the 2 × 4 reliability matrices, built by hand.
    majority = [[1, 1, 0, 0], [1, 0, 0, 0]]  # 1 = coherent
    scores = [[3, 2, 0, 1], [3, 1, 0, 1]]
    assert result["krippendorff_alpha_majority"] == pytest.approx(
        reliability_alpha(majority, level="nominal", domain=[0, 1])
    )
    assert result["krippendorff_alpha_scores"] == pytest.approx(
        reliability_alpha(scores, level="ordinal", domain=[0, 1, 2, 3])
    )


@pytest.mark.parametrize("seed", range(5))
def test_between_group_agreement_equals_krippendorff_on_reliability_matrices(seed):
    # Random groups of 2-4 annotators per item (even counts give majority ties,
    # i.e. missing majority labels), partially overlapping items.
    rng = np.random.default_rng(seed)
    quality = rng.random(50)
    groups = {}
    for name in ("Layperson", "Expert"):
        items = np.sort(rng.choice(50, size=40, replace=False))
        raters = pd.Series(rng.integers(2, 5, size=40), index=items)
        scores = pd.Series(rng.binomial(raters.to_numpy(), quality[items]), index=items)
        groups[name] = (scores, raters)
    result = metrics.between_group_agreement(
        scores={k: v[0] for k, v in groups.items()},
        raters={k: v[1] for k, v in groups.items()},
        resamples=100,
        seed=seed,
    )
    common = groups["Layperson"][0].index.intersection(groups["Expert"][0].index)
    majority_rows, score_rows = [], []
    for scores, raters in groups.values():
        s, r = scores[common].to_numpy(), raters[common].to_numpy()
        majority_rows.append(np.where(2 * s > r, 1.0, np.where(2 * s < r, 0.0, np.nan)))
        score_rows.append(s.astype(float))
    top = max(int(groups["Layperson"][1].max()), int(groups["Expert"][1].max()))
    assert result["n_items"] == len(common)
    assert result["krippendorff_alpha_majority"] == pytest.approx(
        reliability_alpha(majority_rows, level="nominal", domain=[0, 1])
    )
    assert result["krippendorff_alpha_scores"] == pytest.approx(
        reliability_alpha(score_rows, level="ordinal", domain=list(range(top + 1)))
    )
    for key in ("krippendorff_alpha_majority_ci", "krippendorff_alpha_scores_ci"):
        low, high = result[key]
        assert -1 <= low <= high <= 1
    assert_strict_json(result)


def test_between_group_agreement_edge_cases():
    # A group with one annotator: its majority label is its own answer (1/1 coherent,
    # 0/1 incoherent), its score 0 or 1 on the 0-3 domain.
    solo = pd.Series({"a": 1, "b": 0, "c": 0, "d": 0})
    result = metrics.between_group_agreement(
        scores={"Layperson": LAY_SCORES, "Expert": solo},
        raters={"Layperson": three_raters(LAY_SCORES), "Expert": pd.Series(1, index=solo.index)},
        resamples=0,
    )
    # Majority: lay C C I I vs solo C I I I — the same pairs as the hand example.
    assert result["krippendorff_alpha_majority"] == pytest.approx(8 / 15)
    assert result["n_items"] == 4
    # No items in common; identical all-coherent groups (no variation).
    disjoint = metrics.between_group_agreement(
        scores={"L": pd.Series({"a": 1}), "E": pd.Series({"b": 1})},
        raters={"L": pd.Series({"a": 3}), "E": pd.Series({"b": 3})},
    )
    assert disjoint == {
        "n_items": 0,
        "krippendorff_alpha_majority": None,
        "krippendorff_alpha_majority_ci": [None, None],
        "krippendorff_alpha_scores": None,
        "krippendorff_alpha_scores_ci": [None, None],
    }
    everyone = pd.Series(3, index=list("abc"))
    agree = metrics.between_group_agreement(
        scores={"L": everyone, "E": everyone}, raters={"L": everyone, "E": everyone}
    )
    assert agree["krippendorff_alpha_majority"] is None
    assert agree["krippendorff_alpha_scores"] is None
    # Every item tied in one group (2 of 4): no pairable majority labels.
    tied = metrics.between_group_agreement(
        scores={"L": pd.Series(2, index=list("abc")), "E": pd.Series([3, 0, 1], index=list("abc"))},
        raters={"L": pd.Series(4, index=list("abc")), "E": pd.Series(3, index=list("abc"))},
    )
    assert tied["krippendorff_alpha_majority"] is None
    assert tied["krippendorff_alpha_scores"] is not None
    for value in (result, disjoint, agree, tied):
        assert_strict_json(value)


# --------------------------------------------------------------------------- coherent rate test


def test_coherent_rate_test_hand_computed_example():
    # s1: 3 of 4 coherent, s2: 1 of 4. Table [[3, 1], [1, 3]], expected 2 per cell,
    # Yates: χ² = 4 · (|±1| − 0.5)²/2 = 0.5, p = P(χ²₁ > 0.5) = erfc(√0.25).
    frame = pd.DataFrame({"stage": ["s1"] * 4 + ["s2"] * 4, "coherent": [1, 1, 1, 0, 1, 0, 0, 0]})
    result = metrics.coherent_rate_test(judgements=frame, by="stage")
    assert result == {
        "coherent_rate": {"s1": 0.75, "s2": 0.25},
        "n_judgements": {"s1": 4, "s2": 4},
        "chi2_p": pytest.approx(math.erfc(0.5)),
    }


@pytest.mark.parametrize("seed", range(3))
def test_coherent_rate_test_equals_scipy_on_the_contingency_table(seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"source": rng.choice(["Human", "GPT-2", "GPT-3"], 300), "coherent": rng.random(300) < 0.6}
    )
    result = metrics.coherent_rate_test(judgements=frame, by="source")
    table = pd.crosstab(frame["source"], frame["coherent"])
    assert result["chi2_p"] == pytest.approx(stats.chi2_contingency(table.to_numpy()).pvalue)
    for source, row in table.iterrows():
        assert result["coherent_rate"][source] == pytest.approx(row[True] / row.sum())
        assert result["n_judgements"][source] == row.sum()


def test_coherent_rate_test_keeps_values_in_order_without_judgements():
    frame = pd.DataFrame({"stage": ["s1", "s1"], "coherent": [True, False]})
    result = metrics.coherent_rate_test(judgements=frame, by="stage", order=["s1", "s2"])
    assert result == {
        "coherent_rate": {"s1": 0.5, "s2": None},
        "n_judgements": {"s1": 2, "s2": 0},
        "chi2_p": None,
    }
    empty = metrics.coherent_rate_test(judgements=frame.iloc[:0], by="stage", order=["s1", "s2"])
    assert empty == {
        "coherent_rate": {"s1": None, "s2": None},
        "n_judgements": {"s1": 0, "s2": 0},
        "chi2_p": None,
    }


def test_coherent_rate_test_when_everything_is_coherent():
    # The incoherent column sums to zero: the chi-squared test is undefined.
    frame = pd.DataFrame({"stage": ["s1", "s2", "s2"], "coherent": [True, True, True]})
    result = metrics.coherent_rate_test(judgements=frame, by="stage")
    assert result["coherent_rate"] == {"s1": 1.0, "s2": 1.0}
    assert result["chi2_p"] is None


# --------------------------------------------------------------------------- recurrence


# Human reflections h1-h3 in two stages. Annotators a, b, c judge all three in s1;
# in s2, a meets h1 again, b meets h2 again, c meets h3 again; d and e are new.
#   s1: h1 a Y b Y c Y (score 3) | h2 a Y b N c Y (2) | h3 a Y b Y c N (2)
#   s2: h1 a N d N e N (0)       | h2 b N d N e N (0) | h3 c N d Y e N (1)
SHIFT = shift_rows(
    [
        ("s1", "h1", "a", "Y"),
        ("s1", "h1", "b", "Y"),
        ("s1", "h1", "c", "Y"),
        ("s1", "h2", "a", "Y"),
        ("s1", "h2", "b", "N"),
        ("s1", "h2", "c", "Y"),
        ("s1", "h3", "a", "Y"),
        ("s1", "h3", "b", "Y"),
        ("s1", "h3", "c", "N"),
        ("s2", "h1", "a", "N"),
        ("s2", "h1", "d", "N"),
        ("s2", "h1", "e", "N"),
        ("s2", "h2", "b", "N"),
        ("s2", "h2", "d", "N"),
        ("s2", "h2", "e", "N"),
        ("s2", "h3", "c", "N"),
        ("s2", "h3", "d", "Y"),
        ("s2", "h3", "e", "N"),
    ]
)


def test_recurrence_free_drops_both_judgements_of_a_recurring_pair():
    # (a, h1), (b, h2), (c, h3) were judged in both stages: their 6 rows go; 12 remain.
    # b's judgement of h1 stays: recurrence is per (annotator, reflection).
    kept = metrics.recurrence_free(judgements=SHIFT, rater="rater", item="item", stage="stage")
    assert len(kept) == 12
    pairs = set(zip(kept["rater"], kept["item"], strict=True))
    assert not pairs & {("a", "h1"), ("b", "h2"), ("c", "h3")}
    assert ("b", "h1") in pairs
    assert kept.index.isin(SHIFT.index).all()


def test_recurrence_free_keeps_a_pair_judged_twice_within_one_stage():
    frame = shift_rows([("s1", "h1", "a", "Y"), ("s1", "h1", "a", "N"), ("s2", "h2", "a", "Y")])
    kept = metrics.recurrence_free(judgements=frame, rater="rater", item="item", stage="stage")
    assert len(kept) == 3


def test_cross_stage_shift_hand_computed_example():
    # All judgements: s1 7 of 9 coherent, s2 1 of 9. Table [[7, 2], [1, 8]]:
    #   expected [[4, 5], [4, 5]], |O − E| = 3, Yates: χ² = 2 · 2.5²/4 + 2 · 2.5²/5 = 5.625,
    #   p = erfc(√(5.625/2)).
    # Recurrence-free: s1 6 of 6, s2 1 of 6. Table [[6, 0], [1, 5]]:
    #   expected [[3.5, 2.5], [3.5, 2.5]], |O − E| = 2.5, Yates: χ² = 2 · 2²/3.5 + 2 · 2²/2.5
    #   = 16/7 + 16/5 = 192/35, p = erfc(√(96/35)).
    # Wilcoxon: scores s1 3 2 2, s2 0 0 1 → differences 3, 2, 1, all positive:
    #   W− = 0, exact two-sided p = 2 · 1/2³ = 0.25.
    result = metrics.cross_stage_shift(judgements=SHIFT, stage_from="s1", stage_to="s2")
    assert result == {
        "from": "s1",
        "to": "s2",
        "all": {
            "coherent_rate": {"s1": pytest.approx(7 / 9), "s2": pytest.approx(1 / 9)},
            "n_judgements": {"s1": 9, "s2": 9},
            "chi2_p": pytest.approx(math.erfc(math.sqrt(5.625 / 2))),
        },
        "recurrence_free": {
            "coherent_rate": {"s1": 1.0, "s2": pytest.approx(1 / 6)},
            "n_judgements": {"s1": 6, "s2": 6},
            "chi2_p": pytest.approx(math.erfc(math.sqrt(96 / 35))),
        },
        "wilcoxon_p": pytest.approx(0.25),
        "n_items_paired": 3,
    }


@pytest.mark.parametrize("seed", range(3))
def test_cross_stage_shift_equals_scipy_on_tables_built_by_hand(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for stage, p in (("s1", 0.8), ("s2", 0.6)):
        for h in range(30):
            if stage == "s2" and h >= 25:
                continue  # h25-h29 only in s1: not paired
            for rater in rng.choice(list("abcdefgh"), size=3, replace=False):
                rows.append((stage, f"h{h}", str(rater), "Y" if rng.random() < p else "N"))
    rows += [("s3", "h0", "a", "Y")] * 3  # another stage: ignored
    frame = shift_rows(rows)
    result = metrics.cross_stage_shift(judgements=frame, stage_from="s1", stage_to="s2")
    two = frame[frame["stage"] != "s3"]

    def table(subset):
        counts = subset.groupby("stage")["coherent"].agg(["sum", "size"])
        return np.array([[c["sum"], c["size"] - c["sum"]] for _, c in counts.iterrows()])

    assert result["all"]["chi2_p"] == pytest.approx(stats.chi2_contingency(table(two)).pvalue)
    stages_per_pair = two.groupby(["rater", "item"])["stage"].transform("nunique")
    free = two[stages_per_pair == 1]
    assert result["recurrence_free"]["chi2_p"] == pytest.approx(
        stats.chi2_contingency(table(free)).pvalue
    )
    scores = two.groupby(["item", "stage"])["coherent"].sum().unstack().dropna()
    assert result["n_items_paired"] == 25
    assert result["wilcoxon_p"] == pytest.approx(stats.wilcoxon(scores["s1"], scores["s2"]).pvalue)


def test_cross_stage_shift_recurrence_only_counts_the_two_compared_stages():
    # a judged h1 in s1 and in s3, not in s2: not recurring between s1 and s2.
    frame = shift_rows([("s1", "h1", "a", "Y"), ("s3", "h1", "a", "N"), ("s2", "h1", "b", "N")])
    result = metrics.cross_stage_shift(judgements=frame, stage_from="s1", stage_to="s2")
    assert result["recurrence_free"]["n_judgements"] == {"s1": 1, "s2": 1}


def test_cross_stage_shift_edge_cases():
    # No judgements at all.
    empty = metrics.cross_stage_shift(judgements=SHIFT.iloc[:0], stage_from="s1", stage_to="s2")
    assert empty["all"] == {
        "coherent_rate": {"s1": None, "s2": None},
        "n_judgements": {"s1": 0, "s2": 0},
        "chi2_p": None,
    }
    assert empty["wilcoxon_p"] is None
    assert empty["n_items_paired"] == 0
    # Only the first stage has judgements.
    only_s1 = metrics.cross_stage_shift(
        judgements=SHIFT[SHIFT["stage"] == "s1"], stage_from="s1", stage_to="s2"
    )
    assert only_s1["all"]["coherent_rate"] == {"s1": pytest.approx(7 / 9), "s2": None}
    assert only_s1["wilcoxon_p"] is None
    assert only_s1["n_items_paired"] == 0
    # Same scores in both stages: no non-zero difference, Wilcoxon undefined.
    same = SHIFT[SHIFT["stage"] == "s1"]
    twice = pd.concat([same, same.assign(stage="s2")])
    result = metrics.cross_stage_shift(judgements=twice, stage_from="s1", stage_to="s2")
    assert result["wilcoxon_p"] is None
    assert result["n_items_paired"] == 3
    # Every judgement recurring: the recurrence-free view is empty.
    assert result["recurrence_free"]["n_judgements"] == {"s1": 0, "s2": 0}
    for value in (empty, only_s1, result):
        assert_strict_json(value)


# --------------------------------------------------------------------------- annotators


def test_annotator_consistency_hand_computed_example():
    # a: h1 recurring (Y then N) → not identical, 0/1; non-recurring s1: h2 Y, h3 Y → 1.0.
    # b: h2 recurring (N, N) → identical, 1/1; non-recurring s1: h1 Y, h3 Y → 1.0.
    # c: h3 recurring (N, N) → 1/1; non-recurring s1: h1 Y, h2 Y → 1.0.
    # d, e: nothing recurring (null); s2: d 1 of 3 (h3), e 0 of 3.
    result = metrics.annotator_consistency(judgements=SHIFT, stages=["s1", "s2"])
    assert result == {
        "a": {
            "recurring_identical_rate": 0.0,
            "n_recurring": 1,
            "nonrecurring_human_coherent_rate": {"s1": 1.0, "s2": None},
            "n_nonrecurring": {"s1": 2, "s2": 0},
        },
        "b": {
            "recurring_identical_rate": 1.0,
            "n_recurring": 1,
            "nonrecurring_human_coherent_rate": {"s1": 1.0, "s2": None},
            "n_nonrecurring": {"s1": 2, "s2": 0},
        },
        "c": {
            "recurring_identical_rate": 1.0,
            "n_recurring": 1,
            "nonrecurring_human_coherent_rate": {"s1": 1.0, "s2": None},
            "n_nonrecurring": {"s1": 2, "s2": 0},
        },
        "d": {
            "recurring_identical_rate": None,
            "n_recurring": 0,
            "nonrecurring_human_coherent_rate": {"s1": None, "s2": pytest.approx(1 / 3)},
            "n_nonrecurring": {"s1": 0, "s2": 3},
        },
        "e": {
            "recurring_identical_rate": None,
            "n_recurring": 0,
            "nonrecurring_human_coherent_rate": {"s1": None, "s2": 0.0},
            "n_nonrecurring": {"s1": 0, "s2": 3},
        },
    }
    assert_strict_json(result)


def test_annotator_consistency_rates_over_several_recurring_reflections():
    # a: h1 Y/Y (same), h2 N/N (same), h3 Y/N (changed) → 2/3; nothing non-recurring.
    frame = shift_rows(
        [
            ("s1", "h1", "a", "Y"),
            ("s2", "h1", "a", "Y"),
            ("s1", "h2", "a", "N"),
            ("s2", "h2", "a", "N"),
            ("s1", "h3", "a", "Y"),
            ("s2", "h3", "a", "N"),
        ]
    )
    result = metrics.annotator_consistency(judgements=frame, stages=["s1", "s2"])
    assert result == {
        "a": {
            "recurring_identical_rate": pytest.approx(2 / 3),
            "n_recurring": 3,
            "nonrecurring_human_coherent_rate": {"s1": None, "s2": None},
            "n_nonrecurring": {"s1": 0, "s2": 0},
        }
    }
    assert_strict_json(result)


def test_annotator_consistency_pooled_hand_computed_example():
    # The hand example above pooled: 3 recurring pairs (a changed, b and c the same)
    # → 2/3; s1's once-only judgements: a, b, c two Yes each → 6/6; s2: d 1 + e 0 of 6.
    pooled = metrics.annotator_consistency_pooled(judgements=SHIFT, stages=["s1", "s2"])
    assert pooled == {
        "recurring_identical_rate": pytest.approx(2 / 3),
        "n_recurring": 3,
        "nonrecurring_human_coherent_rate": {"s1": 1.0, "s2": pytest.approx(1 / 6)},
        "n_nonrecurring": {"s1": 6, "s2": 6},
    }
    assert_strict_json(pooled)
    # A pooled rate weighs annotators by their pairs, unlike the mean of their rates:
    # a with three recurring pairs (2 the same), b with one (changed) → 2/4, not 1/3.
    frame = shift_rows(
        [
            *(("s1", h, "a", "Y") for h in ("h1", "h2", "h3")),
            ("s2", "h1", "a", "Y"),
            ("s2", "h2", "a", "Y"),
            ("s2", "h3", "a", "N"),
            ("s1", "h1", "b", "Y"),
            ("s2", "h1", "b", "N"),
        ]
    )
    pooled = metrics.annotator_consistency_pooled(judgements=frame, stages=["s1", "s2"])
    assert (pooled["recurring_identical_rate"], pooled["n_recurring"]) == (0.5, 4)
    assert pooled["nonrecurring_human_coherent_rate"] == {"s1": None, "s2": None}
    assert metrics.annotator_consistency_pooled(judgements=SHIFT.iloc[:0], stages=["s1"]) is None


@pytest.mark.parametrize("seed", range(5))
def test_annotator_consistency_matches_a_loop_on_random_data(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for stage in ("s1", "s2", "s3"):
        for h in range(12):
            for rater in rng.choice(list("abcdef"), size=3, replace=False):
                rows.append((stage, f"h{h}", str(rater), "Y" if rng.random() < 0.6 else "N"))
    frame = shift_rows(rows)
    result = metrics.annotator_consistency(judgements=frame, stages=["s1", "s2", "s3"])
    pooled = metrics.annotator_consistency_pooled(judgements=frame, stages=["s1", "s2", "s3"])
    all_same, all_once = [], {stage: [] for stage in ("s1", "s2", "s3")}
    for rater, own in frame.groupby("rater"):
        stages_of = own.groupby("item")["stage"].nunique()
        recurring = stages_of[stages_of > 1].index
        same = [own.loc[own["item"] == h, "coherent"].nunique() == 1 for h in recurring]
        all_same += same
        for stage in all_once:
            once_here = own[~own["item"].isin(recurring) & (own["stage"] == stage)]
            all_once[stage] += list(once_here["coherent"])
        expected_rate = sum(same) / len(same) if same else None
        assert result[rater]["n_recurring"] == len(recurring)
        assert result[rater]["recurring_identical_rate"] == pytest.approx(expected_rate)
        once = own[~own["item"].isin(recurring)]
        for stage in ("s1", "s2", "s3"):
            flags = once.loc[once["stage"] == stage, "coherent"]
            assert result[rater]["n_nonrecurring"][stage] == len(flags)
            expected = flags.mean() if len(flags) else None
            assert result[rater]["nonrecurring_human_coherent_rate"][stage] == pytest.approx(
                expected
            )
    assert_strict_json(result)
    # The pooled row: every rater's pairs and once-only judgements together.
    assert pooled["n_recurring"] == len(all_same)
    assert pooled["recurring_identical_rate"] == pytest.approx(sum(all_same) / len(all_same))
    for stage, flags in all_once.items():
        assert pooled["n_nonrecurring"][stage] == len(flags)
        assert pooled["nonrecurring_human_coherent_rate"][stage] == pytest.approx(
            sum(flags) / len(flags) if flags else None
        )


def test_annotator_consistency_of_no_judgements_is_empty():
    assert metrics.annotator_consistency(judgements=SHIFT.iloc[:0], stages=["s1", "s2"]) == {}


def test_annotator_consistency_with_none_recurring_and_a_stage_not_listed():
    # Nobody recurs: every rate is null. A stage absent from the data still appears.
    frame = shift_rows([("s1", "h1", "a", "Y"), ("s1", "h2", "a", "N"), ("s1", "h1", "b", "N")])
    result = metrics.annotator_consistency(judgements=frame, stages=["s1", "s2"])
    assert result["a"]["recurring_identical_rate"] is None
    assert result["a"]["nonrecurring_human_coherent_rate"] == {"s1": 0.5, "s2": None}
    assert result["b"]["nonrecurring_human_coherent_rate"] == {"s1": 0.0, "s2": None}
    assert_strict_json(result)


# --------------------------------------------------------------------------- never NaN


def degenerate_study(n_items: int, n_raters: int, p_coherent: float, seed: int) -> pd.DataFrame:
    """A tiny two-stage study with random gaps (a rating is missing with probability
    0.2): the corners where statistics are undefined."""
    rng = np.random.default_rng(seed)
    records = []
    for stage in ("s1", "s2"):
        for item in range(n_items):
            for rater in range(n_raters):
                if rng.random() < 0.2:
                    continue
                coherent = bool(rng.random() < p_coherent)
                chosen = [] if coherent else [c for c in CATS if rng.random() < 0.4]
                named = str(rng.choice(chosen)) if len(chosen) > 1 and rng.random() < 0.5 else None
                empathy = int(rng.integers(1, 6)) if coherent and rng.random() < 0.9 else None
                records.append(
                    {
                        "item": item,
                        "rater": f"r{rater}",
                        "stage": stage,
                        "coherent": coherent,
                        "mee": named,
                        "empathy": empathy,
                        **{c: c in chosen for c in CATS},
                    }
                )
    columns = ["item", "rater", "stage", "coherent", "mee", "empathy", *CATS]
    return pd.DataFrame(records, columns=columns)


DEGENERATE = [(0, 2, 0.5), *itertools.product((1, 3), (1, 2, 3), (0.0, 0.5, 1.0))]


@pytest.mark.parametrize(("n_items", "n_raters", "p_coherent"), DEGENERATE)
def test_no_protocol_measure_returns_nan_on_degenerate_random_studies(
    n_items, n_raters, p_coherent
):
    # No items; one or three items; one to three raters; nothing, half or everything
    # judged coherent.
    study = degenerate_study(n_items, n_raters, p_coherent, seed=n_items * 10 + n_raters)
    first, second = study[study["stage"] == "s1"], study[study["stage"] == "s2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (or any other) leaks out
        results = [
            metrics.agreement_summary(
                ratings=first.rename(columns={"coherent": "label"}),
                categories=[False, True],
                resamples=20,
            ),
            metrics.mee_agreement(judgements=first, categories=CATS, resamples=20),
            metrics.mee_agreement(
                judgements=first, categories=CATS, consensus=True, merge=MERGE, resamples=20
            ),
            metrics.empathy_agreement(judgements=first, resamples=20),
            metrics.between_group_agreement(
                scores={
                    "s1": first.groupby("item")["coherent"].sum(),
                    "s2": second.groupby("item")["coherent"].sum(),
                },
                raters={
                    "s1": first.groupby("item").size(),
                    "s2": second.groupby("item").size(),
                },
                resamples=20,
            ),
            metrics.coherent_rate_test(judgements=study, by="stage", order=["s1", "s2"]),
            metrics.cross_stage_shift(judgements=study, stage_from="s1", stage_to="s2"),
            metrics.annotator_consistency(judgements=study, stages=["s1", "s2"]),
        ]
    assert_strict_json(results)


def test_recurring_flag_drops_reflections_met_in_work_not_counted():
    # A judged R in stage S1 in a batch later rejected (not in the data), then R in
    # S2 (flagged recurring when handed out). B judged R only in S2, unflagged.
    frame = pd.DataFrame(
        {
            "rater": ["A", "B", "A"],
            "item": ["R", "R", "Q"],
            "stage": ["S2", "S2", "S1"],
            "coherent": [True, False, True],
            "recurring": [True, False, False],
        }
    )
    kept = metrics.recurrence_free(
        judgements=frame, rater="rater", item="item", stage="stage", recurring="recurring"
    )
    assert kept[["rater", "item"]].values.tolist() == [["B", "R"], ["A", "Q"]]
    # Without the flag column the row would count as first seen.
    assert len(metrics.recurrence_free(judgements=frame, rater="rater", item="item",
                                       stage="stage")) == 3  # fmt: skip
    result = metrics.annotator_consistency(
        judgements=frame, stages=["S1", "S2"], recurring="recurring"
    )
    # A's only non-recurring human judgement is Q in S1; R in S2 is not "S2 only".
    assert result["A"]["nonrecurring_human_coherent_rate"] == {"S1": 1.0, "S2": None}
    assert result["A"]["recurring_identical_rate"] is None  # nothing to compare
    assert result["B"]["nonrecurring_human_coherent_rate"] == {"S1": None, "S2": 0.0}
