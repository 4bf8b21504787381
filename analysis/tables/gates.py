"""The report's gated-stage tables (its ``gated`` block): what each gate decided and
saved, and how the gated groups answered by the strength of the deciding majority."""

from __future__ import annotations

from .model import GROUP, STAGE, Key, Measure, Table, at, build_table

RULE = Key("Rule", ("rule_label",))
DECIDING = Key("Decided by", ("deciding",))
STRENGTH = Key("Deciding majority", ("strength",))


def _entries(report: dict) -> list[dict]:
    return list((report.get("gated") or {}).get("stages") or [])


def gated_table(report: dict) -> Table:
    entries = [
        (
            (
                gate["stage"],
                gate["rule_label"],
                f"{gate['deciding_group']} in {gate['source_stage']}"
                + (f" and {gate['other_group']}" if gate.get("other_group") else ""),
            ),
            gate,
        )
        for gate in _entries(report)
    ]
    return build_table(
        slug="gated",
        caption="Gated stages: the items their gates let through",
        keys=[STAGE, RULE, DECIDING],
        measures=[
            Measure("items", "Items", "gated_items", at("items"), "count"),
            Measure("passed", "Passed", "gated_passed", at("passed"), "count"),
            Measure("not_passed", "Not passed", "gated_not_passed", at("not_passed"), "count"),
            Measure("undecided", "Undecided", "gated_undecided", at("undecided"), "count"),
            Measure("flagged", "Flagged", "gated_flagged", at("flagged"), "count"),
            Measure(
                "judgements_saved",
                "Judgements saved",
                "gated_judgements_saved",
                at("judgements_saved"),
                "count",
            ),
        ],
        entries=entries,
        note="An item is decided once all k ratings of the deciding group are in; a "
        "decision never changes. Flagged decisions rest on a batch rejected since, and "
        "stand.",
        empty="No gated stage.",
    )


def gated_answers_table(report: dict) -> Table:
    entries = []
    for gate in _entries(report):
        agreement = {a["group"]: a for a in gate.get("agreement") or []}
        for row in gate.get("by_strength") or []:
            entries.append(
                (
                    (gate["stage"], row["group"], row["strength"]),
                    {**row, "agreement": agreement.get(row["group"], {})},
                )
            )
    return build_table(
        slug="gated-answers",
        caption="Gated stages: the gated groups' answers by the deciding majority",
        keys=[STAGE, GROUP, STRENGTH],
        measures=[
            Measure("n_items", "Items", "gated_strength_items", at("n_items"), "count"),
            Measure(
                "n_judgements", "Answers", "gated_strength_answers", at("n_judgements"), "count"
            ),
            Measure("yes_rate", "Yes rate", "gated_yes_rate", at("yes_rate")),
            Measure(
                "agreement",
                "Majorities agree",
                "gated_agreement",
                at("agreement", "agreement"),
                count=("agreement_items", at("agreement", "n_items")),
            ),
        ],
        entries=entries,
        note="The deciding majority is how many of the deciding group's raters gave the "
        "majority's answer. Majorities agree compares, over the items both have a "
        "majority on, the gated group's majority with the deciding group's (per group, "
        "the same on each of its rows).",
        empty="No answers in a gated stage yet.",
    )


ITEM = Key(
    "Item",
    ("dialogue", "source", "reflection"),
    show=lambda dialogue, source, reflection: f"{dialogue} · {source} · #{reflection}",
)
DECIDING_MAJORITY = Key(
    "Deciding majority",
    ("deciding", "other"),
    show=lambda deciding, other: deciding + (f"; second group: {other}" if other else ""),
    header=False,
)
ADJUDICATED = Key("Adjudicated label", ("label",), header=False)


def gated_items_table(report: dict) -> Table:
    entries = [
        (
            (
                gate["stage"],
                row["dialogue"],
                row["source"],
                row["reflection"],
                row["deciding"],
                row["other"],
                row["group"],
                row["label"],
            ),
            row,
        )
        for gate in _entries(report)
        for row in gate.get("adjudicated") or []
    ]
    return build_table(
        slug="gated-items",
        caption="Gated stages: each item's adjudicated label beside the deciding majority",
        keys=[STAGE, ITEM, DECIDING_MAJORITY, GROUP, ADJUDICATED],
        measures=[
            Measure("n_answers", "Answers", "gated_item_answers", at("n_answers"), "count"),
            Measure("yes", "Yes", "gated_item_yes", at("yes"), "count"),
        ],
        entries=entries,
        note="Per item of a gated stage, the deciding group's majority (how many of its "
        "raters said Yes) beside the gated group's own majority on the coherence question, "
        "the adjudicated label. A lone rater's answer is the group's label; a tie is no "
        "majority.",
        empty="No answers in a gated stage yet.",
    )


def gated_tables(report: dict) -> list[Table]:
    if not _entries(report):
        return []
    return [gated_table(report), gated_answers_table(report), gated_items_table(report)]
