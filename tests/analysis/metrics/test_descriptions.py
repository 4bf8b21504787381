"""Descriptions and their coding (analysis.metrics.protocol.descriptions): worked by
hand, and Cohen's kappa cross-checked against its formula on the 2 × 2 table."""

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.protocol.descriptions import (
    PRIMARY,
    SECOND,
    binary_kappa,
    code_matrix,
    description_summary,
    no_codings,
)


def kappa_by_hand(first, second) -> float:
    """Cohen's kappa from the 2 × 2 table: observed agreement p_o against the chance
    agreement p_e of two coders using the code at their own rates."""
    first, second = np.asarray(first, bool), np.asarray(second, bool)
    n = len(first)
    p_o = np.sum(first == second) / n
    p_first, p_second = first.mean(), second.mean()
    p_e = p_first * p_second + (1 - p_first) * (1 - p_second)
    return (p_o - p_e) / (1 - p_e)


def codings(rows) -> pd.DataFrame:
    """Long-form codings from (judgement, coder, codes) rows; no codes = uninformative."""
    records = []
    for judgement, coder, codes in rows:
        records += [(judgement, coder, False, code) for code in codes] or [
            (judgement, coder, True, None)
        ]
    return pd.DataFrame(records, columns=["judgement_id", "coder", "uninformative", "code"])


# --------------------------------------------------------------------------- kappa


def test_kappa_of_a_hand_worked_table():
    # 10 descriptions: both used the code on 3, only the first on 2, only the second on
    # 1, neither on 4. p_o = 7/10; p_e = 0.5 · 0.4 + 0.5 · 0.6 = 0.5; κ = 0.2 / 0.5.
    first = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    second = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert binary_kappa(np.array(first), np.array(second)) == pytest.approx(0.4)
    assert kappa_by_hand(first, second) == pytest.approx(0.4)


def test_kappa_matches_the_formula_on_random_codings():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        first = rng.random(n) < rng.random()
        second = np.where(rng.random(n) < 0.7, first, rng.random(n) < 0.5)
        if len(set(first)) < 2 or len(set(second)) < 2:
            assert binary_kappa(first, second) is None
            continue
        assert binary_kappa(first, second) == pytest.approx(kappa_by_hand(first, second))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([], []),  # nothing both coded
        ([1, 1, 1], [1, 0, 1]),  # the first coder always used the code
        ([1, 0, 1], [0, 0, 0]),  # the second never did
        ([0, 0], [0, 0]),  # neither did: perfect agreement, but nothing to measure
    ],
)
def test_kappa_is_undefined_when_a_coder_never_or_always_used_the_code(first, second):
    assert binary_kappa(np.array(first, bool), np.array(second, bool)) is None


# --------------------------------------------------------------------------- matrix


def test_code_matrix_has_a_row_per_coded_description_and_a_column_per_code():
    rows = codings(
        [(7, PRIMARY, ["b"]), (3, PRIMARY, []), (7, SECOND, ["a"]), (5, PRIMARY, ["a", "zz"])]
    )
    matrix = code_matrix(rows, coder=PRIMARY, codes=["a", "b"])
    assert matrix.index.tolist() == [3, 5, 7]
    assert matrix.columns.tolist() == ["a", "b", "uninformative"]
    assert matrix.to_numpy().tolist() == [
        [False, False, True],
        [True, False, False],  # "zz" is no code of the codebook: ignored
        [False, True, False],
    ]
    assert code_matrix(no_codings(), coder=PRIMARY, codes=["a"]).empty


# --------------------------------------------------------------------------- summary

# One group × stage: 5 No answers, 4 with a description (judgements 1, 2, 3, 6).
CELL = pd.DataFrame(
    [
        (1, False, True, "GPT"),
        (2, False, True, "GPT"),
        (3, False, True, "Human"),
        (4, False, False, "GPT"),
        (5, True, False, "GPT"),
        (6, False, True, "Human"),
    ],
    columns=["judgement_id", "coherent", "described", "source"],
)
CODINGS = codings(
    [
        (1, PRIMARY, ["a", "b"]),
        (2, PRIMARY, ["a"]),
        (3, PRIMARY, []),  # uninformative
        (6, PRIMARY, ["b"]),
        (9, PRIMARY, ["a"]),  # another cell's description: not counted here
        (1, SECOND, ["a"]),
        (2, SECOND, ["a", "b"]),
        (6, SECOND, ["b"]),
    ]
)


def test_summary_of_a_hand_worked_cell():
    summary = description_summary(judgements=CELL, codings=CODINGS, codes=["a", "b"])
    assert summary["n"] == 4
    assert summary["n_incoherent"] == 5
    assert summary["coverage"] == pytest.approx(4 / 5)
    assert summary["n_coded"] == 4
    assert summary["n_uninformative"] == 1
    # Informative codings 1, 2, 6: a on 1 and 2, b on 1 and 6 (shares sum above 1).
    assert summary["codes"] == pytest.approx({"a": 2 / 3, "b": 2 / 3})
    assert summary["codes_by_source"] == {
        "GPT": pytest.approx({"a": 1.0, "b": 0.5}),
        "Human": pytest.approx({"a": 0.0, "b": 1.0}),
    }
    # Both coded 1, 2, 6. a: (1, 1, 0) vs (1, 1, 0) → κ = 1. b: (1, 0, 1) vs (0, 1, 1):
    # p_o = 1/3, p_e = 2/3 · 2/3 + 1/3 · 1/3 = 5/9, κ = (1/3 − 5/9) / (4/9) = −0.5.
    assert summary["n_both_coded"] == 3
    assert summary["coder_agreement"]["a"] == pytest.approx(1.0)
    assert summary["coder_agreement"]["b"] == pytest.approx(-0.5)
    assert kappa_by_hand([1, 0, 1], [0, 1, 1]) == pytest.approx(-0.5)


def test_summary_without_a_second_coder_or_any_coding():
    alone = CODINGS.loc[CODINGS["coder"] == PRIMARY]
    summary = description_summary(judgements=CELL, codings=alone, codes=["a", "b"])
    assert summary["codes"] == pytest.approx({"a": 2 / 3, "b": 2 / 3})
    assert summary["coder_agreement"] == {"a": None, "b": None}
    assert summary["n_both_coded"] == 0

    uncoded = description_summary(judgements=CELL, codings=no_codings(), codes=["a", "b"])
    assert uncoded["n"] == 4 and uncoded["n_coded"] == 0 and uncoded["n_uninformative"] == 0
    assert uncoded["codes"] == {"a": None, "b": None}
    assert uncoded["codes_by_source"] == {
        "GPT": {"a": None, "b": None},
        "Human": {"a": None, "b": None},
    }
    assert uncoded["coder_agreement"] == {"a": None, "b": None}


def test_summary_of_a_cell_without_a_no_or_a_description():
    coherent = CELL.assign(coherent=True, described=False)
    summary = description_summary(judgements=coherent, codings=CODINGS, codes=["a"])
    assert (summary["n"], summary["n_incoherent"], summary["coverage"]) == (0, 0, None)
    assert summary["n_coded"] == 0 and summary["codes"] == {"a": None}
    # A frame without the ``described`` column (no description anywhere) reads the same.
    bare = description_summary(judgements=CELL.drop(columns="described"), codings=CODINGS, codes=[])
    assert bare["n"] == 0 and bare["coverage"] == 0.0 and bare["codes"] == {}


def test_only_uninformative_codings_leave_the_shares_undefined():
    rows = codings([(1, PRIMARY, []), (2, PRIMARY, [])])
    summary = description_summary(judgements=CELL, codings=rows, codes=["a"])
    assert summary["n_coded"] == 2 and summary["n_uninformative"] == 2
    assert summary["codes"] == {"a": None}
    assert summary["codes_by_source"]["GPT"] == {"a": None}
