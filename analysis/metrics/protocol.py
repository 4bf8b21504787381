"""Measures specific to the reflection-coherence protocol (BRIEF §5).

Agreement summaries with bootstrap intervals, most-evident-error (MEE)
agreement with consensus adjustment and category merging, empathy agreement,
between-group agreement, cross-stage shift on human reflections, human vs
synthetic, and per-annotator consistency. Built on
:mod:`analysis.metrics.agreement`, :mod:`analysis.metrics.association` and
:mod:`analysis.metrics.bootstrap`; no Django.

Judgements come in long form, one row per (item, rater), with a boolean
``coherent`` column, one boolean column per error category (named by its
slug) and an ``mee`` column holding the most evident error's slug (missing
when the rater gave none).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from .agreement import (
    alpha_from_counts,
    count_table,
    kappa_from_counts,
    landis_koch_band,
    modal_rows,
)
from .association import chi2_test, wilcoxon_paired
from .bootstrap import DEFAULT_RESAMPLES, alpha_ci, kappa_ci

#: The empathy scale (1–5) merged to three points: disagree / neutral / agree.
EMPATHY_MERGED = {1: "disagree", 2: "disagree", 3: "neutral", 4: "agree", 5: "agree"}
EMPATHY_MERGED_ORDER = ("disagree", "neutral", "agree")


def agreement_summary(
    *,
    ratings: pd.DataFrame,
    categories: Sequence[Hashable],
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    alpha_level: Literal["nominal", "ordinal", "interval"] = "nominal",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Fleiss' and Randolph's kappa (with their Landis & Koch bands) and
    Krippendorff's alpha of one label, each with a 95% item-bootstrap interval.

    ``categories`` is every possible label in order (Randolph's q, the alpha
    value domain). Kappas use the items with the modal rater count
    (``n_items``, ``raters_per_item``); alpha uses every item with at least
    two ratings (``n_items_alpha``). ``resamples`` = 0 turns the intervals off
    (they are then ``[null, null]``).
    """
    table = count_table(ratings=ratings, item=item, rater=rater, label=label, categories=categories)
    kept, modal = modal_rows(table)
    counts = table.to_numpy()
    fleiss = kappa_from_counts(kept, method="fleiss")
    randolph = kappa_from_counts(kept, method="randolph")
    alpha = alpha_from_counts(counts, level=alpha_level)

    def interval(value, compute) -> list[float | None]:
        return list(compute()) if value is not None else [None, None]

    return {
        "n_items": len(kept),
        "raters_per_item": modal,
        "fleiss_kappa": fleiss,
        "fleiss_kappa_ci": interval(
            fleiss, lambda: kappa_ci(kept, method="fleiss", resamples=resamples, seed=seed)
        ),
        "fleiss_band": landis_koch_band(fleiss),
        "randolph_kappa": randolph,
        "randolph_kappa_ci": interval(
            randolph, lambda: kappa_ci(kept, method="randolph", resamples=resamples, seed=seed)
        ),
        "randolph_band": landis_koch_band(randolph),
        "krippendorff_alpha": alpha,
        "krippendorff_alpha_ci": interval(
            alpha,
            lambda: alpha_ci(
                counts, level_of_measurement=alpha_level, resamples=resamples, seed=seed
            ),
        ),
        "n_items_alpha": int((counts.sum(axis=1) >= 2).sum()) if counts.size else 0,
    }


# --------------------------------------------------------------------------- most evident error


def _selected(judgements: pd.DataFrame, categories: Sequence[str]) -> pd.DataFrame:
    return judgements[list(categories)].fillna(False).astype(bool)


def mee_labels(
    *,
    judgements: pd.DataFrame,
    categories: Sequence[str],
    item: str = "item",
    mee: str = "mee",
    consensus: bool = False,
    merge: Mapping[str, str] | None = None,
) -> pd.Series:
    """Each judgement's most evident error as used by the MEE agreement.

    * A rater who selected a single category has that category as MEE; a rater
      who selected several and named none has no MEE (missing).
    * ``merge`` maps category slugs to merged labels (e.g. the three
      hallucination categories → ``hallucinatory``); selections and MEEs are
      mapped before anything else, unmapped slugs stay themselves.
    * ``consensus``: where the item's raters share selected categories (every
      rater of the item selected them), every rater's MEE becomes one shared
      category: the one most often named as MEE on the item (ties: the first in
      ``categories`` order), BRIEF §5's "a category that all annotators of the
      item selected".

    Returns a Series aligned with ``judgements`` (object dtype, NaN = none).
    """
    categories = list(categories)
    merge = dict(merge or {})
    labels = list(dict.fromkeys(merge.get(slug, slug) for slug in categories))
    selected = _selected(judgements, categories)
    merged = pd.DataFrame(
        {
            label: selected[[s for s in categories if merge.get(s, s) == label]].any(axis=1)
            for label in labels
        },
        index=judgements.index,
    )
    single = merged.sum(axis=1) == 1
    named = judgements[mee].map(lambda slug: merge.get(slug, slug), na_action="ignore")
    if named.notna().any():
        unknown = set(named.dropna()) - set(labels)
        if unknown:
            raise ValueError(f"MEE labels not among the categories: {sorted(map(str, unknown))}")
    only = merged.idxmax(axis=1).where(single)
    result = named.where(named.notna(), only)
    if not consensus or judgements.empty:
        return result

    item_codes, _ = pd.factorize(judgements[item])
    shared = merged.groupby(item_codes).transform("all").to_numpy()
    own = pd.Categorical(result, categories=labels).codes
    # How often each label is named as MEE on the item, -1 where not shared.
    named_counts = np.zeros((item_codes.max() + 1, len(labels)), dtype=np.int64)
    np.add.at(named_counts, (item_codes[own >= 0], own[own >= 0]), 1)
    per_row = np.where(shared, named_counts[item_codes], -1)
    has_shared = shared.any(axis=1)
    replacement = np.asarray(labels, dtype=object)[per_row.argmax(axis=1)]
    adjusted = np.where(has_shared, replacement, result.to_numpy())
    return pd.Series(adjusted, index=judgements.index, dtype=object).where(
        pd.notna(adjusted), np.nan
    )


def mee_agreement(
    *,
    judgements: pd.DataFrame,
    categories: Sequence[str],
    item: str = "item",
    rater: str = "rater",
    coherent: str = "coherent",
    mee: str = "mee",
    consensus: bool = False,
    merge: Mapping[str, str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Agreement on the most evident error among the items that all their
    raters judged incoherent (BRIEF §5), with :func:`mee_labels`' rules.

    Raters without an MEE on such an item leave it with fewer ratings, so
    under the modal-rater rule it drops out of the kappas; ``n_items_all_incoherent``
    says how many items qualified before that.
    """
    incoherent = ~judgements[coherent].astype(bool)
    all_incoherent = incoherent.groupby(judgements[item]).transform("all")
    subset = judgements.loc[all_incoherent]
    merge = dict(merge or {})
    labels = list(dict.fromkeys(merge.get(slug, slug) for slug in categories))
    frame = pd.DataFrame(
        {
            "item": subset[item].to_numpy(),
            "rater": subset[rater].to_numpy(),
            "label": mee_labels(
                judgements=subset,
                categories=categories,
                item=item,
                mee=mee,
                consensus=consensus,
                merge=merge,
            ).to_numpy(),
        }
    )
    summary = agreement_summary(ratings=frame, categories=labels, resamples=resamples, seed=seed)
    summary["n_items_all_incoherent"] = int(subset[item].nunique())
    summary["categories"] = labels
    return summary


# --------------------------------------------------------------------------- empathy


def empathy_agreement(
    *,
    judgements: pd.DataFrame,
    item: str = "item",
    rater: str = "rater",
    coherent: str = "coherent",
    empathy: str = "empathy",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Agreement on the 5-point empathy statement over the items that all their
    raters judged coherent; ``merged`` repeats it on disagree / neutral / agree.
    Krippendorff's alpha is ordinal; the kappas treat the points as nominal."""
    all_coherent = judgements[coherent].astype(bool).groupby(judgements[item]).transform("all")
    subset = judgements.loc[all_coherent]
    ratings = pd.DataFrame(
        {
            "item": subset[item].to_numpy(),
            "rater": subset[rater].to_numpy(),
            "label": pd.to_numeric(subset[empathy], errors="coerce").to_numpy(),
        }
    )
    raw = agreement_summary(
        ratings=ratings,
        categories=[1, 2, 3, 4, 5],
        alpha_level="ordinal",
        resamples=resamples,
        seed=seed,
    )
    merged_ratings = ratings.assign(label=ratings["label"].map(EMPATHY_MERGED))
    merged = agreement_summary(
        ratings=merged_ratings,
        categories=list(EMPATHY_MERGED_ORDER),
        alpha_level="ordinal",
        resamples=resamples,
        seed=seed,
    )
    raw["n_items_all_coherent"] = int(subset[item].nunique())
    raw["merged"] = merged
    return raw


# --------------------------------------------------------------------------- between groups


def majority_labels(*, scores: pd.Series, raters: pd.Series) -> pd.Series:
    """Majority label per item from its coherence score and rater count:
    ``"coherent"`` when more than half judged it coherent, ``"incoherent"`` when
    fewer than half did, missing on a tie (possible with an even rater count)."""
    scores, raters = scores.align(raters, join="inner")
    labels = pd.Series(np.nan, index=scores.index, dtype=object)
    labels[2 * scores > raters] = "coherent"
    labels[2 * scores < raters] = "incoherent"
    return labels


def between_group_agreement(
    *,
    scores: Mapping[str, pd.Series],
    raters: Mapping[str, pd.Series],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Krippendorff's alpha between two groups treated as two raters, on the
    items both judged: nominal on their majority labels, ordinal on their
    coherence scores (domain 0..the largest rater count), each with an item
    bootstrap interval."""
    (name_a, a), (name_b, b) = scores.items()
    common = a.index.intersection(b.index)
    frames = []
    for name, series in ((name_a, a), (name_b, b)):
        majority = majority_labels(scores=series.loc[common], raters=raters[name].loc[common])
        frames.append(
            pd.DataFrame(
                {
                    "item": common,
                    "rater": name,
                    "score": series.loc[common].to_numpy(),
                    "majority": majority.to_numpy(),
                }
            )
        )
    long = pd.concat(frames, ignore_index=True)
    top = int(max(raters[name_a].max(), raters[name_b].max())) if len(common) else 0
    majority_counts = count_table(
        ratings=long, label="majority", categories=["coherent", "incoherent"]
    ).to_numpy()
    score_counts = count_table(
        ratings=long, label="score", categories=list(range(top + 1))
    ).to_numpy()
    alpha_majority = alpha_from_counts(majority_counts, level="nominal")
    alpha_scores = alpha_from_counts(score_counts, level="ordinal")
    return {
        "n_items": len(common),
        "krippendorff_alpha_majority": alpha_majority,
        "krippendorff_alpha_majority_ci": list(
            alpha_ci(majority_counts, resamples=resamples, seed=seed)
        )
        if alpha_majority is not None
        else [None, None],
        "krippendorff_alpha_scores": alpha_scores,
        "krippendorff_alpha_scores_ci": list(
            alpha_ci(score_counts, level_of_measurement="ordinal", resamples=resamples, seed=seed)
        )
        if alpha_scores is not None
        else [None, None],
    }


# --------------------------------------------------------------------------- shifts


def coherent_rate_test(
    *, judgements: pd.DataFrame, by: str, coherent: str = "coherent", order: Sequence = ()
) -> dict[str, Any]:
    """Coherent share per value of ``by`` and the p-value of a chi-squared test
    on the ``by`` × {coherent, incoherent} table (:func:`chi2_test`). With
    ``order``, exactly those values are compared, in that order (null rate when one
    has no judgements); judgements with other values are left out."""
    flags = judgements[coherent].astype(bool)
    grouped = flags.groupby(judgements[by]).agg(["sum", "size"])
    keys = list(order) or list(grouped.index)
    grouped = grouped.reindex(keys)
    rates = {
        str(key): (float(row["sum"] / row["size"]) if row["size"] and row["size"] > 0 else None)
        for key, row in grouped.iterrows()
    }
    table = np.column_stack(
        [grouped["sum"].fillna(0), (grouped["size"] - grouped["sum"]).fillna(0)]
    )
    return {
        "coherent_rate": rates,
        "n_judgements": {str(k): int(v) for k, v in grouped["size"].fillna(0).items()},
        "chi2_p": chi2_test(table=table),
    }


def recurrence_free(
    *,
    judgements: pd.DataFrame,
    rater: str,
    item: str,
    stage: str,
    recurring: str | None = None,
) -> pd.DataFrame:
    """Drop every judgement of an (annotator, reflection) pair judged in more
    than one of the stages present (the recurrence-free view of BRIEF §5), and,
    with ``recurring`` (a boolean column: the annotator had met the reflection
    before, in work not counted here, e.g. a rejected batch), the flagged rows."""
    stages_seen = judgements.groupby([rater, item])[stage].transform("nunique")
    keep = stages_seen < 2
    if recurring is not None:
        keep &= ~judgements[recurring].fillna(False).astype(bool)
    return judgements.loc[keep]


def cross_stage_shift(
    *,
    judgements: pd.DataFrame,
    stage_from: str,
    stage_to: str,
    rater: str = "rater",
    item: str = "item",
    stage: str = "stage",
    coherent: str = "coherent",
    recurring: str | None = None,
) -> dict[str, Any]:
    """Shift in how one group judges the human reflections between two stages.

    ``judgements`` are the group's judgements of human reflections; ``item``
    identifies the human reflection across stages. Coherent share per stage
    with a chi-squared test on all judgements and on the recurrence-free
    subset, and a paired Wilcoxon signed-rank test on the coherence scores of
    the reflections judged in both stages.
    """
    pair = judgements.loc[judgements[stage].isin([stage_from, stage_to])]
    order = [stage_from, stage_to]
    scores = pair.assign(_c=pair[coherent].astype(int)).pivot_table(
        index=item, columns=stage, values="_c", aggfunc="sum"
    )
    if stage_from in scores and stage_to in scores:
        paired = scores[[stage_from, stage_to]].dropna()
        wilcoxon = wilcoxon_paired(a=paired[stage_from], b=paired[stage_to])
        n_paired = len(paired)
    else:
        wilcoxon, n_paired = None, 0
    return {
        "from": stage_from,
        "to": stage_to,
        "all": coherent_rate_test(judgements=pair, by=stage, coherent=coherent, order=order),
        "recurrence_free": coherent_rate_test(
            judgements=recurrence_free(
                judgements=pair, rater=rater, item=item, stage=stage, recurring=recurring
            ),
            by=stage,
            coherent=coherent,
            order=order,
        ),
        "wilcoxon_p": wilcoxon,
        "n_items_paired": n_paired,
    }


# --------------------------------------------------------------------------- annotators


def annotator_consistency(
    *,
    judgements: pd.DataFrame,
    stages: Sequence[str],
    rater: str = "rater",
    item: str = "item",
    stage: str = "stage",
    coherent: str = "coherent",
    recurring: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Per annotator, over their judgements of human reflections (BRIEF §5):

    * ``recurring_identical_rate``: of the human reflections they judged in
      more than one stage, the share they answered the same Yes/No every time
      (null when none recurred); ``n_recurring`` how many;
    * ``nonrecurring_human_coherent_rate``: per stage, the share of the human
      reflections they judged in that stage only that they called coherent
      (null for a stage without any); ``n_nonrecurring`` the counts. With
      ``recurring`` (a boolean column), flagged rows are not "judged in that stage
      only": the annotator had met the reflection before in work not counted here.
    """
    if judgements.empty:
        return {}
    frame = judgements[[rater, item, stage, coherent]].copy()
    frame[coherent] = frame[coherent].astype(bool)
    per_pair = frame.groupby([rater, item]).agg(
        n_stages=(stage, "nunique"), n_yes=(coherent, "sum"), n=(coherent, "size")
    )
    met_again = per_pair.loc[per_pair["n_stages"] > 1]
    identical = (met_again["n_yes"] == 0) | (met_again["n_yes"] == met_again["n"])
    rec = identical.groupby(level=0).agg(["sum", "size"])
    once = frame.join(per_pair["n_stages"], on=[rater, item])
    once_only = once["n_stages"] == 1
    if recurring is not None:
        once_only &= ~judgements[recurring].fillna(False).astype(bool).to_numpy()
    once = once.loc[once_only]
    per_stage = once.groupby([rater, stage])[coherent].agg(["mean", "size"])
    names = sorted(frame[rater].unique(), key=str)
    n_rec = rec["size"].reindex(names, fill_value=0)
    identical_rate = (rec["sum"] / rec["size"]).reindex(names)
    stage_keys = [str(s) for s in stages]
    means = per_stage["mean"].unstack(stage).reindex(index=names, columns=list(stages))
    sizes = per_stage["size"].unstack(stage).reindex(index=names, columns=list(stages))
    means_rows = means.astype(object).where(means.notna(), None).to_numpy().tolist()
    sizes_rows = sizes.fillna(0).astype(int).to_numpy().tolist()
    return {
        str(name): {
            "recurring_identical_rate": None if pd.isna(rate) else float(rate),
            "n_recurring": int(count),
            "nonrecurring_human_coherent_rate": dict(zip(stage_keys, rates_row, strict=True)),
            "n_nonrecurring": dict(zip(stage_keys, sizes_row, strict=True)),
        }
        for name, rate, count, rates_row, sizes_row in zip(
            names, identical_rate, n_rec, means_rows, sizes_rows, strict=True
        )
    }
