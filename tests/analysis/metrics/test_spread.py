"""Labels spread to cluster members, pinned by hand."""

import json

import pandas as pd
import pytest

from analysis.metrics import label_spread


def members():
    # Cluster of item 101: member 1 (its representative), 2 and 3 (a removed duplicate);
    # cluster of item 102: member 4 (its representative) and 5.
    decoding = {1: "greedy", 2: "nucleus", 3: "nucleus", 4: "nucleus", 5: "greedy"}
    return pd.DataFrame(
        {
            "stage": "S",
            "item": [101, 101, 101, 102, 102],
            "member": [1, 2, 3, 4, 5],
            "representative": [True, False, False, True, False],
            "generation": [json.dumps({"decoding": decoding[m]}) for m in range(1, 6)],
        }
    )


def judgements():
    votes = {
        # group G: 101 coherent by 2 of 3; 102 tied 1 of 2 (no majority)
        ("G", 101): [1, 1, 0],
        ("G", 102): [1, 0],
        # group H: 101 incoherent by 2 of 2; 102 coherent by 3 of 3
        ("H", 101): [0, 0],
        ("H", 102): [1, 1, 1],
    }
    return pd.DataFrame(
        [
            {"stage": "S", "group": group, "item": item, "coherent": bool(v)}
            for (group, item), values in votes.items()
            for v in values
        ]
    )


def test_the_spread_by_hand():
    rows = {
        (r["group"], r["key"], r["value"]): r
        for r in label_spread(members=members(), judgements=judgements())
    }

    def check(key, n, labelled, rate, reps, reps_labelled, rep_rate):
        row = rows[key]
        assert (row["n_members"], row["n_members_labelled"]) == (n, labelled)
        assert (row["n_representatives"], row["n_representatives_labelled"]) == (
            reps,
            reps_labelled,
        )
        assert row["spread_coherent_rate"] == (pytest.approx(rate) if rate is not None else None)
        assert row["representative_coherent_rate"] == (
            pytest.approx(rep_rate) if rep_rate is not None else None
        )

    # G: only cluster 101 is labelled (coherent); 102 is a tie.
    check(("G", "all", "all"), 5, 3, 1.0, 2, 1, 1.0)
    check(("G", "decoding", "greedy"), 2, 1, 1.0, 1, 1, 1.0)
    check(("G", "decoding", "nucleus"), 3, 2, 1.0, 1, 0, None)
    # H: 101 incoherent (members 1, 2, 3), 102 coherent (4, 5).
    check(("H", "all", "all"), 5, 5, 2 / 5, 2, 2, 1 / 2)
    check(("H", "decoding", "greedy"), 2, 2, 1 / 2, 1, 1, 0.0)
    check(("H", "decoding", "nucleus"), 3, 3, 1 / 3, 1, 1, 1.0)
    assert len(rows) == 6
    # "all" first within each group.
    order = [
        (r["group"], r["key"]) for r in label_spread(members=members(), judgements=judgements())
    ]
    assert order[0] == ("G", "all") and order[3] == ("H", "all")


def test_no_members_or_no_judgements_give_no_rows():
    assert label_spread(members=members().iloc[:0], judgements=judgements()) == []
    assert label_spread(members=members(), judgements=judgements().iloc[:0]) == []


def test_a_member_of_two_stages_counts_once_in_each_and_unjudged_items_stay_counted():
    both = pd.concat([members(), members().assign(stage="T")], ignore_index=True)
    # In stage T the group G judged item 101 only: 102's members are counted, unlabelled.
    judged = pd.concat(
        [judgements(), judgements().query("group == 'G' and item == 101").assign(stage="T")],
        ignore_index=True,
    )
    rows = {
        (r["stage"], r["group"], r["key"], r["value"]): r
        for r in label_spread(members=both, judgements=judged)
    }
    assert rows[("S", "G", "all", "all")]["n_members"] == 5
    t = rows[("T", "G", "all", "all")]
    assert (t["n_members"], t["n_members_labelled"], t["n_representatives"]) == (5, 3, 2)
    assert ("T", "H", "all", "all") not in rows  # H judged nothing in T


def test_a_zero_vector_is_dissimilar_to_every_other():
    from analysis.metrics import mean_cosine

    result = mean_cosine([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]], ["x", "x", "x"])
    # Pairs: (a, c) similar twice = 2; the four pairs with the zero vector 0.
    assert result["mean_cosine"] == pytest.approx(2 / 6)
