"""Pairwise preferences of systems: which system annotators prefer, by how much, how
strongly they agree, and whether two groups order the systems alike (rankings:
:mod:`.ranking`, whose implied wins these statistics read too).

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
#: The ridge (``alpha`` of choix) added when the Bradley–Terry likelihood has no
#: maximum (a system that never wins or never loses).
BT_RIDGE = 0.01
#: The labels of a pairwise answer for agreement: which candidate won, or a tie.
LABELS = ("first", "second", "tie")


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
