"""Pairwise preferences and rankings of systems: which system annotators prefer, by
how much, how strongly they agree, and whether two groups order the systems alike.

A *system* is a candidate's source (a model and its settings, or the human
reflection). Pairwise answers (``PAIRWISE_FRAME``: one row per pair and rater, with
the choice as shown and whether the pair's second candidate was shown on the left):

* per pair of systems: wins, losses and ties; the win proportion p of the first
  system (ties left out); Cohen's h between the two systems' win proportions,
  2·asin(√p) − 2·asin(√(1 − p)) (:func:`.systems.cohens_h`); the two-sided binomial
  test of the wins against 0.5 (``scipy.stats.binomtest``), Holm's correction over
  the pairs (:func:`.systems.holm`);
* Bradley–Terry strengths (``choix.ilsr_pairwise_dense``: the maximum-likelihood
  strengths, log scale, mean 0), fitted on the wins (ties left out), with percentile
  bootstrap CIs resampling contexts; when some system never beats (or never loses
  to) the rest the likelihood has no maximum and a small ridge (``BT_RIDGE``) is
  added, which the result says (``regularised``);
* agreement on the label (which candidate won, or a tie): Fleiss' and Randolph's
  kappa and Krippendorff's alpha (:mod:`analysis.metrics.agreement`), items being
  the pairs of one context's batch;
* position bias: the share of A (left) among the decisive choices, with the binomial
  test against 0.5;
* between two groups: Kendall's tau-b between their strengths, the mean absolute
  difference of their pair effect sizes (h), and each group's mean |h|
  (:func:`.systems.mean_absolute_effect`).

Rankings (``RANKING_FRAME``: one row per candidate and rater, its competition rank)
are read with ties as mid-ranks among the candidates analysed (a ranking's off-topic
candidate, or one of an excluded source, leaves no gap). A *block* is one rater's
ranking of one context; a system's rank in a block is the mean of its candidates'
mid-ranks there:

* per system, the mean of its block ranks with a percentile bootstrap CI resampling
  contexts;
* Kendall's W with the tie correction among the raters of each context, its
  chi-squared test (m(n − 1)W on n − 1 degrees of freedom), and over the contexts
  the mean W and the share with p < 0.05;
* the Friedman test (``scipy.stats.friedmanchisquare``) across systems over the
  blocks that rank every system;
* the pairwise wins the rankings imply (a candidate ranked above another from a
  different system wins; an equal rank is a tie), read by the pairwise statistics.
"""

from __future__ import annotations

from typing import Any

import choix
import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from scipy.sparse.csgraph import connected_components

from studies.protocol import CHOICE_A, CHOICE_B, CHOICE_TIE

from .._common import clean
from ..agreement import alpha_from_counts, count_table, fleiss_kappa, modal_rows, randolph_kappa
from ..bootstrap import DEFAULT_RESAMPLES, alpha_ci, kappa_ci, percentile_interval
from .systems import SIGNIFICANCE, cohens_h, holm, mean_absolute_effect

#: One row per pairwise answer: the context (the bootstrap's unit), the pair's two
#: candidates and their systems (``first`` as stored: the off-topic one in the
#: attention pair, which analysis leaves out), the rater, the choice as shown (A, B
#: or Tie) and whether the second candidate was shown on the left.
PAIRWISE_FRAME = [
    "context",
    "first",
    "second",
    "first_source",
    "second_source",
    "rater",
    "choice",
    "swapped",
]
#: One row per ranked candidate: its context, rater, candidate, system and
#: competition rank (1 the best; 1, 2, 2, 4 with a tie).
RANKING_FRAME = ["context", "rater", "candidate", "source", "rank"]

#: The ridge (``alpha`` of choix) added when the Bradley–Terry likelihood has no
#: maximum (a system that never wins or never loses).
BT_RIDGE = 0.01
#: The labels of a pairwise answer for agreement: which candidate won, or a tie.
LABELS = ("first", "second", "tie")


# --- pairwise ---------------------------------------------------------------------------


def pair_outcomes(frame: pd.DataFrame) -> pd.DataFrame:
    """The answers as system outcomes: ``a`` and ``b`` the pair's systems in name
    order, ``a_score`` 1 when a won, 0 when b won, 0.5 for a tie; ``label`` (first,
    second, tie) and ``pair`` (context, first, second) for agreement. Pairs of one
    system are left out (they say nothing about systems)."""
    frame = frame[frame["first_source"] != frame["second_source"]]
    choice = frame["choice"].to_numpy()
    swapped = frame["swapped"].to_numpy(dtype=bool)
    tie = choice == CHOICE_TIE
    second_won = (choice == CHOICE_A) == swapped  # ``protocol.pair_winner`` == 1
    first_source = frame["first_source"].to_numpy(dtype=object)
    second_source = frame["second_source"].to_numpy(dtype=object)
    first_is_a = first_source < second_source
    a = np.where(first_is_a, first_source, second_source)
    b = np.where(first_is_a, second_source, first_source)
    a_won = np.where(first_is_a, ~second_won, second_won)
    return pd.DataFrame(
        {
            "context": frame["context"].to_numpy(),
            "pair": list(zip(frame["context"], frame["first"], frame["second"], strict=True)),
            "rater": frame["rater"].to_numpy(),
            "a": a,
            "b": b,
            "a_score": np.where(tie, 0.5, a_won.astype(float)),
            "label": np.where(tie, "tie", np.where(second_won, "second", "first")),
            "choice": choice,
        }
    )


def _systems(outcomes: pd.DataFrame) -> list[str]:
    return sorted(set(outcomes["a"]) | set(outcomes["b"]), key=str)


def _decisive(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The answers that preferred one candidate (ties left out)."""
    return outcomes[outcomes["a_score"] != 0.5]


def comparison_matrix(outcomes: pd.DataFrame, systems: list[str]) -> np.ndarray:
    """systems × systems: how often the row's system beat the column's (ties left
    out)."""
    decisive = _decisive(outcomes)
    index = {s: i for i, s in enumerate(systems)}
    i = decisive["a"].map(index).to_numpy(dtype=int)
    j = decisive["b"].map(index).to_numpy(dtype=int)
    score = decisive["a_score"].to_numpy(dtype=float)
    matrix = np.zeros((len(systems), len(systems)))
    np.add.at(matrix, (i, j), score)
    np.add.at(matrix, (j, i), 1 - score)
    return matrix


def _has_maximum(matrix: np.ndarray) -> bool:
    """The Bradley–Terry likelihood has a maximum when every system can be reached
    from every other by wins (the win graph is strongly connected, Zermelo/Ford)."""
    n, _ = connected_components(matrix > 0, directed=True, connection="strong")
    return n == 1


def bradley_terry(matrix: np.ndarray) -> tuple[np.ndarray, bool]:
    """The strengths of a comparison matrix (log scale, mean 0) and whether the
    ridge ``BT_RIDGE`` was needed."""
    if len(matrix) < 2:
        return np.zeros(len(matrix)), False
    regularised = not _has_maximum(matrix)
    strengths = choix.ilsr_pairwise_dense(matrix, alpha=BT_RIDGE if regularised else 0.0)
    return strengths - strengths.mean(), regularised


def _bt_intervals(
    outcomes: pd.DataFrame, systems: list[str], *, resamples: int, seed: int
) -> list[tuple[float | None, float | None]]:
    """Percentile bootstrap CIs of the strengths, resampling contexts: each context's
    comparison matrix once, then each resample's matrix as a weighted sum."""
    outcomes = _decisive(outcomes)
    if resamples < 1 or len(systems) < 2 or outcomes.empty:
        return [(None, None)] * len(systems)
    contexts = pd.factorize(outcomes["context"])[0]
    n_contexts = int(contexts.max()) + 1
    index = {s: i for i, s in enumerate(systems)}
    k = len(systems)
    i = outcomes["a"].map(index).to_numpy(dtype=int)
    j = outcomes["b"].map(index).to_numpy(dtype=int)
    score = outcomes["a_score"].to_numpy(dtype=float)
    per_context = np.zeros((n_contexts, k * k))
    np.add.at(per_context, (contexts, i * k + j), score)
    np.add.at(per_context, (contexts, j * k + i), 1 - score)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_contexts, np.full(n_contexts, 1 / n_contexts), size=resamples)
    matrices = (weights @ per_context).reshape(resamples, k, k)
    draws = np.array([bradley_terry(m)[0] for m in matrices])
    return [percentile_interval(draws[:, s], 0.95) for s in range(k)]


def _binomial_p(wins: int, n: int) -> float | None:
    if n < 1:
        return None
    return clean(scipy_stats.binomtest(wins, n, 0.5).pvalue)


def pair_table(outcomes: pd.DataFrame) -> list[dict[str, Any]]:
    """Per pair of systems (a before b by name): wins, losses and ties of a; the win
    proportion of a (ties left out); Cohen's h; the binomial test and Holm's
    correction over the pairs."""
    score = outcomes["a_score"]
    counts = (
        outcomes.assign(
            win=(score == 1).astype(int), loss=(score == 0).astype(int), tie=(score == 0.5)
        )
        .groupby(["a", "b"], sort=True)[["win", "loss", "tie"]]
        .sum()
    )
    rows = []
    for (a, b), row in counts.iterrows():
        wins, losses, ties = int(row["win"]), int(row["loss"]), int(row["tie"])
        decisive = wins + losses
        p = wins / decisive if decisive else np.nan
        rows.append(
            {
                "a": str(a),
                "b": str(b),
                "wins": wins,
                "losses": losses,
                "ties": ties,
                "n": decisive + ties,
                "win_rate": clean(p),
                "cohens_h": clean(cohens_h(p, 1 - p)),
                "binomial_p": _binomial_p(wins, decisive),
            }
        )
    adjusted = holm([r["binomial_p"] for r in rows])
    for row, p_holm in zip(rows, adjusted, strict=True):
        row["p_holm"] = p_holm
        row["differs"] = p_holm is not None and p_holm < SIGNIFICANCE
    return rows


def label_agreement(
    outcomes: pd.DataFrame, *, ties: bool, resamples: int, seed: int
) -> dict[str, Any]:
    """Agreement on which candidate of a pair won (or a tie): Fleiss' and Randolph's
    kappa (the items rated by the modal number of raters) and Krippendorff's alpha
    (nominal), each with a bootstrap CI resampling pairs. ``ties``: whether a tie
    was a possible answer (Randolph's kappa counts the possible categories)."""
    categories = list(LABELS if ties else LABELS[:2])
    ratings = outcomes.rename(columns={"pair": "item"})[["item", "rater", "label"]]
    ratings = ratings.assign(item=pd.factorize(ratings["item"])[0])
    table = count_table(ratings=ratings, categories=categories).to_numpy()
    modal, _ = modal_rows(table)
    result: dict[str, Any] = {}
    for method, compute in (("fleiss", fleiss_kappa), ("randolph", randolph_kappa)):
        value = compute(ratings=ratings, categories=categories)
        value["ci"] = list(kappa_ci(modal, method=method, resamples=resamples, seed=seed))
        result[method] = value
    result["alpha"] = {
        "value": alpha_from_counts(table),
        "ci": list(alpha_ci(table, resamples=resamples, seed=seed)),
    }
    return result


def position_bias(outcomes: pd.DataFrame) -> dict[str, Any]:
    """How often the candidate on the left (A) was chosen: A, B and tie counts, A's
    share of the decisive choices and the binomial test against 0.5."""
    choice = outcomes["choice"]
    n_a, n_b = int((choice == CHOICE_A).sum()), int((choice == CHOICE_B).sum())
    n_tie = int((choice == CHOICE_TIE).sum())
    decisive = n_a + n_b
    return {
        "n_a": n_a,
        "n_b": n_b,
        "n_tie": n_tie,
        "share_a": clean(n_a / decisive) if decisive else None,
        "binomial_p": _binomial_p(n_a, decisive),
    }


def pairwise_cell(
    outcomes: pd.DataFrame,
    *,
    ties: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    shown: bool = True,
) -> dict[str, Any]:
    """One group's answers in one stage (``pair_outcomes``, at least one): the pairs
    table, the strengths with their CIs, agreement, position bias (``shown``: the
    answers were given on sides shown; derived ones were not) and the mean |h|."""
    if outcomes.empty:
        raise ValueError("A pairwise cell needs answers.")
    systems = _systems(outcomes)
    strengths, regularised = bradley_terry(comparison_matrix(outcomes, systems))
    intervals = _bt_intervals(outcomes, systems, resamples=resamples, seed=seed)
    pairs = pair_table(outcomes)
    return {
        "n_answers": len(outcomes),
        "n_pairs": int(outcomes["pair"].nunique()),
        "n_contexts": int(outcomes["context"].nunique()),
        "pairs": pairs,
        "strengths": {
            str(system): {"strength": clean(strength), "ci": list(interval)}
            for system, strength, interval in zip(systems, strengths, intervals, strict=True)
        },
        "regularised": regularised,
        "agreement": label_agreement(outcomes, ties=ties, resamples=resamples, seed=seed),
        "position": position_bias(outcomes) if shown else None,
        "mean_abs_h": mean_absolute_effect(
            [p["cohens_h"] for p in pairs if p["cohens_h"] is not None]
        ),
    }


def pairwise_groups_compared(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two groups' cells of one stage (``pairwise_cell``): Kendall's tau-b between
    their strengths over the systems both compared (null with fewer than three),
    the mean absolute difference of their pairs' h, and each group's mean |h|."""
    common = [s for s in a["strengths"] if s in b["strengths"]]
    tau = p_tau = None
    if len(common) >= 3:
        result = scipy_stats.kendalltau(
            [a["strengths"][s]["strength"] for s in common],
            [b["strengths"][s]["strength"] for s in common],
        )
        tau, p_tau = clean(result.statistic), clean(result.pvalue)
    h_b = {(p["a"], p["b"]): p["cohens_h"] for p in b["pairs"]}
    deltas = [
        abs(p["cohens_h"] - h_b[(p["a"], p["b"])])
        for p in a["pairs"]
        if p["cohens_h"] is not None and h_b.get((p["a"], p["b"])) is not None
    ]
    return {
        "systems": common,
        "kendall_tau": tau,
        "kendall_p": p_tau,
        "mean_abs_delta_h": clean(np.mean(deltas)) if deltas else None,
        "mean_abs_h": [a["mean_abs_h"], b["mean_abs_h"]],
    }


# --- rankings ---------------------------------------------------------------------------


def mid_ranks(frame: pd.DataFrame) -> pd.Series:
    """Each candidate's mid-rank in its block (rater, context) among the block's rows:
    1, 2, 2, 4 → 1, 2.5, 2.5, 4; a block whose off-topic (or excluded) candidate is
    gone re-ranked without the gap (1, 2, 4, 5 → 1, 2, 3, 4)."""
    return frame.groupby(["rater", "context"], sort=False)["rank"].rank(method="average")


def block_ranks(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per block and system: the system's rank there (the mean mid-rank of
    its candidates)."""
    return (
        frame.assign(mid=mid_ranks(frame))
        .groupby(["rater", "context", "source"], sort=True)["mid"]
        .mean()
        .rename("rank")
        .reset_index()
    )


def mean_ranks(
    blocks: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Per system, the mean of its block ranks and a percentile bootstrap CI
    resampling contexts (each context's blocks together)."""
    sums = blocks.pivot_table(
        index="context", columns="source", values="rank", aggfunc=["sum", "count"], fill_value=0
    )
    systems = sorted(blocks["source"].unique().tolist(), key=str)
    total = sums["sum"].reindex(columns=systems, fill_value=0).to_numpy(dtype=float)
    count = sums["count"].reindex(columns=systems, fill_value=0).to_numpy(dtype=float)
    intervals: list[tuple[float | None, float | None]] = [(None, None)] * len(systems)
    if resamples >= 1 and len(total):
        rng = np.random.default_rng(seed)
        n = len(total)
        weights = rng.multinomial(n, np.full(n, 1 / n), size=resamples)
        with np.errstate(divide="ignore", invalid="ignore"):
            draws = (weights @ total) / (weights @ count)
        intervals = [percentile_interval(draws[:, s], 0.95) for s in range(len(systems))]
    with np.errstate(divide="ignore", invalid="ignore"):
        means = total.sum(axis=0) / count.sum(axis=0)
    return {
        str(system): {
            "mean_rank": clean(means[s]),
            "n_blocks": int(count[:, s].sum()),
            "ci": list(intervals[s]),
        }
        for s, system in enumerate(systems)
    }


def kendalls_w(ranks: np.ndarray) -> dict[str, Any]:
    """Kendall's W of an m raters × n objects matrix of (mid-)ranks, with the tie
    correction: W = 12·S / (m²(n³ − n) − m·ΣT), S the sum of squared deviations of
    the objects' rank sums from their mean, T = Σ(t³ − t) over each rater's ties;
    its chi-squared statistic m(n − 1)W on n − 1 degrees of freedom. None where
    undefined (fewer than two raters or objects, or every rater tying everything)."""
    ranks = np.asarray(ranks, dtype=float)
    m, n = ranks.shape if ranks.ndim == 2 else (0, 0)
    if m < 2 or n < 2:
        return {"w": None, "chi2": None, "p": None, "n_raters": int(m), "n_objects": int(n)}
    sums = ranks.sum(axis=0)
    s = float(((sums - sums.mean()) ** 2).sum())
    ties = 0.0
    for row in ranks:
        _, t = np.unique(row, return_counts=True)
        ties += float((t**3 - t).sum())
    denominator = m**2 * (n**3 - n) - m * ties
    if denominator <= 0:
        return {"w": None, "chi2": None, "p": None, "n_raters": int(m), "n_objects": int(n)}
    w = 12 * s / denominator
    chi2 = m * (n - 1) * w
    return {
        "w": clean(w),
        "chi2": clean(chi2),
        "p": clean(scipy_stats.chi2.sf(chi2, n - 1)),
        "n_raters": int(m),
        "n_objects": int(n),
    }


def concordance(frame: pd.DataFrame) -> dict[str, Any]:
    """Kendall's W among the raters of each context (over its candidates, mid-ranks),
    then the mean W and the share of contexts whose test has p < 0.05."""
    frame = frame.assign(mid=mid_ranks(frame))
    per_context = []
    for context, rows in frame.groupby("context", sort=True):
        matrix = rows.pivot_table(index="rater", columns="candidate", values="mid")
        matrix = matrix.dropna(axis=1)  # candidates every rater ranked
        per_context.append({"context": str(context), **kendalls_w(matrix.to_numpy())})
    values = [c["w"] for c in per_context if c["w"] is not None]
    tested = [c for c in per_context if c["p"] is not None]
    return {
        "per_context": per_context,
        "mean_w": clean(np.mean(values)) if values else None,
        "n_contexts": len(values),
        "share_significant": clean(sum(c["p"] < SIGNIFICANCE for c in tested) / len(tested))
        if tested
        else None,
    }


def friedman(blocks: pd.DataFrame) -> dict[str, Any]:
    """The Friedman test across systems over the blocks that rank every system
    (``scipy.stats.friedmanchisquare``, which corrects for ties); None with fewer than
    three systems or two such blocks."""
    matrix = blocks.pivot_table(index=["rater", "context"], columns="source", values="rank")
    matrix = matrix.dropna()
    result = {"statistic": None, "p": None, "n_blocks": len(matrix), "n_systems": matrix.shape[1]}
    if matrix.shape[1] < 3 or len(matrix) < 2:
        return result
    statistic, p = scipy_stats.friedmanchisquare(*matrix.to_numpy().T)
    return {**result, "statistic": clean(statistic), "p": clean(p)}


def implied_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """The pairwise answers a ranking implies (``PAIRWISE_FRAME``): within each
    block, every pair of candidates from different systems, the one ranked above
    winning and an equal rank a tie, as if shown unswapped."""
    left = frame[["rater", "context", "candidate", "source", "rank"]]
    pairs = left.merge(left, on=["rater", "context"], suffixes=("_1", "_2"))
    pairs = pairs[
        (pairs["candidate_1"] < pairs["candidate_2"]) & (pairs["source_1"] != pairs["source_2"])
    ]
    r1, r2 = pairs["rank_1"].to_numpy(), pairs["rank_2"].to_numpy()
    return pd.DataFrame(
        {
            "context": pairs["context"].to_numpy(),
            "first": pairs["candidate_1"].to_numpy(),
            "second": pairs["candidate_2"].to_numpy(),
            "first_source": pairs["source_1"].to_numpy(),
            "second_source": pairs["source_2"].to_numpy(),
            "rater": pairs["rater"].to_numpy(),
            "choice": np.where(r1 < r2, CHOICE_A, np.where(r1 > r2, CHOICE_B, CHOICE_TIE)),
            "swapped": False,
        }
    )


def ranking_cell(
    frame: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """One group's rankings in one stage (``RANKING_FRAME``)."""
    blocks = block_ranks(frame)
    return {
        "n_rankings": int(frame.groupby(["rater", "context"]).ngroups),
        "n_contexts": int(frame["context"].nunique()),
        "systems": mean_ranks(blocks, resamples=resamples, seed=seed),
        "concordance": concordance(frame),
        "friedman": friedman(blocks),
    }


__all__ = [
    "PAIRWISE_FRAME",
    "RANKING_FRAME",
    "bradley_terry",
    "comparison_matrix",
    "implied_pairs",
    "kendalls_w",
    "pair_outcomes",
    "pairwise_cell",
    "pairwise_groups_compared",
    "ranking_cell",
]
