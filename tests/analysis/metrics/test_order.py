"""Order effects on hand-made batches, cross-checked with scipy's chi-squared test
and plain counting."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import metrics


def positions(orders: dict[int, list[tuple[int, str]]]) -> pd.DataFrame:
    """assignment → its order as (reflection id, kind)."""
    return pd.DataFrame(
        [
            (assignment, reflection, position, kind)
            for assignment, order in orders.items()
            for position, (reflection, kind) in enumerate(order, start=1)
        ],
        columns=["assignment_id", "reflection_id", "position", "kind"],
    )


def judged(rows) -> pd.DataFrame:
    """(assignment, item, kind, coherent), group Lay, stage S."""
    return pd.DataFrame(rows, columns=["assignment_id", "item", "kind", "coherent"]).assign(
        group="Lay", stage="S"
    )


# Two batches of one context: human 1, synthetic 2 and 3, attention check 9.
ORDERS = {
    10: [(1, "human"), (2, "synthetic"), (9, "attention_check"), (3, "synthetic")],
    11: [(9, "attention_check"), (3, "synthetic"), (1, "human"), (2, "synthetic")],
}
ANSWERS = [
    (10, 1, "human", True),
    (10, 2, "synthetic", False),
    (10, 3, "synthetic", True),
    (11, 1, "human", False),
    (11, 2, "synthetic", False),
    (11, 3, "synthetic", True),
]


def test_positions_count_the_attention_check_and_find_the_first_synthetic():
    frame = metrics.with_positions(judged(ANSWERS), positions(ORDERS))
    assert frame["position"].tolist() == [1, 2, 4, 3, 4, 2]
    # Batch 10's first synthetic is at 2; batch 11's at 2 too.
    assert frame["first_synthetic"].tolist() == [2] * 6
    without = metrics.with_positions(judged(ANSWERS), None)
    assert without["position"].isna().all()


def test_order_effects_hand_worked():
    frame = metrics.with_positions(judged(ANSWERS), positions(ORDERS))
    (entry,) = metrics.order_effects(judgements=frame, stage_order=["S"], group_order=["Lay"])[
        "Lay"
    ].values()
    # Position 1: human (yes); 2: 2 (no), 3 (yes); 3: human (no); 4: 3 (yes), 2 (no).
    assert entry["positions"] == [
        {"position": 1, "n_judgements": 1, "coherent_rate": 1.0},
        {"position": 2, "n_judgements": 2, "coherent_rate": 0.5},
        {"position": 3, "n_judgements": 1, "coherent_rate": 0.0},
        {"position": 4, "n_judgements": 2, "coherent_rate": 0.5},
    ]
    expected = stats.chi2_contingency([[1, 0], [1, 1], [0, 1], [1, 1]]).pvalue
    assert entry["chi2_p"] == pytest.approx(expected)
    # The human reflection: first in batch 10 (yes), after a synthetic in batch 11 (no).
    assert entry["human"]["before"] == {"n_judgements": 1, "coherent_rate": 1.0}
    assert entry["human"]["after"] == {"n_judgements": 1, "coherent_rate": 0.0}
    assert entry["human"]["chi2_p"] == pytest.approx(
        stats.chi2_contingency([[1, 0], [0, 1]]).pvalue
    )


@pytest.mark.parametrize("seed", range(3))
def test_order_effects_match_counting_on_random_batches(seed):
    rng = np.random.default_rng(seed)
    orders, answers = {}, []
    for assignment in range(40):
        items = [(1, "human"), *((r, "synthetic") for r in range(2, 6)), (9, "attention_check")]
        order = [items[i] for i in rng.permutation(len(items))]
        orders[assignment] = order
        answers += [
            (assignment, r, kind, bool(rng.random() < 0.6))
            for r, kind in order
            if kind != "attention_check"
        ]
    frame = metrics.with_positions(judged(answers), positions(orders))
    entry = metrics.order_effects(judgements=frame, stage_order=["S"], group_order=["Lay"])["Lay"][
        "S"
    ]
    table = {}
    before, after = [], []
    for assignment, reflection, kind, coherent in answers:
        order = [r for r, _ in orders[assignment]]
        position = order.index(reflection) + 1
        table.setdefault(position, []).append(coherent)
        if kind == "human":
            first = min(i + 1 for i, (r, k) in enumerate(orders[assignment]) if k == "synthetic")
            (before if position < first else after).append(coherent)
    assert [(p["position"], p["n_judgements"]) for p in entry["positions"]] == sorted(
        (p, len(v)) for p, v in table.items()
    )
    for row in entry["positions"]:
        assert row["coherent_rate"] == pytest.approx(np.mean(table[row["position"]]))
    counts = [[sum(v), len(v) - sum(v)] for _, v in sorted(table.items())]
    assert entry["chi2_p"] == pytest.approx(stats.chi2_contingency(counts).pvalue)
    assert entry["human"]["before"]["n_judgements"] == len(before)
    assert entry["human"]["after"]["n_judgements"] == len(after)
