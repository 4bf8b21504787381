"""The item-level table: one row per (stage, item, group), the unit of the
majority vote, behind the system-level statistics and the item export.

This module applies the majority rule
(:func:`analysis.metrics.agreement.majority_holds`) to the item table, for the
system-level statistics and the item export: an item's *majority label* for a
group is ``"coherent"`` when more than half of the group's raters of the item judged it
coherent, ``"incoherent"`` when more than half judged it incoherent, and
``"no majority"`` with fewer than 2 raters or on a tie. Its *majority MEE*
(only when the majority label is ``"incoherent"``) is the most evident error
named by more than half of the item's incoherent raters (a rater who selected
a single category has it as their MEE, :func:`~analysis.metrics.mee_labels`),
else ``"no_majority"``.

Building the table of a study (outside this Django-free package)::

    categories = selectors.report_categories(study_id=...)
    frame = selectors.judgements_frame(study_id=..., include_expired=..., exclude_sources=...)
    data = report.judgements_with_categories(frame, categories)
    table = item_table(judgements=data, categories=[c.slug for c in categories])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..agreement import MIN_MAJORITY_RATERS, majority_holds
from .errors import mee_labels

MAJORITY_COHERENT = "coherent"
MAJORITY_INCOHERENT = "incoherent"
NO_MAJORITY = "no majority"
#: The majority MEE of an incoherent-majority item on which no error has a majority.
MEE_NO_MAJORITY = "no_majority"

ITEM_KEYS = ["stage", "item", "group"]
#: The judgement columns :func:`item_table` reads (besides one per category).
ITEM_TABLE_INPUT = [
    "stage",
    "stage_position",
    "dialogue_id",
    "source",
    "item",
    "group",
    "rater",
    "coherent",
    "empathy",
    "mee",
]
ITEM_COLUMNS = [
    "stage",
    "stage_position",
    "dialogue_id",
    "source",
    "item",
    "group",
    "n_raters",
    "coherence_score",
    "majority_label",
    "majority_mee",
    "empathy_mean",
    "n_descriptions",
]


def majority_label(
    *,
    votes: np.ndarray | pd.Series,
    raters: np.ndarray | pd.Series,
    min_raters: int = MIN_MAJORITY_RATERS,
) -> np.ndarray:
    """The majority label of each item from how many of its ``raters`` gave the
    coherent vote (``votes``): ``"coherent"``, ``"incoherent"`` or
    ``"no majority"`` (fewer than ``min_raters`` raters, or a tie). Arrays of
    equal length. ``min_raters`` is 2 everywhere except the between-group
    agreement, which takes a lone rater's answer as the group's label."""
    votes = np.asarray(votes, dtype=np.int64)
    raters = np.asarray(raters, dtype=np.int64)
    return np.select(
        [
            majority_holds(votes=votes, raters=raters, min_raters=min_raters),
            majority_holds(votes=raters - votes, raters=raters, min_raters=min_raters),
        ],
        [MAJORITY_COHERENT, MAJORITY_INCOHERENT],
        default=NO_MAJORITY,
    ).astype(object)


def majority_coherent_counts(items: pd.DataFrame, *, by: Sequence[str]) -> pd.DataFrame:
    """Per group of item-table rows (``by``: columns of :func:`item_table`'s
    rows): ``n_items``, ``n_majority_items`` (the items with at least
    :data:`MIN_MAJORITY_RATERS` raters, which can have a majority) and
    ``n_majority_coherent`` (those whose majority label is coherent). Sorted by
    ``by``."""
    frame = pd.DataFrame(
        {
            **{key: items[key].array for key in by},
            "rated": (items["n_raters"] >= MIN_MAJORITY_RATERS).to_numpy(),
            "coherent": (items["majority_label"] == MAJORITY_COHERENT).to_numpy(),
        }
    )
    return frame.groupby(list(by), sort=True).agg(
        n_items=("rated", "size"),
        n_majority_items=("rated", "sum"),
        n_majority_coherent=("coherent", "sum"),
    )


#: The majority MEE's variants (``item_table(mee_variants=...)``): the column, and
#: whether its raters' MEEs are consensus-adjusted and merged (``mee_labels``).
MEE_VARIANTS = {
    "consensus_adjusted": ("majority_mee_consensus_adjusted", True, False),
    "hallucinatory_merged": ("majority_mee_hallucinatory_merged", False, True),
    "hallucinatory_merged_consensus_adjusted": (
        "majority_mee_hallucinatory_merged_consensus_adjusted",
        True,
        True,
    ),
}


def item_table(
    *,
    judgements: pd.DataFrame,
    categories: Sequence[str],
    offered: Mapping[str, Sequence[str]] | None = None,
    mee_variants: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per (stage, item, group) of the analysed judgements.

    ``judgements``: one row per judgement with columns ``stage``,
    ``stage_position``, ``dialogue_id``, ``source``, ``item`` (the reflection
    id), ``group``, ``rater``, ``coherent`` (bool), ``empathy`` (1–5 or
    missing), ``mee`` (the named most evident error's slug, or missing) and one
    boolean column per slug in ``categories`` (the report's analysed frame,
    :func:`analysis.report.build.judgements_with_categories`); optionally ``described``
    (bool: the answer has a description; absent: none has). ``offered`` maps a stage
    to the category slugs its "No" offered; a stage offering none (a free-text stage)
    has no majority MEE at all, not ``"no_majority"``.

    Returns a DataFrame with :data:`ITEM_COLUMNS`, sorted by stage position,
    dialogue id, source, item and group (``str`` order), index 0..n-1:

    * ``n_raters``: the group's judgements of the item; ``coherence_score``:
      how many were coherent;
    * ``majority_label``: :func:`majority_label`;
    * ``majority_mee``: the category slug named by more than half of the item's
      incoherent raters, ``"no_majority"`` when none is, missing (NaN) unless
      the majority label is ``"incoherent"``;
    * ``empathy_mean``: mean of the item's empathy ratings (NaN when none);
    * ``n_descriptions``: the group's answers of the item with a description.

    With ``mee_variants`` (the merge: category slug → merged label, e.g. the three
    hallucination categories → ``hallucinatory``), one more column per
    :data:`MEE_VARIANTS`: the majority MEE with the raters' MEEs consensus-adjusted,
    merged, or both (:func:`~analysis.metrics.protocol.errors.mee_labels`).
    """
    if judgements.empty:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in ITEM_COLUMNS})
    coherent = judgements["coherent"].astype(bool).to_numpy()
    grouped = judgements.groupby(ITEM_KEYS, sort=False, dropna=False)
    codes = grouped.ngroup().to_numpy()
    n_items = int(codes.max()) + 1
    n_raters = np.bincount(codes, minlength=n_items)
    score = np.bincount(codes, weights=coherent, minlength=n_items).astype(np.int64)
    empathy = pd.to_numeric(judgements["empathy"], errors="coerce").to_numpy(dtype=float)
    rated = ~np.isnan(empathy)
    empathy_n = np.bincount(codes[rated], minlength=n_items)
    empathy_sum = np.bincount(codes[rated], weights=empathy[rated], minlength=n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        empathy_mean = np.where(empathy_n > 0, empathy_sum / empathy_n, np.nan)
    label = majority_label(votes=score, raters=n_raters)
    described = (
        judgements["described"].astype(bool).to_numpy()
        if "described" in judgements
        else np.zeros(len(judgements), dtype=bool)
    )
    n_descriptions = np.bincount(codes, weights=described, minlength=n_items).astype(np.int64)

    table = (
        grouped[["stage_position", "dialogue_id", "source"]]
        .first()
        .reset_index()
        .assign(
            n_raters=n_raters,
            coherence_score=score,
            majority_label=label,
            majority_mee=_majority_mee(judgements, categories, codes, label, n_raters - score),
            empathy_mean=empathy_mean,
            n_descriptions=n_descriptions,
        )
    )
    variants = []
    if mee_variants is not None:
        for column, consensus, merged in MEE_VARIANTS.values():
            table[column] = _majority_mee(
                judgements,
                categories,
                codes,
                label,
                n_raters - score,
                consensus=consensus,
                merge=mee_variants if merged else None,
            )
            variants.append(column)
    without_categories = [stage for stage, slugs in (offered or {}).items() if not slugs]
    if without_categories:
        for column in ("majority_mee", *variants):
            table.loc[table["stage"].isin(without_categories), column] = None
    table["group_key"] = table["group"].map(str)
    table = table.sort_values(
        ["stage_position", "dialogue_id", "source", "item", "group_key"], kind="stable"
    )
    return table[[*ITEM_COLUMNS, *variants]].reset_index(drop=True)


def _majority_mee(
    judgements: pd.DataFrame,
    categories: Sequence[str],
    codes: np.ndarray,
    label: np.ndarray,
    n_incoherent: np.ndarray,
    *,
    consensus: bool = False,
    merge: Mapping[str, str] | None = None,
) -> np.ndarray:
    """Per item code: the majority MEE (see :func:`item_table`)."""
    result = np.full(len(label), None, dtype=object)
    incoherent_items = label == MAJORITY_INCOHERENT
    result[incoherent_items] = MEE_NO_MAJORITY
    rows = ~judgements["coherent"].astype(bool).to_numpy() & incoherent_items[codes]
    if not rows.any():
        return result
    # (The consensus is among one row's raters: its item in its stage and group.)
    subset = judgements.loc[rows].assign(_row=codes[rows])
    named = pd.DataFrame(
        {
            "code": codes[rows],
            "mee": mee_labels(
                judgements=subset,
                categories=categories,
                item="_row",
                consensus=consensus,
                merge=merge,
            ).to_numpy(),
        }
    ).dropna()
    counts = named.groupby(["code", "mee"], sort=False).size().reset_index(name="n")
    winners = counts.loc[2 * counts["n"].to_numpy() > n_incoherent[counts["code"].to_numpy()]]
    result[winners["code"].to_numpy()] = winners["mee"].to_numpy()
    return result
