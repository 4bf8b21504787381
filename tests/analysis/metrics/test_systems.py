"""System-level statistics (analysis.metrics.protocol.systems / generation /
evaluators, bootstrap.rate_ci): hand-worked examples and plain-Python
recomputations. No database."""

from __future__ import annotations

import itertools
import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.metrics.bootstrap import resample_weights
from analysis.metrics.protocol.items import MEE_VARIANTS

CATEGORIES = ["contra", "offtopic"]


def judgement(stage, source, item, rater, *, coherent, empathy=None, sel=(), mee=None):
    row = {
        "stage": stage,
        "stage_position": {"S1": 1, "S2": 2}[stage],
        "dialogue_id": f"d{item}",
        "source": source,
        "item": item,
        "group": "lay",
        "rater": rater,
        "coherent": coherent,
        "empathy": empathy,
        "mee": mee,
    }
    row.update({slug: slug in sel for slug in CATEGORIES})
    return row


def two_systems() -> pd.DataFrame:
    """S1/GPT-2: item 1 (2 of 3 coherent), item 2 (0 of 2); S1/Human: item 3 (1 of 1),
    item 4 (2 of 2)."""
    yes = {"coherent": True}
    no = {"coherent": False, "sel": ["offtopic"]}
    rows = [
        judgement("S1", "GPT-2", 1, "a", **yes, empathy=4),
        judgement("S1", "GPT-2", 1, "b", **yes, empathy=2),
        judgement("S1", "GPT-2", 1, "c", **no),
        judgement("S1", "GPT-2", 2, "a", **no),
        judgement("S1", "GPT-2", 2, "b", **no),
        judgement("S1", "Human", 3, "a", **yes, empathy=5),
        judgement("S1", "Human", 4, "a", **yes, empathy=5),
        judgement("S1", "Human", 4, "b", **yes, empathy=3),
    ]
    return pd.DataFrame(rows)


def stats_of(frame: pd.DataFrame, stage_order=("S1", "S2")) -> tuple[pd.DataFrame, pd.DataFrame]:
    items = metrics.item_table(judgements=frame, categories=CATEGORIES)
    return metrics.system_stats(judgements=frame, items=items, stage_order=stage_order), items


# --------------------------------------------------------------------------- systems


def test_system_entries_hand_worked():
    stats, items = stats_of(two_systems())
    entries = metrics.system_entries(stats=stats, items=items, resamples=0)
    gpt2, human = entries
    # Source order within a stage is str order: "GPT-2" < "Human".
    assert (gpt2["stage"], gpt2["source"], human["source"]) == ("S1", "GPT-2", "Human")
    assert gpt2["n_judgements"] == 5 and gpt2["n_items"] == 2
    assert gpt2["coherent_rate"] == pytest.approx(2 / 5)
    assert gpt2["coherent_rate_ci"] == [None, None]  # no resamples
    # Item 1: majority coherent; item 2: majority incoherent → 1 / 2.
    assert gpt2["majority_coherent_rate"] == pytest.approx(0.5)
    assert gpt2["empathy_mean"] == pytest.approx(3.0)
    assert gpt2["empathy_distribution"] == {"1": 0.0, "2": 0.5, "3": 0.0, "4": 0.5, "5": 0.0}
    assert gpt2["n_empathy"] == 2
    # Human: item 3 has a single rater, so only item 4 counts for the majority rate.
    assert human["coherent_rate"] == 1.0
    assert human["majority_coherent_rate"] == 1.0
    assert human["empathy_mean"] == pytest.approx(13 / 3)
    assert human["empathy_distribution"]["5"] == pytest.approx(2 / 3)


def test_majority_coherent_rate_is_null_without_an_item_of_two_raters():
    frame = two_systems()
    frame = frame.loc[frame["item"] == 3]
    stats, items = stats_of(frame)
    (entry,) = metrics.system_entries(stats=stats, items=items, resamples=0)
    assert entry["majority_coherent_rate"] is None
    assert entry["empathy_distribution"]["5"] == 1.0


def test_system_order_is_stage_order_then_source_str_order():
    frame = pd.concat(
        [
            two_systems().assign(stage="S2", stage_position=2),
            two_systems().assign(source=lambda f: f["source"].map({"GPT-2": "b", "Human": "B"})),
        ]
    )
    stats, _ = stats_of(frame, stage_order=["S2", "S1"])
    assert list(stats.index) == [("S2", "GPT-2"), ("S2", "Human"), ("S1", "B"), ("S1", "b")]


def test_rate_ci_matches_the_expanded_resamples():
    counts = np.array([[2, 1], [0, 2], [1, 0], [2, 0], [3, 0], [0, 3], [2, 1]])
    low, high = metrics.rate_ci(counts, resamples=200, seed=7)
    # The same draws, each resample expanded back into items and the pooled rate
    # computed item by item.
    patterns, weights = resample_weights(counts, resamples=200, seed=7)
    rates = []
    for row in weights:
        yes = no = 0.0
        for pattern, copies in zip(patterns, row, strict=True):
            yes += copies * pattern[0]
            no += copies * pattern[1]
        rates.append(yes / (yes + no))
    assert (low, high) == pytest.approx(tuple(np.percentile(rates, [2.5, 97.5])))
    assert low <= (8 / 17) <= high  # the point estimate, 8 coherent of 17


def test_rate_ci_edge_cases():
    assert metrics.rate_ci(np.array([[2, 1], [2, 1]]), resamples=100) == pytest.approx(
        (2 / 3, 2 / 3)
    )
    assert metrics.rate_ci(np.zeros((0, 2)), resamples=100) == (None, None)
    assert metrics.rate_ci(np.array([[1, 1]]), resamples=0) == (None, None)


# --------------------------------------------------------------------------- effect sizes


def test_cohens_h_hand_worked():
    # 2·asin(√0.5) = π/2, 2·asin(√0.25) = π/3.
    assert float(metrics.cohens_h(0.5, 0.25)) == pytest.approx(math.pi / 2 - math.pi / 3)
    assert float(metrics.cohens_h(1.0, 0.0)) == pytest.approx(math.pi)


def test_cohens_d_hand_worked_and_undefined():
    # [1, 2, 3] vs [3, 4, 5]: means 2 and 4, both sample variances 1 → d = −2.
    assert float(metrics.cohens_d(2, 1, 3, 4, 1, 3)) == pytest.approx(-2.0)
    assert np.isnan(metrics.cohens_d(2, np.nan, 1, 4, 1, 3))  # a side with one rating
    assert np.isnan(metrics.cohens_d(3, 0, 4, 3, 0, 5))  # pooled SD 0


def test_cohens_d_matches_plain_python():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(1, 6, rng.integers(2, 12)).tolist()
        b = rng.integers(1, 6, rng.integers(2, 12)).tolist()
        pooled = math.sqrt(
            ((len(a) - 1) * statistics.variance(a) + (len(b) - 1) * statistics.variance(b))
            / (len(a) + len(b) - 2)
        )
        d = metrics.cohens_d(
            np.mean(a), np.var(a, ddof=1), len(a), np.mean(b), np.var(b, ddof=1), len(b)
        )
        if pooled == 0:
            assert np.isnan(d)
        else:
            assert float(d) == pytest.approx((statistics.mean(a) - statistics.mean(b)) / pooled)


def plain_holm(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def test_holm_hand_worked_and_cross_checked():
    # Sorted 0.01, 0.03, 0.04: × 3, × 2, × 1 → 0.03, 0.06, max(0.06, 0.04).
    assert metrics.holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert metrics.holm([None]) == [None]
    p = np.random.default_rng(1).random(12).tolist()
    assert metrics.holm(p) == pytest.approx(plain_holm(p))


def yates_p(a: int, b: int, c: int, d: int) -> float:
    """Chi-squared with Yates' correction on [[a, b], [c, d]], written out."""
    n = a + b + c + d
    statistic = n * max(0.0, abs(a * d - b * c) - n / 2) ** 2
    statistic /= (a + b) * (c + d) * (a + c) * (b + d)
    return math.erfc(math.sqrt(statistic / 2))  # survival function of χ² with 1 df


def test_system_pairs_hand_worked():
    stats, _ = stats_of(two_systems())
    (pair,) = metrics.system_pairs(stats=stats)
    assert pair["a"] == {"stage": "S1", "source": "GPT-2"}
    assert pair["b"] == {"stage": "S1", "source": "Human"}
    assert pair["cohens_h"] == pytest.approx(2 * math.asin(math.sqrt(0.4)) - math.pi)
    assert pair["chi2_p"] == pytest.approx(yates_p(2, 3, 3, 0))
    assert pair["p_holm"] == pytest.approx(pair["chi2_p"])  # a single test
    # Empathy [4, 2] vs [5, 5, 3]: means 3 and 13/3, variances 2 and 4/3.
    pooled = math.sqrt((1 * 2 + 2 * 4 / 3) / 3)
    assert pair["cohens_d_empathy"] == pytest.approx((3 - 13 / 3) / pooled)


def random_systems(seed: int, group: str = "lay") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(60):
        stage, source = ("S1", "S2")[item % 2], ("A", "B", "Human")[item % 3]
        p = {"A": 0.3, "B": 0.6, "Human": 0.9}[source]
        for r in range(rng.integers(1, 5)):
            coherent = bool(rng.random() < p)
            rows.append(
                judgement(
                    stage,
                    source,
                    item,
                    f"r{r}",
                    coherent=coherent,
                    empathy=int(rng.integers(1, 6)) if coherent else None,
                    sel=[] if coherent else ["contra"],
                )
                | {"group": group}
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1])
def test_systems_and_pairs_match_plain_python(seed):
    frame = random_systems(seed)
    stats, items = stats_of(frame)
    entries = metrics.system_entries(stats=stats, items=items, resamples=0)
    pairs = metrics.system_pairs(stats=stats)
    by_system: dict = {}
    for row in frame.to_dict("records"):
        by_system.setdefault((row["stage"], row["source"]), []).append(row)
    keys = sorted(by_system, key=lambda k: (k[0], k[1]))
    assert [(e["stage"], e["source"]) for e in entries] == keys
    for entry, key in zip(entries, keys, strict=True):
        rows = by_system[key]
        per_item: dict = {}
        for row in rows:
            per_item.setdefault(row["item"], []).append(row["coherent"])
        rated = [votes for votes in per_item.values() if len(votes) >= 2]
        ratings = [row["empathy"] for row in rows if not pd.isna(row["empathy"])]
        assert entry["n_judgements"] == len(rows)
        assert entry["n_items"] == len(per_item)
        assert entry["coherent_rate"] == pytest.approx(sum(r["coherent"] for r in rows) / len(rows))
        assert entry["majority_coherent_rate"] == pytest.approx(
            sum(sum(v) > len(v) / 2 for v in rated) / len(rated)
        )
        assert entry["empathy_mean"] == pytest.approx(statistics.mean(ratings))
        assert entry["n_empathy"] == len(ratings)
    assert len(pairs) == len(keys) * (len(keys) - 1) // 2
    for pair, (a, b) in zip(pairs, itertools.combinations(keys, 2), strict=True):
        assert (pair["a"]["source"], pair["b"]["source"]) == (a[1], b[1])
        yes_a = sum(r["coherent"] for r in by_system[a])
        yes_b = sum(r["coherent"] for r in by_system[b])
        n_a, n_b = len(by_system[a]), len(by_system[b])
        assert pair["cohens_h"] == pytest.approx(
            2 * math.asin(math.sqrt(yes_a / n_a)) - 2 * math.asin(math.sqrt(yes_b / n_b))
        )
        assert pair["chi2_p"] == pytest.approx(yates_p(yes_a, n_a - yes_a, yes_b, n_b - yes_b))
    p = [pair["chi2_p"] for pair in pairs]
    assert [pair["p_holm"] for pair in pairs] == pytest.approx(plain_holm(p))


def test_chi2_is_null_when_a_column_is_empty():
    frame = two_systems()
    frame["coherent"] = True
    frame["empathy"] = 3
    stats, _ = stats_of(frame)
    (pair,) = metrics.system_pairs(stats=stats)
    assert pair["chi2_p"] is None and pair["p_holm"] is None
    assert pair["cohens_h"] == 0.0
    assert pair["cohens_d_empathy"] is None  # pooled SD 0


# --------------------------------------------------------------------------- group comparison


def with_rates(rates: dict[tuple[str, str], tuple[int, int]]) -> pd.DataFrame:
    """system_stats-like rows from (coherent, judgements) counts, empathy all 3."""
    index = pd.MultiIndex.from_tuples(list(rates), names=["stage", "source"])
    coherent, n = zip(*rates.values(), strict=True)
    return pd.DataFrame(
        {
            "n_judgements": n,
            "n_coherent": coherent,
            "n_empathy": [4] * len(n),
            "empathy_mean": [3.0] * len(n),
            "empathy_var": [0.0] * len(n),
        },
        index=index,
    )


def test_group_comparison_hand_worked():
    lay = with_rates({("S1", "A"): (2, 10), ("S1", "B"): (5, 10), ("S1", "C"): (8, 10)})
    expert = with_rates(
        {("S1", "A"): (3, 10), ("S1", "B"): (9, 10), ("S1", "C"): (6, 10), ("S1", "D"): (1, 2)}
    )
    result = metrics.group_comparison(stats={"lay": lay, "expert": expert})
    assert result["groups"] == ["lay", "expert"]
    assert [s["source"] for s in result["systems"]] == ["A", "B", "C"]  # D: expert only
    assert result["systems"][1]["coherent_rate"] == {"lay": 0.5, "expert": 0.9}
    assert result["systems"][1]["chi2_p"] == pytest.approx(yates_p(5, 5, 9, 1))
    # Pairs AB, AC concordant, BC discordant: tau-b = (2 − 1) / 3.
    assert result["kendall_tau"] == pytest.approx(1 / 3)
    assert 0 < result["kendall_p"] <= 1

    def phi(p):
        return 2 * math.asin(math.sqrt(p))

    deltas = [
        abs((phi(la) - phi(lb)) - (phi(ea) - phi(eb)))
        for (la, ea), (lb, eb) in itertools.combinations([(0.2, 0.3), (0.5, 0.9), (0.8, 0.6)], 2)
    ]
    assert result["mean_abs_delta_h"] == pytest.approx(sum(deltas) / 3)
    assert result["mean_abs_delta_d_empathy"] is None  # every pooled SD is 0
    # Each group's own mean |h| over the common systems' pairs (D left out):
    # lay |h| of AB, AC, BC; the expert's likewise.
    lay_h = [abs(phi(x) - phi(y)) for x, y in itertools.combinations([0.2, 0.5, 0.8], 2)]
    expert_h = [abs(phi(x) - phi(y)) for x, y in itertools.combinations([0.3, 0.9, 0.6], 2)]
    assert result["mean_abs_h"] == [
        pytest.approx(sum(lay_h) / 3),
        pytest.approx(sum(expert_h) / 3),
    ]
    # Hand-worked for the lay group: φ(p) = 2 asin √p; |h| AB = 0.6435, AC = 1.2870,
    # BC = 0.6435 (φ(0.2) = 0.9273, φ(0.5) = 1.5708, φ(0.8) = 2.2143) → mean 0.8580.
    assert result["mean_abs_h"][0] == pytest.approx(0.8580, abs=1e-4)
    # Cross-checked with statsmodels' Cohen's h.
    from statsmodels.stats.proportion import proportion_effectsize

    checked = [
        abs(proportion_effectsize(x, y)) for x, y in itertools.combinations([0.3, 0.9, 0.6], 2)
    ]
    assert result["mean_abs_h"][1] == pytest.approx(sum(checked) / 3)


def test_group_comparison_needs_three_systems_for_kendall():
    lay = with_rates({("S1", "A"): (2, 10), ("S1", "B"): (5, 10)})
    expert = with_rates({("S1", "A"): (3, 10), ("S1", "B"): (9, 10)})
    result = metrics.group_comparison(stats={"lay": lay, "expert": expert})
    assert result["kendall_tau"] is None and result["kendall_p"] is None
    assert result["mean_abs_delta_h"] is not None
    lone = metrics.group_comparison(stats={"lay": lay.iloc[:1], "expert": expert.iloc[:1]})
    assert lone["mean_abs_delta_h"] is None
    assert lone["mean_abs_h"] == [None, None]  # no pair of systems


def test_group_comparison_mean_abs_delta_d_over_pairs_defined_for_both():
    lay = with_rates({("S1", "A"): (2, 10), ("S1", "B"): (5, 10), ("S1", "C"): (5, 10)})
    expert = with_rates({("S1", "A"): (3, 10), ("S1", "B"): (9, 10), ("S1", "C"): (5, 10)})
    lay[["empathy_mean", "empathy_var"]] = [[2.0, 1.0], [4.0, 1.0], [3.0, 1.0]]
    expert[["empathy_mean", "empathy_var"]] = [[3.0, 1.0], [3.0, 1.0], [3.0, 1.0]]
    expert.loc[("S1", "C"), "n_empathy"] = 1  # d undefined for the expert pairs with C
    result = metrics.group_comparison(stats={"lay": lay, "expert": expert})
    # Only the pair (A, B): lay d = −2 (pooled SD 1), expert d = 0.
    assert result["mean_abs_delta_d_empathy"] == pytest.approx(2.0)


# --------------------------------------------------------------------------- generation settings


def as_texts(generation: dict) -> pd.Series:
    """Metadata as the selector gives it: JSON text indexed by reflection id."""
    return pd.Series({rid: json.dumps(meta) for rid, meta in generation.items()}, dtype=object)


def settings_of(frame: pd.DataFrame, generation: dict) -> dict:
    items = metrics.item_table(judgements=frame, categories=CATEGORIES)
    labelled = metrics.item_label_sums(judgements=frame, items=items, categories=CATEGORIES)
    values = metrics.generation_values(generation=as_texts(generation))
    return metrics.generation_settings(items=labelled, values=values, categories=CATEGORIES)


def test_generation_values_as_json_writes_scalars():
    values = metrics.generation_values(
        generation=as_texts(
            {
                1: {"model": "gpt2", "p": 0.9, "k": 40, "beam": True, "seed": None, "tags": ["x"]},
                2: {"model": "gpt3", "extra": {"a": 1}},
                3: "not an object",
                4: {"model": "gpt2", "p": 0.9, "k": 40, "beam": True, "seed": None, "tags": ["x"]},
            }
        )
    )
    assert sorted(map(tuple, values.to_numpy().tolist())) == [
        (1, "beam", "true"),
        (1, "k", "40"),
        (1, "model", "gpt2"),
        (1, "p", "0.9"),
        (1, "seed", "null"),
        (2, "model", "gpt3"),
        (4, "beam", "true"),
        (4, "k", "40"),
        (4, "model", "gpt2"),
        (4, "p", "0.9"),
        (4, "seed", "null"),
    ]
    assert metrics.generation_values(generation=as_texts({})).empty


def test_generation_settings_hand_worked():
    rows = []
    # Items 1–5: p 0.9, items 6–7: p 0.5 (fewer than 5 items: left out). Each item has
    # two raters; items 1–2 both coherent, 3 split, 4–5 both incoherent (4: both
    # off-topic, 5: one contra, one off-topic).
    answers = {
        1: [True, True],
        2: [True, True],
        3: [True, False],
        4: [False, False],
        5: [False, False],
        6: [True, True],
        7: [False, True],
    }
    for item, votes in answers.items():
        for r, vote in enumerate(votes):
            sel = [] if vote else (["offtopic"] if item != 5 or r else ["contra"])
            rows.append(judgement("S1", "GPT-2", item, f"r{r}", coherent=vote, sel=sel))
    result = settings_of(
        pd.DataFrame(rows), {i: {"p": 0.9 if i <= 5 else 0.5, "model": "gpt2"} for i in answers}
    )
    assert set(result) == {"p", "model"}
    assert set(result["p"]) == {"0.9"}
    entry = result["p"]["0.9"]
    assert entry["n_items"] == 5
    assert entry["coherent_rate"] == pytest.approx(5 / 10)
    assert entry["majority_coherent_rate"] == pytest.approx(2 / 5)  # item 3 is a tie
    assert entry["label_distribution"] == pytest.approx(
        {"coherent": 0.5, "contra": 0.1, "offtopic": 0.4, "incoherent_unspecified": 0.0}
    )
    # Majority incoherent: items 4 (off-topic twice) and 5 (no majority).
    assert entry["majority_mee"] == pytest.approx(
        {"contra": 0.0, "offtopic": 0.5, "no_majority": 0.5}
    )
    model = result["model"]["gpt2"]
    assert model["n_items"] == 7
    assert model["coherent_rate"] == pytest.approx(8 / 14)


def test_generation_settings_majority_mee_consensus_adjusted_and_merged():
    """Six items at p 0.9, each with two raters. Majority incoherent: item 4 (both
    off-topic), item 5 (one contra, one off-topic) and item 8 (both selected contra
    and off-topic; one named off-topic as most evident, the other none)."""
    no = {"coherent": False}
    rows = [
        *(judgement("S1", "G", i, f"r{r}", coherent=True) for i in (1, 2, 3) for r in (0, 1)),
        judgement("S1", "G", 4, "r0", **no, sel=["offtopic"]),
        judgement("S1", "G", 4, "r1", **no, sel=["offtopic"]),
        judgement("S1", "G", 5, "r0", **no, sel=["contra"]),
        judgement("S1", "G", 5, "r1", **no, sel=["offtopic"]),
        judgement("S1", "G", 8, "r0", **no, sel=["contra", "offtopic"]),
        judgement("S1", "G", 8, "r1", **no, sel=["contra", "offtopic"], mee="offtopic"),
    ]
    frame = pd.DataFrame(rows)
    merge = {"contra": "halluc", "offtopic": "halluc"}
    items = metrics.item_table(judgements=frame, categories=CATEGORIES, mee_variants=merge)
    labelled = metrics.item_label_sums(judgements=frame, items=items, categories=CATEGORIES)
    values = metrics.generation_values(
        generation=as_texts({i: {"p": 0.9} for i in (1, 2, 3, 4, 5, 8)})
    )
    (entry,) = metrics.generation_settings(
        items=labelled, values=values, categories=CATEGORIES, mee_merge=merge
    )["p"].values()
    # Raw: item 4 off-topic; 5 split; 8 one MEE of two: no majority.
    assert entry["majority_mee"] == pytest.approx(
        {"contra": 0.0, "offtopic": 1 / 3, "no_majority": 2 / 3}
    )
    variants = entry["majority_mee_variants"]
    # Consensus: item 8's raters share both categories; off-topic, named most often as
    # most evident among them, becomes both raters' → off-topic. Item 5 shares none.
    assert variants["consensus_adjusted"] == pytest.approx(
        {"contra": 0.0, "offtopic": 2 / 3, "no_majority": 1 / 3}
    )
    # Merged: every incoherent answer is "halluc" (item 8's first rater selected one
    # merged category, so it is their most evident error).
    assert variants["hallucinatory_merged"] == {"halluc": 1.0, "no_majority": 0.0}
    assert variants["hallucinatory_merged_consensus_adjusted"] == {
        "halluc": 1.0,
        "no_majority": 0.0,
    }
    # Without the variants' columns (no merge asked), no variants.
    assert (
        "majority_mee_variants"
        not in settings_of(frame, {i: {"p": 0.9} for i in (1, 2, 3, 4, 5, 8)})["p"]["0.9"]
    )


@pytest.mark.parametrize("seed", range(3))
def test_item_table_mee_variants_match_each_item_on_its_own(seed):
    """Each (stage, item, group) row's variants equal the majority of ``mee_labels``
    applied to that row's incoherent judgements alone: the consensus never crosses
    groups or stages judging the same item."""
    rng = np.random.default_rng(seed)
    rows = []
    for stage in ("S1", "S2"):
        for group in ("lay", "expert"):
            for item in range(8):
                for r in range(3):
                    sel = [c for c in CATEGORIES if rng.random() < 0.6]
                    yes = not sel and rng.random() < 0.5
                    mee = rng.choice(sel) if len(sel) > 1 and rng.random() < 0.5 else None
                    row = judgement(stage, "G", item, f"{group}{r}", coherent=yes, sel=sel, mee=mee)
                    rows.append({**row, "group": group})
    frame = pd.DataFrame(rows)
    merge = {"contra": "halluc"}
    items = metrics.item_table(judgements=frame, categories=CATEGORIES, mee_variants=merge)
    for name, (column, consensus, merged) in MEE_VARIANTS.items():
        for _, row in items.iterrows():
            if row["majority_label"] != "incoherent":
                assert pd.isna(row[column]), name
                continue
            own = frame[
                (frame["stage"] == row["stage"])
                & (frame["item"] == row["item"])
                & (frame["group"] == row["group"])
                & ~frame["coherent"]
            ]
            named = metrics.mee_labels(
                judgements=own,
                categories=CATEGORIES,
                consensus=consensus,
                merge=merge if merged else None,
            ).dropna()
            counts = named.value_counts()
            winner = [m for m, n in counts.items() if 2 * n > len(own)]
            assert row[column] == (winner[0] if winner else "no_majority"), name


def test_crossed_settings_hand_worked():
    """Items 1–5: gpt2 at p 0.4; 6–10: gpt3 at p 0.4; 11–15: gpt3 with no p. Two raters
    each; in the first combination items 1–2 coherent twice, the rest incoherent twice
    (off-topic); the others all coherent."""
    rows = []
    for item in range(1, 16):
        yes = item > 5 or item <= 2
        for r in (0, 1):
            sel = [] if yes else ["offtopic"]
            rows.append(judgement("S1", "G", item, f"r{r}", coherent=yes, sel=sel))
    frame = pd.DataFrame(rows)
    generation = {
        i: {"model": "gpt2" if i <= 5 else "gpt3", **({"p": 0.4} if i <= 10 else {})}
        for i in range(1, 16)
    }
    items = metrics.item_table(judgements=frame, categories=CATEGORIES)
    labelled = metrics.item_label_sums(judgements=frame, items=items, categories=CATEGORIES)
    values = metrics.generation_values(generation=as_texts(generation))
    crossed = metrics.crossed_values(values=values, keys=["model", "p"])
    assert set(crossed["key"]) == {"model × p"}
    settings = metrics.generation_settings(items=labelled, values=crossed, categories=CATEGORIES)
    entries = metrics.crossed_entries(settings, ["model", "p"])
    assert [(e["values"], e["n_items"]) for e in entries] == [
        ({"model": "gpt2", "p": "0.4"}, 5),
        ({"model": "gpt3", "p": "0.4"}, 5),
        ({"model": "gpt3", "p": "null"}, 5),
    ]
    first = entries[0]
    assert first["coherent_rate"] == pytest.approx(4 / 10)
    assert first["majority_coherent_rate"] == pytest.approx(2 / 5)
    assert first["label_distribution"] == pytest.approx(
        {"coherent": 0.4, "contra": 0.0, "offtopic": 0.6, "incoherent_unspecified": 0.0}
    )
    assert entries[1]["coherent_rate"] == entries[2]["coherent_rate"] == 1.0
    # Cross-checked: the first combination's shares by hand from the rows.
    mine = frame[frame["item"] <= 5]
    assert first["label_distribution"]["offtopic"] == pytest.approx(mine["offtopic"].mean())
    assert metrics.crossed_values(values=values, keys=[]).empty
    assert metrics.crossed_values(values=values, keys=["temperature"]).empty


def test_generation_settings_without_incoherent_majority_has_null_mee_shares():
    frame = pd.DataFrame(
        [judgement("S1", "A", i, f"r{r}", coherent=True) for i in range(5) for r in range(2)]
    )
    result = settings_of(frame, {i: {"model": "m"} for i in range(5)})
    assert result["model"]["m"]["majority_mee"] == {
        "contra": None,
        "offtopic": None,
        "no_majority": None,
    }
    assert settings_of(frame, {}) == {}


# --------------------------------------------------------------------------- automatic evaluators


def plain_spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rho without ties: 1 − 6 Σ d² / (n (n² − 1))."""
    rank_x = {v: i for i, v in enumerate(sorted(x))}
    rank_y = {v: i for i, v in enumerate(sorted(y))}
    d2 = sum((rank_x[a] - rank_y[b]) ** 2 for a, b in zip(x, y, strict=True))
    n = len(x)
    return 1 - 6 * d2 / (n * (n * n - 1))


def evaluator_items() -> pd.DataFrame:
    """Coherence scores 0, 1, 2, 3 on S1/A items 1–4; S1/B items 5–6 (too few)."""
    return pd.DataFrame(
        {
            "stage": ["S1"] * 6,
            "item": [1, 2, 3, 4, 5, 6],
            "group": ["lay"] * 6,
            "source": ["A", "A", "A", "A", "B", "B"],
            "coherence_score": [0, 1, 3, 2, 1, 2],
        }
    )


def test_evaluators_by_source_hand_worked():
    scores = pd.DataFrame(
        {
            "stage": ["S1"] * 6,
            "reflection_id": [1, 2, 3, 4, 5, 6],
            "evaluator": ["bleu"] * 6,
            "score": [0.1, 0.4, 0.2, 0.3, 0.5, 0.6],
        }
    )
    entries = metrics.evaluators_by_source(
        items=evaluator_items(), scores=scores, stage_order=["S1"], group_order=["lay"]
    )
    (entry,) = entries  # source B has 2 scored items: left out
    assert (entry["evaluator"], entry["group"], entry["stage"], entry["source"]) == (
        "bleu",
        "lay",
        "S1",
        "A",
    )
    assert entry["n_items"] == 4
    assert entry["spearman"] == pytest.approx(
        plain_spearman([0.1, 0.4, 0.2, 0.3], [0, 1, 3, 2])
    )  # ranks (0, 3, 1, 2) vs (0, 1, 3, 2): 1 − 6·8/60 = 0.2
    assert entry["spearman"] == pytest.approx(0.2)
    assert entry["pearson"] == pytest.approx(np.corrcoef([0.1, 0.4, 0.2, 0.3], [0, 1, 3, 2])[0, 1])


def test_evaluators_systems_hand_worked():
    stats = {
        "lay": with_rates(
            {("S1", "A"): (2, 10), ("S1", "B"): (5, 10), ("S2", "A"): (9, 10), ("S2", "C"): (1, 2)}
        )
    }
    items = pd.DataFrame(
        {
            "stage": ["S1", "S1", "S1", "S2", "S2"],
            "item": [1, 2, 3, 4, 5],
            "group": ["lay"] * 5,
            "source": ["A", "A", "B", "A", "C"],
            "coherence_score": [0, 1, 2, 3, 1],
        }
    )
    scores = pd.DataFrame(
        {
            "stage": ["S1", "S1", "S1", "S2"],
            "reflection_id": [1, 2, 3, 4],
            "evaluator": ["rouge_l"] * 4,
            "score": [0.2, 0.4, 0.1, 0.9],
        }
    )
    (entry,) = metrics.evaluators_systems(
        items=items, scores=scores, stats=stats, group_order=["lay"]
    )
    # Systems with scores: S1/A mean 0.3 (rate 0.2), S1/B 0.1 (0.5), S2/A 0.9 (0.9);
    # S2/C has no score. Ranks (2, 1, 3) vs (1, 2, 3): rho = 1 − 6·2/24 = 0.5.
    assert entry["n_systems"] == 3
    assert entry["spearman"] == pytest.approx(plain_spearman([0.3, 0.1, 0.9], [0.2, 0.5, 0.9]))
    assert entry["spearman"] == pytest.approx(0.5)
    few = metrics.evaluators_systems(
        items=items, scores=scores.iloc[:3], stats=stats, group_order=["lay"]
    )
    assert few[0]["n_systems"] == 2 and few[0]["spearman"] is None
