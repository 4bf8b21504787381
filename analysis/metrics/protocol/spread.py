"""Labels spread to cluster members: a candidate selection annotated only each drawn
cluster's representative; giving every member of the cluster (removed duplicates
included) its representative's majority label estimates the coherent rate of every
generated candidate, per generation setting, beside the rate of the representatives
alone (the non-expert error-scheme paper's estimate per decoding setting).

Per stage, group and generation setting (each key of the members' metadata and each of
its values, as :mod:`.generation` names them, and ``all``):

* ``n_members``: the members of the stage's drawn clusters with that setting (the
  same for every group that judged in the stage);
* ``n_members_labelled``: those whose representative has a majority label in the group
  (:func:`.items.majority_label`: at least 2 raters, no tie);
* ``spread_coherent_rate``: the share of the labelled members whose label is coherent;
* ``n_representatives``, ``n_representatives_labelled`` and
  ``representative_coherent_rate``: the same over the representatives alone (each with
  its own setting).
"""

from __future__ import annotations

import pandas as pd

from .generation import generation_values
from .items import MAJORITY_COHERENT, NO_MAJORITY, majority_label

ALL_SETTINGS = "all"
SPREAD_COLUMNS = [
    "stage",
    "group",
    "key",
    "value",
    "n_members",
    "n_members_labelled",
    "spread_coherent_rate",
    "n_representatives",
    "n_representatives_labelled",
    "representative_coherent_rate",
]


def item_majorities(judgements: pd.DataFrame) -> pd.DataFrame:
    """Each (stage, item, group)'s majority label from its judgements' ``coherent``."""
    grouped = judgements.groupby(["stage", "item", "group"], observed=True)["coherent"]
    counts = grouped.agg(votes="sum", raters="size").reset_index()
    counts["label"] = majority_label(votes=counts["votes"], raters=counts["raters"])
    return counts[["stage", "item", "group", "label"]]


def label_spread(*, members: pd.DataFrame, judgements: pd.DataFrame) -> list[dict]:
    """Rows of :data:`SPREAD_COLUMNS` (stages, groups, keys and values sorted; ``all``
    first). ``members``: one row per member of a drawn cluster: ``stage``, ``item`` (the
    representative's reflection id), ``member`` (the pool candidate's id),
    ``representative`` (whether it is the one annotated) and ``generation`` (its
    metadata as JSON text). ``judgements``: ``stage``, ``item``, ``group``,
    ``coherent`` (the judgements that count)."""
    if members.empty or judgements.empty:
        return []
    labels = item_majorities(
        judgements.loc[judgements["stage"].isin(members["stage"].unique())]
    ).astype({"stage": object, "group": object})
    # A candidate may be a member in two stages' selections: its settings once.
    once = members.drop_duplicates("member")
    settings = generation_values(generation=once.set_index("member")["generation"])
    settings = pd.concat(
        [
            pd.DataFrame({"item": once["member"], "key": ALL_SETTINGS, "value": ALL_SETTINGS}),
            settings.astype({"key": object, "value": object}),
        ],
        ignore_index=True,
    ).rename(columns={"item": "member"})
    # Every member counts for every group that judged in its stage; a member whose
    # representative the group has no majority on is unlabelled.
    groups = labels[["stage", "group"]].drop_duplicates()
    rows = (
        members[["stage", "item", "member", "representative"]]
        .astype({"stage": object})
        .merge(groups, on="stage")
        .merge(settings, on="member")
        .merge(labels, on=["stage", "item", "group"], how="left")
    )
    rows["label"] = rows["label"].fillna(NO_MAJORITY)
    rows["labelled"] = rows["label"] != NO_MAJORITY
    rows["coherent"] = rows["label"] == MAJORITY_COHERENT
    rows["rep_labelled"] = rows["labelled"] & rows["representative"]
    rows["rep_coherent"] = rows["coherent"] & rows["representative"]
    table = (
        rows.groupby(["stage", "group", "key", "value"], sort=False, observed=True)
        .agg(
            n_members=("member", "size"),
            n_members_labelled=("labelled", "sum"),
            n_coherent=("coherent", "sum"),
            n_representatives=("representative", "sum"),
            n_representatives_labelled=("rep_labelled", "sum"),
            n_rep_coherent=("rep_coherent", "sum"),
        )
        .reset_index()
    )
    table["spread_coherent_rate"] = table["n_coherent"] / table["n_members_labelled"].where(
        table["n_members_labelled"] > 0
    )
    table["representative_coherent_rate"] = table["n_rep_coherent"] / table[
        "n_representatives_labelled"
    ].where(table["n_representatives_labelled"] > 0)
    table["first"] = table["key"] != ALL_SETTINGS
    table = table.sort_values(["stage", "group", "first", "key", "value"], kind="stable")
    out = []
    for record in table[SPREAD_COLUMNS].to_dict("records"):
        for column in SPREAD_COLUMNS[4:]:
            value = record[column]
            if column.endswith("_rate"):
                record[column] = None if pd.isna(value) else float(value)
            else:
                record[column] = int(value)
        record["stage"], record["group"] = str(record["stage"]), str(record["group"])
        out.append(record)
    return out
