"""Coherence per generation setting: for each key of the reflections' generation
metadata (model, decoding, nucleus p, prompt type…) and each of its values, the
label distribution, coherent rate, majority-vote coherent rate and the
distribution of majority most evident errors of the items with that value."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..association import INCOHERENT_UNSPECIFIED, label_weights
from .items import (
    ITEM_KEYS,
    MAJORITY_INCOHERENT,
    MEE_NO_MAJORITY,
    MEE_VARIANTS,
    majority_coherent_counts,
)

#: A value needs at least this many of the group's items in the stage to be reported.
MIN_SETTING_ITEMS = 5
_SCALARS = (str, int, float, bool, type(None))
#: The value a setting the metadata gives as JSON null (no value: e.g. nucleus p
#: under greedy decoding) has in the report.
NOT_SET_VALUE = "null"


def setting_value(value: Any) -> str:
    """A metadata value as the report names it: a string as itself, any other
    scalar as JSON writes it (``0.9`` → ``"0.9"``, ``True`` → ``"true"``,
    ``None`` → :data:`NOT_SET_VALUE`)."""
    if value is None:
        return NOT_SET_VALUE
    return value if isinstance(value, str) else json.dumps(value)


def generation_values(*, generation: pd.Series) -> pd.DataFrame:
    """Reflections' generation metadata in long form: one row per (``item``,
    ``key``, ``value``) with :func:`setting_value` values.

    ``generation`` holds each reflection's metadata as JSON text, indexed by
    reflection id; each distinct text is parsed once (a study has a handful of
    generation settings and many reflections). Non-scalar values (lists,
    objects) and metadata that is not a JSON object are left out."""
    columns = ["item", "key", "value"]
    if generation.empty:
        return pd.DataFrame(columns=columns)
    codes, texts = pd.factorize(generation.to_numpy())
    rows = []
    for code, text in enumerate(texts):
        metadata = json.loads(text)
        if isinstance(metadata, dict):
            rows += [
                (code, str(key), setting_value(value))
                for key, value in metadata.items()
                if isinstance(value, _SCALARS)
            ]
    settings = pd.DataFrame(rows, columns=["code", "key", "value"])
    ids = pd.DataFrame({"item": generation.index.to_numpy(), "code": codes})
    long = ids.merge(settings, on="code")[columns]
    # A handful of distinct keys and values: categoricals, so grouping by them is cheap.
    return long.astype({"key": "category", "value": "category"})


def item_label_sums(
    *, judgements: pd.DataFrame, items: pd.DataFrame, categories: Sequence[str]
) -> pd.DataFrame:
    """``items`` (:func:`~analysis.metrics.protocol.items.item_table` rows) with one
    column per label of :func:`~analysis.metrics.label_weights`: the sum of the
    item's judgements' weights, so that a label distribution over any set of items
    is their sums ÷ their judgements."""
    weights = label_weights(judgements=judgements, categories=categories)
    sums = weights.groupby([judgements[key] for key in ITEM_KEYS]).sum()
    return items.join(sums, on=ITEM_KEYS)


def generation_settings(
    *,
    items: pd.DataFrame,
    values: pd.DataFrame,
    categories: Sequence[str],
    min_items: int = MIN_SETTING_ITEMS,
    mee_merge: Mapping[str, str] | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{key: {value: entry}}`` for one group and stage.

    ``items``: the cell's rows of :func:`item_label_sums`; ``values``:
    :func:`generation_values`. A (key, value) with fewer than ``min_items`` of the
    cell's items is left out. Per entry: ``n_items``, ``n_judgements``; ``coherent_rate`` (coherent ÷
    judgements of those items); ``majority_coherent_rate`` (share of the items with
    at least 2 raters whose majority said coherent, null without such items);
    ``label_distribution`` (as the report's, over those items' judgements);
    ``majority_mee``: over the items whose majority said incoherent, the share of
    each majority most evident error and of ``"no_majority"`` (null shares without
    such items); ``majority_mee_variants``, when ``items`` has the variants' columns
    (``item_table(mee_variants=...)``, ``mee_merge`` being its merge): the same per
    variant of :data:`~analysis.metrics.protocol.items.MEE_VARIANTS`, the merged ones
    over the merged labels.
    """
    if items.empty or values.empty:
        return {}
    categories = list(categories)
    labels = ["coherent", *categories, INCOHERENT_UNSPECIFIED]
    variants = {name: column for name, (column, _, _) in MEE_VARIANTS.items() if column in items}
    merged_labels = list(dict.fromkeys((mee_merge or {}).get(slug, slug) for slug in categories))
    columns = [
        "n_raters",
        "coherence_score",
        "majority_label",
        "majority_mee",
        *variants.values(),
        *labels,
    ]
    # The cell's row of each (item, key, value); an item is one row of the cell.
    position = pd.Index(items["item"]).get_indexer(values["item"])
    found = position >= 0
    merged = (
        items[columns]
        .iloc[position[found]]
        .reset_index(drop=True)
        .assign(
            item=values["item"].array[found],
            key=values["key"].array[found],
            value=values["value"].array[found],
        )
    )
    keys = ["key", "value"]
    counted = merged.groupby(keys, sort=True).agg(
        n_items=("item", "size"),
        n_judgements=("n_raters", "sum"),
        n_coherent=("coherence_score", "sum"),
    )
    counted = counted.loc[counted["n_items"] >= min_items]
    if counted.empty:
        return {}
    merged = merged.loc[pd.MultiIndex.from_frame(merged[keys]).isin(counted.index)]
    majority = majority_coherent_counts(merged, by=keys)
    shares = merged.groupby(keys, sort=True)[labels].sum()
    incoherent = merged.loc[merged["majority_label"] == MAJORITY_INCOHERENT]
    mee_counts = _mee_counts(incoherent, keys, "majority_mee", categories)
    variant_counts = {
        name: _mee_counts(
            incoherent, keys, column, merged_labels if name in MERGED_VARIANTS else categories
        )
        for name, column in variants.items()
    }
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for (key, value), row in counted.iterrows():
        n_rated = int(majority.at[(key, value), "n_majority_items"])
        entry = result.setdefault(key, {})[value] = {
            "n_items": int(row["n_items"]),
            "n_judgements": int(row["n_judgements"]),
            "coherent_rate": float(row["n_coherent"] / row["n_judgements"]),
            "majority_coherent_rate": float(
                majority.at[(key, value), "n_majority_coherent"] / n_rated
            )
            if n_rated
            else None,
            "label_distribution": {
                label: float(shares.at[(key, value), label] / row["n_judgements"])
                for label in labels
            },
            "majority_mee": _mee_shares(mee_counts, (key, value), categories),
        }
        if variants:
            entry["majority_mee_variants"] = {
                name: _mee_shares(
                    counts,
                    (key, value),
                    merged_labels if name in MERGED_VARIANTS else categories,
                )
                for name, counts in variant_counts.items()
            }
    return result


#: The variants whose MEEs are merged (their shares are over the merged labels).
MERGED_VARIANTS = frozenset(name for name, (_, _, merged) in MEE_VARIANTS.items() if merged)


def _mee_counts(
    incoherent: pd.DataFrame, keys: list[str], column: str, labels: Sequence[str]
) -> pd.DataFrame:
    """Per (key, value): how many incoherent-majority items have each majority MEE in
    ``column`` (and no majority)."""
    return (
        incoherent.groupby([*keys, column], sort=True)
        .size()
        .unstack(column, fill_value=0)
        .reindex(columns=[*labels, MEE_NO_MAJORITY], fill_value=0)
    )


def _mee_shares(counts: pd.DataFrame, at: tuple, labels: Sequence[str]) -> dict:
    """Each label's (and no majority's) share of the (key, value)'s incoherent-majority
    items, null shares without any."""
    mee = counts.loc[at] if at in counts.index else None
    n_incoherent = int(mee.sum()) if mee is not None else 0
    return {
        slug: float(mee[slug] / n_incoherent) if n_incoherent else None
        for slug in [*labels, MEE_NO_MAJORITY]
    }


#: How a crossed cell's values are joined into one value of the crossed "setting".
CROSS_SEPARATOR = "\x1f"


def crossed_values(*, values: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """:func:`generation_values` rows for the settings ``keys`` crossed: one row per
    item carrying any of them, its ``key`` the keys joined by " × " and its ``value``
    each key's value (:data:`NOT_SET_VALUE` where the item lacks the key) joined by
    :data:`CROSS_SEPARATOR`, so :func:`generation_settings` reads each combination as
    one value."""
    keys = list(keys)
    columns = ["item", "key", "value"]
    chosen = values.loc[values["key"].astype(str).isin(keys)]
    if not keys or chosen.empty:
        return pd.DataFrame(columns=columns)
    wide = (
        chosen.assign(key=chosen["key"].astype(str), value=chosen["value"].astype(str))
        .pivot(index="item", columns="key", values="value")
        .reindex(columns=keys)
        .fillna(NOT_SET_VALUE)
    )
    joined = wide[keys[0]].str.cat([wide[k] for k in keys[1:]], sep=CROSS_SEPARATOR)
    return pd.DataFrame(
        {"item": wide.index.to_numpy(), "key": " × ".join(keys), "value": joined.to_numpy()}
    )[columns]


def crossed_entries(settings: dict, keys: Sequence[str]) -> list[dict[str, Any]]:
    """:func:`generation_settings` of :func:`crossed_values` as a list: per combination,
    ``values`` ({key: value}) and the entry's numbers, in the combinations' order."""
    (per_value,) = settings.values() if settings else ({},)
    return [
        {"values": dict(zip(keys, combination.split(CROSS_SEPARATOR), strict=True)), **entry}
        for combination, entry in per_value.items()
    ]
