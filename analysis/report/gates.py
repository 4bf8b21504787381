"""The report's ``gated`` block: per gated stage, its rule, what its gate decided, the
judgements it saved, and how the gated groups answered the items by the strength of the
deciding majority (:mod:`studies.services.gates` decides; nothing here changes a
decision).

``gated.stages`` lists one entry per gated stage, in the study's order:

* ``items`` (the deciding stage's items), ``passed``, ``not_passed``, ``undecided``
  and ``flagged`` (decisions resting on a batch rejected since: they stand);
* ``judgements_saved``: the items not passed × the gated stage's k × its groups, the
  judgements the gated groups did not have to give;
* ``by_strength``: per gated group and deciding majority ("2 of 3", "3 of 3"), the
  items, the group's answers to the coherence question and their Yes rate;
* ``agreement``: per gated group, the items both it and the deciding group have a
  majority on, and the share on which the two majorities agree;
* ``adjudicated``: per item of the gated stage and gated group that answered it, the
  deciding group's majority (and the second group's, for the rule comparing two)
  beside the gated group's own (its adjudicated label), with its answers and Yes.

Behind the Likert rule the deciding group rated the items rather than said Yes or No:
``by_strength`` and ``agreement`` are empty, and ``adjudicated`` gives the group's
mean rating ("mean 3.67") as the deciding side.

A majority here takes a lone rater's answer as the group's label (``min_raters`` 1), as
the between-group agreement does: a gated stage often has one expert per item.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from studies.protocol import GATE_LIKERT_MEAN_AT_LEAST

from ..metrics.protocol.items import NO_MAJORITY, majority_label

DECISION_COLUMNS = [
    "reflection",
    "dialogue",
    "source",
    "passed",
    "flagged",
    "raters",
    "yes",
    "other_raters",
    "other_yes",
    "mean",  # the Likert rule's: the deciding group's mean rating of the dimension
]
GATED_ANSWER_COLUMNS = ["group", "reflection", "coherent"]


@dataclass(frozen=True)
class GateData:
    """One gate as the block reads it (:func:`analysis.selectors.gates.gate_data`)."""

    stage: str
    source_stage: str
    rule: str
    rule_label: str
    deciding_group: str
    other_group: str | None
    items: int
    decisions: pd.DataFrame  # DECISION_COLUMNS
    answers: pd.DataFrame  # GATED_ANSWER_COLUMNS
    gated_groups: list[str]
    k: int


def gates_build(data: list[GateData] | None) -> dict:
    return {"stages": [_gate_entry(gate) for gate in data or []]}


def _gate_entry(gate: GateData) -> dict:
    decisions = gate.decisions
    passed = int(decisions["passed"].sum()) if not decisions.empty else 0
    decided = len(decisions)
    not_passed = decided - passed
    entry = {
        "stage": gate.stage,
        "source_stage": gate.source_stage,
        "rule": gate.rule,
        "rule_label": gate.rule_label,
        "deciding_group": gate.deciding_group,
        "other_group": gate.other_group,
        "items": gate.items,
        "passed": passed,
        "not_passed": not_passed,
        "undecided": gate.items - decided,
        "flagged": int(decisions["flagged"].sum()) if not decisions.empty else 0,
        "judgements_saved": not_passed * gate.k * len(gate.gated_groups),
        "by_strength": [],
        "agreement": [],
        "adjudicated": [],
    }
    answers = gate.answers
    if decisions.empty or answers.empty:
        return entry
    deciding = decisions.set_index("reflection")
    counts = answers.groupby(["group", "reflection"])["coherent"].agg(["sum", "count"])
    labels = pd.Series(
        majority_label(votes=counts["sum"], raters=counts["count"], min_raters=1),
        index=counts.index,
    )
    if gate.rule == GATE_LIKERT_MEAN_AT_LEAST:
        # The deciding group rated the items, not Yes or No: no majority to set beside.
        entry["adjudicated"] = _adjudicated(gate, deciding, None, counts, labels)
        return entry
    joined = answers.join(deciding[["raters", "yes"]], on="reflection", how="inner")
    larger = np.maximum(joined["yes"], joined["raters"] - joined["yes"])
    joined["strength"] = larger.astype(str) + " of " + joined["raters"].astype(str)
    strength = joined.groupby(["group", "strength"], sort=True).agg(
        n_items=("reflection", "nunique"),
        n_judgements=("coherent", "size"),
        yes_rate=("coherent", "mean"),
    )
    entry["by_strength"] = [
        {
            "group": group,
            "strength": label,
            "n_items": int(row.n_items),
            "n_judgements": int(row.n_judgements),
            "yes_rate": float(row.yes_rate),
        }
        for (group, label), row in strength.iterrows()
    ]
    deciding_label = pd.Series(
        majority_label(votes=deciding["yes"], raters=deciding["raters"], min_raters=1),
        index=deciding.index,
    )
    entry["adjudicated"] = _adjudicated(gate, deciding, deciding_label, counts, labels)
    theirs = (
        deciding_label.reindex(labels.index.get_level_values("reflection"))
        .fillna(NO_MAJORITY)
        .to_numpy()
    )
    both = (labels.to_numpy() != NO_MAJORITY) & (theirs != NO_MAJORITY)
    same = pd.Series((labels.to_numpy() == theirs) & both, index=labels.index)
    counted = pd.Series(both, index=labels.index)
    for group in counted.index.get_level_values("group").unique():
        n = int(counted.loc[group].sum())
        entry["agreement"].append(
            {
                "group": group,
                "n_items": n,
                "agreement": float(same.loc[group].sum() / n) if n else None,
            }
        )
    return entry


def _majority_text(label: str, yes: int, raters: int) -> str:
    return f"{label} ({yes} of {raters} Yes)"


def _adjudicated(
    gate: GateData,
    deciding: pd.DataFrame,
    deciding_label: pd.Series | None,
    counts: pd.DataFrame,
    labels: pd.Series,
) -> list[dict]:
    """Per (gated group, item) answered: the deciding majorities beside the gated
    group's label, in dialogue, source and item order; for the Likert rule
    (``deciding_label`` None), the deciding group's mean rating instead."""
    rows = (
        counts.rename(columns={"sum": "n_yes", "count": "n_answers"})
        .join(labels.rename("label"))
        .reset_index()
    )
    rows = rows[rows["reflection"].isin(deciding.index)]
    other_label = majority_label(
        votes=deciding["other_yes"], raters=deciding["other_raters"], min_raters=1
    )
    said = deciding.assign(
        text=[f"mean {mean:.2f}" if pd.notna(mean) else "no rating" for mean in deciding["mean"]]
        if deciding_label is None
        else [
            _majority_text(label, yes, raters)
            for label, yes, raters in zip(
                deciding_label, deciding["yes"], deciding["raters"], strict=True
            )
        ],
        other_text=[
            _majority_text(label, yes, raters) if raters else None
            for label, yes, raters in zip(
                other_label, deciding["other_yes"], deciding["other_raters"], strict=True
            )
        ],
    )
    rows = rows.join(said[["dialogue", "source", "text", "other_text"]], on="reflection")
    rows = rows.sort_values(["dialogue", "source", "reflection", "group"], kind="stable")
    return [
        {
            "dialogue": row.dialogue,
            "source": row.source,
            "reflection": int(row.reflection),
            "deciding": row.text,
            "other": row.other_text,
            "group": row.group,
            "label": row.label,
            "n_answers": int(row.n_answers),
            "yes": int(row.n_yes),
        }
        for row in rows.itertuples(index=False)
    ]
