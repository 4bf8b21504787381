"""Rankings of systems: a context's candidates put in order by each annotator, best
first (pairwise preferences: :mod:`.pairwise`).

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

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from studies.protocol import CHOICE_A, CHOICE_B, CHOICE_TIE

from .._common import clean
from ..bootstrap import DEFAULT_RESAMPLES, percentile_interval
from .systems import SIGNIFICANCE

#: One row per ranked candidate: its context, rater, candidate, system and
#: competition rank (1 the best; 1, 2, 2, 4 with a tie).
RANKING_FRAME = ["context", "rater", "candidate", "source", "rank"]


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
