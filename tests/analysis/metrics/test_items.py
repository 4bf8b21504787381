"""The item-level table (analysis.metrics.protocol.items): a hand-worked example and a
plain-Python recomputation on random judgements. No database."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.metrics.protocol.items import ITEM_COLUMNS

CATEGORIES = ["contra", "offtopic", "repeat"]


def judgement(
    stage, item, dialogue, source, group, rater, *, coherent, empathy=None, sel=(), mee=None
):
    position = {"S1": 1, "S2": 2}[stage]
    row = {
        "stage": stage,
        "stage_position": position,
        "dialogue_id": dialogue,
        "source": source,
        "item": item,
        "group": group,
        "rater": rater,
        "coherent": coherent,
        "empathy": empathy,
        "mee": mee,
    }
    row.update({slug: slug in sel for slug in CATEGORIES})
    return row


def hand_worked() -> pd.DataFrame:
    rows = [
        # item 10, lay: 1 of 3 coherent → incoherent; both incoherent raters' MEE is
        # offtopic (one selected only it, one named it) → offtopic.
        judgement("S1", 10, "d2", "GPT-2", "lay", "l1", coherent=True, empathy=4),
        judgement("S1", 10, "d2", "GPT-2", "lay", "l2", coherent=False, sel=["offtopic"]),
        judgement(
            "S1",
            10,
            "d2",
            "GPT-2",
            "lay",
            "l3",
            coherent=False,
            sel=["offtopic", "contra"],
            mee="offtopic",
        ),
        # item 10, expert: 1 of 2 → tie → no majority, no MEE.
        judgement("S1", 10, "d2", "GPT-2", "expert", "e1", coherent=True, empathy=5),
        judgement("S1", 10, "d2", "GPT-2", "expert", "e2", coherent=False, sel=["repeat"]),
        # item 11 (the human reflection), lay: 0 of 3 → incoherent; MEEs contra,
        # offtopic and none (two selected, none named): no error has 2 of 3 → no_majority.
        judgement("S1", 11, "d1", "Human", "lay", "l1", coherent=False, sel=["contra"]),
        judgement("S1", 11, "d1", "Human", "lay", "l2", coherent=False, sel=["offtopic"]),
        judgement("S1", 11, "d1", "Human", "lay", "l3", coherent=False, sel=["contra", "offtopic"]),
        # item 12, lay: a single rater → no majority whatever the answer.
        judgement("S1", 12, "d1", "GPT-3", "lay", "l1", coherent=True, empathy=3),
        # item 13, lay: 1 of 3 → incoherent; MEE repeat twice → repeat.
        judgement("S1", 13, "d1", "GPT-3", "lay", "l1", coherent=False, sel=["repeat"]),
        judgement("S1", 13, "d1", "GPT-3", "lay", "l2", coherent=False, sel=["repeat"]),
        judgement("S1", 13, "d1", "GPT-3", "lay", "l3", coherent=True, empathy=1),
        # item 14, lay: 0 of 2, nobody selected a category → incoherent, no_majority.
        judgement("S1", 14, "d1", "BART", "lay", "l1", coherent=False),
        judgement("S1", 14, "d1", "BART", "lay", "l2", coherent=False),
        # item 11 again in stage S2, lay: 3 of 4 → coherent; empathy (2 + 3 + 4) / 3.
        judgement("S2", 11, "d1", "Human", "lay", "l1", coherent=True, empathy=2),
        judgement("S2", 11, "d1", "Human", "lay", "l2", coherent=True, empathy=3),
        judgement("S2", 11, "d1", "Human", "lay", "l3", coherent=True, empathy=4),
        judgement("S2", 11, "d1", "Human", "lay", "l4", coherent=False, sel=["repeat"]),
    ]
    return pd.DataFrame(rows)


def test_item_table_hand_worked():
    table = metrics.item_table(judgements=hand_worked(), categories=CATEGORIES)
    assert list(table.columns) == ITEM_COLUMNS
    rows = [
        tuple(None if isinstance(v, float) and np.isnan(v) else v for v in row)
        for row in table[
            [
                "stage",
                "item",
                "group",
                "n_raters",
                "coherence_score",
                "majority_label",
                "majority_mee",
                "empathy_mean",
            ]
        ].itertuples(index=False)
    ]
    # Sorted by stage, dialogue id, source, item, group.
    assert rows == [
        ("S1", 14, "lay", 2, 0, "incoherent", "no_majority", None),
        ("S1", 12, "lay", 1, 1, "no majority", None, 3.0),
        ("S1", 13, "lay", 3, 1, "incoherent", "repeat", 1.0),
        ("S1", 11, "lay", 3, 0, "incoherent", "no_majority", None),
        ("S1", 10, "expert", 2, 1, "no majority", None, 5.0),
        ("S1", 10, "lay", 3, 1, "incoherent", "offtopic", 4.0),
        ("S2", 11, "lay", 4, 3, "coherent", None, 3.0),
    ]
    assert table["dialogue_id"].tolist() == ["d1", "d1", "d1", "d1", "d2", "d2", "d1"]
    assert table["source"].tolist()[:4] == ["BART", "GPT-3", "GPT-3", "Human"]
    assert table["stage_position"].tolist() == [1, 1, 1, 1, 1, 1, 2]


def test_a_stage_offering_no_categories_has_no_majority_mee():
    """A free-text stage asks no categories: its incoherent-majority items have no
    majority MEE at all (empty), not "no_majority"; a stage that offers categories
    keeps its MEEs."""
    frame = hand_worked()
    # S2's item 11 becomes an incoherent majority (1 of 4 coherent), without categories.
    frame.loc[frame["stage"] == "S2", "coherent"] = [True, False, False, False]
    frame.loc[frame["stage"] == "S2", CATEGORIES] = False
    plain = metrics.item_table(judgements=frame, categories=CATEGORIES)
    assert plain.loc[plain["stage"] == "S2", "majority_mee"].tolist() == ["no_majority"]
    table = metrics.item_table(
        judgements=frame, categories=CATEGORIES, offered={"S1": CATEGORIES, "S2": []}
    )
    assert table.loc[table["stage"] == "S2", "majority_mee"].isna().all()
    assert table.loc[table["stage"] == "S2", "majority_label"].tolist() == ["incoherent"]
    s1 = table["stage"] == "S1"
    assert table.loc[s1, "majority_mee"].tolist() == plain.loc[s1, "majority_mee"].tolist()


def test_majority_label_rule():
    votes = np.array([0, 1, 2, 3, 1, 2, 0, 1])
    raters = np.array([1, 1, 4, 4, 2, 3, 3, 3])
    assert metrics.majority_label(votes=votes, raters=raters).tolist() == [
        "no majority",  # one rater
        "no majority",
        "no majority",  # 2 of 4: a tie
        "coherent",
        "no majority",  # 1 of 2
        "coherent",
        "incoherent",
        "incoherent",
    ]
    assert metrics.majority_label(votes=[1, 0], raters=[1, 1], min_raters=1).tolist() == [
        "coherent",
        "incoherent",
    ]
    with pytest.raises(ValueError, match="same length"):
        metrics.majority_label(votes=[1], raters=[1, 2])


def test_item_table_empty():
    table = metrics.item_table(judgements=hand_worked().iloc[:0], categories=CATEGORIES)
    assert table.empty
    assert list(table.columns) == ITEM_COLUMNS


def random_judgements(seed: int, n_items: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        stage = "S1" if item % 3 else "S2"
        for group in ("lay", "expert"):
            for r in range(rng.integers(0, 5)):
                coherent = bool(rng.random() < 0.5)
                sel = [] if coherent else [c for c in CATEGORIES if rng.random() < 0.4]
                mee = sel[rng.integers(len(sel))] if len(sel) > 1 and rng.random() < 0.6 else None
                rows.append(
                    judgement(
                        stage,
                        item,
                        f"d{item % 7}",
                        f"src{item % 4}",
                        group,
                        f"{group}{r}",
                        coherent=coherent,
                        empathy=int(rng.integers(1, 6)) if coherent else None,
                        sel=sel,
                        mee=mee,
                    )
                )
    order = rng.permutation(len(rows))
    return pd.DataFrame(rows).iloc[order].reset_index(drop=True)


def plain_python_items(frame: pd.DataFrame) -> dict:
    """The same table written with loops and the rule spelt out."""
    per_item: dict = {}
    for row in frame.to_dict("records"):
        per_item.setdefault((row["stage"], row["item"], row["group"]), []).append(row)
    expected = {}
    for key, rows in per_item.items():
        n = len(rows)
        score = sum(r["coherent"] for r in rows)
        if n >= 2 and score > n / 2:
            label = "coherent"
        elif n >= 2 and n - score > n / 2:
            label = "incoherent"
        else:
            label = "no majority"
        mee = None
        if label == "incoherent":
            incoherent = [r for r in rows if not r["coherent"]]
            named = Counter()
            for r in incoherent:
                selected = [c for c in CATEGORIES if r[c]]
                own = (
                    r["mee"]
                    if isinstance(r["mee"], str)
                    else (selected[0] if len(selected) == 1 else None)
                )
                if own is not None:
                    named[own] += 1
            winners = [c for c, k in named.items() if k > len(incoherent) / 2]
            mee = winners[0] if winners else "no_majority"
        ratings = [r["empathy"] for r in rows if not pd.isna(r["empathy"])]
        empathy = sum(ratings) / len(ratings) if ratings else None
        expected[key] = (n, score, label, mee, empathy)
    return expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_item_table_matches_plain_python(seed):
    frame = random_judgements(seed)
    table = metrics.item_table(judgements=frame, categories=CATEGORIES)
    expected = plain_python_items(frame)
    got = {
        (row.stage, row.item, row.group): (
            row.n_raters,
            row.coherence_score,
            row.majority_label,
            row.majority_mee if isinstance(row.majority_mee, str) else None,
            None if np.isnan(row.empathy_mean) else pytest.approx(row.empathy_mean),
        )
        for row in table.itertuples(index=False)
    }
    assert got == expected
    assert set(table["majority_mee"].dropna()) <= {*CATEGORIES, "no_majority"}
    keys = list(
        zip(
            table["stage_position"],
            table["dialogue_id"],
            table["source"],
            table["item"],
            table["group"],
            strict=True,
        )
    )
    assert keys == sorted(keys)
