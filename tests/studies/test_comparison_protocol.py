"""The pairwise and ranking instruments' pure rules (``studies.protocol``): a
context's pairs, the sides they are shown on, who won a pair, competition ranks."""

from collections import Counter

from studies.protocol import (
    CHOICE_A,
    CHOICE_B,
    CHOICE_TIE,
    competition_ranks,
    context_pairs,
    order_keys,
    pair_winner,
    pairwise_order,
)

# Human (1), two GPT-2 (2, 3), one GPT-3 (4); the off-topic candidate is 9.
CANDIDATES = [(1, "Human"), (2, "GPT-2"), (3, "GPT-2"), (4, "GPT-3")]


def test_every_pair_of_different_systems_plus_the_attention_pair():
    pairs = context_pairs(CANDIDATES, attention_id=9, per_context=None, seed="s")
    # 6 pairs of 4 candidates, minus the GPT-2 pair (2, 3): 5, the earlier first.
    assert sorted(pairs[:-1]) == [(1, 2), (1, 3), (1, 4), (2, 4), (3, 4)]
    first, second = pairs[-1]
    assert first == 9 and second in {1, 2, 3, 4}
    # The same seed, the same pairs; no attention check, no attention pair.
    assert context_pairs(CANDIDATES, attention_id=9, per_context=None, seed="s") == pairs
    assert len(context_pairs(CANDIDATES, attention_id=None, per_context=None, seed="s")) == 5


def test_a_sample_covers_every_pair_of_systems_before_any_repeats():
    # Three pairs of systems: Human–GPT-2 (two pairs), Human–GPT-3, GPT-2–GPT-3 (two).
    systems = dict(CANDIDATES)
    for seed in ("a", "b", "c", "d", "e"):
        pairs = context_pairs(CANDIDATES, attention_id=None, per_context=3, seed=seed)
        assert len(pairs) == 3 and len(set(pairs)) == 3
        covered = Counter(frozenset((systems[a], systems[b])) for a, b in pairs)
        assert len(covered) == 3, seed  # each pair of systems once
        four = context_pairs(CANDIDATES, attention_id=None, per_context=4, seed=seed)
        assert len(set(four)) == 4
        # Every pair of systems, then one of them again.
        repeated = Counter(frozenset((systems[a], systems[b])) for a, b in four)
        assert sorted(repeated.values()) == [1, 1, 2], seed
    # More than there are: every pair.
    assert len(context_pairs(CANDIDATES, attention_id=None, per_context=50, seed="a")) == 5


def test_sides_alternate_across_a_groups_slots_and_the_order_is_the_annotators():
    pairs = [(1, 2), (1, 3), (1, 4), (2, 4), (3, 4)]
    orders = {
        slot: pairwise_order(pairs, seed="batch", group_slot=slot, shuffle_key=f"who-{slot}")
        for slot in (1, 2, 3, 4)
    }
    for slot, order in orders.items():
        assert sorted(order_keys(order)) == pairs, slot
    sides = {slot: {(a, b): s for a, b, s in order} for slot, order in orders.items()}
    for pair in pairs:
        # Slots 1 and 2 see a pair on opposite sides, as do 3 and 4: with k = 4 each
        # side twice; with k = 3, two and one.
        assert sides[1][pair] != sides[2][pair] and sides[3][pair] != sides[4][pair]
        assert sides[1][pair] == sides[3][pair]
    # The starting side varies between pairs (seeded): not every pair starts swapped
    # or unswapped for slot 1.
    starts = {
        tuple(s for *_, s in pairwise_order(pairs, seed=f"b{i}", group_slot=1, shuffle_key="x"))
        for i in range(20)
    }
    assert len(starts) > 1
    # The order of the pairs is the annotator's own.
    assert len({tuple(map(tuple, o)) for o in orders.values()}) > 1


def test_the_winner_follows_the_side_shown():
    assert pair_winner(CHOICE_A, False) == 0  # the first, shown on the left
    assert pair_winner(CHOICE_B, False) == 1
    assert pair_winner(CHOICE_A, True) == 1  # the second was on the left
    assert pair_winner(CHOICE_B, True) == 0
    assert pair_winner(CHOICE_TIE, True) is None


def test_competition_ranks_share_the_lowest_rank_of_a_tie():
    assert competition_ranks([1, 2, 2, 3]) == [1, 2, 2, 4]
    assert competition_ranks([3, 1, 2, 2]) == [4, 1, 2, 2]
    assert competition_ranks([1, 1, 1]) == [1, 1, 1]
    assert competition_ranks([4, 3, 2, 1]) == [4, 3, 2, 1]
    # Any numbers that order the candidates: gaps close up.
    assert competition_ranks([1, 3, 3]) == [1, 2, 2]


def test_order_keys_name_pairs_and_reflections():
    assert order_keys([5, 6]) == [(5, None), (6, None)]
    assert order_keys([[5, 6, 1], [7, 5, 0]]) == [(5, 6), (7, 5)]
