"""Most-evident-error (MEE) agreement: consensus adjustment and category merging."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..bootstrap import DEFAULT_RESAMPLES
from .summary import agreement_summary


def _selected(judgements: pd.DataFrame, categories: Sequence[str]) -> pd.DataFrame:
    return judgements[list(categories)].fillna(False).astype(bool)


def all_incoherent(judgements: pd.DataFrame, *, item: str = "item", coherent: str = "coherent"):
    """Whether each judgement's item was judged incoherent by every one of its raters
    (a boolean Series aligned with ``judgements``): the items whose errors the
    category agreements compare."""
    incoherent = ~judgements[coherent].astype(bool)
    return incoherent.groupby(judgements[item], observed=True).transform("all")


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
      ``categories`` order): "a category that all annotators of the item
      selected".

    Returns a Series aligned with ``judgements`` (object dtype, NaN = none).
    """
    categories = list(categories)
    merge = dict(merge or {})
    labels = list(dict.fromkeys(merge.get(slug, slug) for slug in categories))
    selected = _selected(judgements, categories)
    merged = selected
    if merge:
        merged = pd.DataFrame(
            {
                label: selected[[s for s in categories if merge.get(s, s) == label]].any(axis=1)
                for label in labels
            },
            index=judgements.index,
        )
    flags = merged.to_numpy(dtype=bool)
    named = judgements[mee]
    if merge:
        mapped = named.map(merge)  # (a dict: vectorised, unlike a function per row)
        named = mapped.where(mapped.notna(), named)
    if named.notna().any():
        unknown = set(pd.unique(named.dropna())) - set(labels)
        if unknown:
            raise ValueError(f"MEE labels not among the categories: {sorted(map(str, unknown))}")
    first = flags.argmax(axis=1) if labels else np.zeros(len(flags), dtype=np.int64)
    only = pd.Series(
        np.asarray(labels or [np.nan], dtype=object)[first], index=judgements.index, dtype=object
    ).where(flags.sum(axis=1) == 1)
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
    raters judged incoherent, with :func:`mee_labels`' rules.

    Raters without an MEE on such an item leave it with fewer ratings, so
    under the modal-rater rule it drops out of the kappas; ``n_items_all_incoherent``
    says how many items qualified before that.
    """
    # Only the columns read below: the rows of a large frame are copied once, narrow.
    subset = judgements.loc[
        all_incoherent(judgements, item=item, coherent=coherent), [item, rater, mee, *categories]
    ]
    merge = dict(merge or {})
    labels = list(dict.fromkeys(merge.get(slug, slug) for slug in categories))
    frame = pd.DataFrame(
        {
            "item": subset[item].array,
            "rater": subset[rater].array,
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
