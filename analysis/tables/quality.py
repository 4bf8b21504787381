"""The report's annotator-quality, waiting-period, workload and order-effect tables."""

from __future__ import annotations

from collections.abc import Mapping

from ..metrics.protocol.quality import FLAG_BELOW_FLOOR, FLAG_FAST, FLAG_OUTLIER
from .model import GROUP, STAGE, Cell, Column, Key, Measure, Part, Table, at, build_table
from .walk import annotators_in_order, group_order

FLAG_LABELS = {
    FLAG_FAST: "most items faster than the threshold",
    FLAG_BELOW_FLOOR: "agreement below the floor",
    FLAG_OUTLIER: "agreement more than 2 SD below the group's mean",
}


def flag_text(codes: str) -> str:
    """The flags of a row ("fast;agreement_below_floor") in words."""
    return "; ".join(FLAG_LABELS.get(code, code) for code in codes.split(";") if code) or "none"


def quality_entries(report: dict) -> list[tuple[str, str, dict]]:
    """(group, pseudonym, quality entry) in group order, then natural order."""
    quality = report.get("quality") or {}
    groups = [g for g in group_order(report) if g in quality]
    groups += sorted((g for g in quality if g not in groups), key=str)
    return [
        (group, name, quality[group][name] or {})
        for group in groups
        for name in annotators_in_order(quality[group] or {})
    ]


def quality_table(report: dict, links: Mapping[str, str] | None = None) -> Table:
    """One row per annotator. ``links``: pseudonym → the page listing their batches
    (where a researcher rejects them); the dashboard passes it, other renderings not."""
    params = report.get("parameters") or {}
    fast = params.get("fast_seconds")
    floor = params.get("agreement_floor")
    table = build_table(
        slug="quality",
        caption="Annotator quality",
        keys=[
            GROUP,
            Key("Annotator", ("annotator",)),
            Key(
                "Flags",
                ("flags",),
                show=flag_text,
                header=False,
                title=lambda codes: (
                    "Why the annotator's work may need a look" if codes else "No flag raised"
                ),
            ),
        ],
        measures=[
            Measure("n_batches", "Batches", "quality_batches", at("n_batches"), "count"),
            Measure(
                "median_seconds",
                "Median s per item",
                "median_seconds",
                at("median_seconds"),
                digits=1,
            ),
            Measure("fast_share", "Fast share", "fast_share", at("fast_share"), digits=2),
            Measure(
                "attention_failed",
                "Attention checks failed",
                "attention_failed",
                at("attention_failed"),
                "count",
            ),
            Measure(
                "partial_stages",
                "Stages ended early",
                "partial_stages",
                at("partial_stages"),
                "count",
            ),
            Measure("yes_rate", "Yes rate", "yes_rate", at("yes_rate"), digits=2),
            Measure(
                "agreement_with_group",
                "Agreement with group",
                "agreement_with_group",
                at("agreement_with_group"),
                digits=2,
            ),
        ],
        entries=(
            ((group, name, ";".join(entry.get("flags") or [])), entry)
            for group, name, entry in quality_entries(report)
        ),
        note=(f"Fast: answered in less than {fast:g} s. " if isinstance(fast, int | float) else "")
        + (
            f"Flagged when most items are fast, the agreement is below {floor:g}, or it is "
            "more than 2 standard deviations below the group's mean (groups of 5 or more)."
            if isinstance(floor, int | float)
            else ""
        ),
        empty="No annotator has submitted work yet.",
    )
    if not links:
        return table
    columns = [*table.columns, Column("Batches to review", numeric=False)]
    rows = []
    for row in table.rows:
        name = row[1].keys[0]
        url = links.get(name, "")
        part = Part("Open batches", f"{name}'s batches, to review or reject", href=url)
        rows.append([*row, Cell((part,) if url else (), numeric=False)])
    return Table(
        slug=table.slug, caption=table.caption, columns=columns, rows=rows,
        note=table.note, empty=table.empty, extra=table.extra,
    )  # fmt: skip


def waiting_table(report: dict) -> Table:
    periods = report.get("waiting_periods") or {}
    groups = [g for g in group_order(report) if g in periods]
    groups += sorted((g for g in periods if g not in groups), key=str)
    entries = [
        ((group, entry.get("from"), entry.get("to")), entry)
        for group in groups
        for entry in periods[group] or []
    ]
    return build_table(
        slug="waiting-periods",
        caption="Waiting periods between stages (days)",
        keys=[GROUP, Key("From", ("from",)), Key("To", ("to",))],
        measures=[
            Measure("n", "Annotators", "waiting_n", at("n"), "count"),
            Measure("mean_days", "Mean", "waiting_days", at("mean_days"), digits=1),
            Measure("sd_days", "SD", "waiting_sd", at("sd_days"), digits=1),
            Measure("min_days", "Min", "waiting_days", at("min_days"), digits=1),
            Measure("max_days", "Max", "waiting_days", at("max_days"), digits=1),
        ],
        entries=entries,
        note="From an annotator's last submission in one stage to their first batch in the "
        "next. Unknown (—) in a study imported from a published file, which has no times.",
        empty="No annotator has gone on to a next stage yet.",
    )


def workload_table(report: dict) -> Table:
    entries = [((e["group"], e["stage"]), e) for e in report.get("workload") or []]
    spread = [
        Measure(f"{name}_{stat}", f"{label} ({stat})", key, at(name, stat), digits=digits)
        for name, label, key in (
            ("batches_per_annotator", "Batches per annotator", "workload_batches_per_annotator"),
            ("raters_per_reflection", "Raters per reflection", "workload_raters_per_reflection"),
            ("synthetic_per_batch", "Synthetic per batch", "workload_synthetic_per_batch"),
        )
        for stat, digits in (("mean", 1), ("min", 0), ("max", 0))
    ]
    return build_table(
        slug="workload",
        caption="Workload per group and stage",
        keys=[GROUP, STAGE],
        measures=[
            Measure(
                "n_annotators", "Annotators", "workload_annotators", at("n_annotators"), "count"
            ),
            Measure("n_batches", "Batches", "workload_batches", at("n_batches"), "count"),
            Measure(
                "n_assignments",
                "Batches done",
                "workload_assignments",
                at("n_assignments"),
                "count",
            ),
            *spread,
            Measure("n_human", "Human reflections", "workload_human", at("n_human"), "count"),
            Measure(
                "n_synthetic",
                "Synthetic reflections",
                "workload_synthetic",
                at("n_synthetic"),
                "count",
            ),
            Measure("n_judgements", "Judgements", "n_judgements", at("n_judgements"), "count"),
            Measure(
                "median_seconds_item",
                "Median s per item",
                "workload_seconds_item",
                at("median_seconds_item"),
                digits=1,
            ),
            Measure(
                "median_seconds_batch",
                "Median s per batch",
                "workload_seconds_batch",
                at("median_seconds_batch"),
                digits=0,
            ),
        ],
        entries=entries,
        note="Over the judgements the report analyses (attention checks left out). A batch's "
        "time runs from its claim to its submission; unknown (—) in a study imported from a "
        "published file, which has no times.",
        empty="No judgements yet.",
    )


def order_tables(report: dict) -> list[Table]:
    """Order effects: the coherent share by position, and per group and stage the
    tests (none for a report from before they existed, or without recorded orders)."""
    effects = report.get("order_effects")
    if not effects:  # a report from before them, or no recorded order
        return []
    cells = [
        (group, stage, (effects.get(group) or {}).get(stage))
        for group in report.get("group_order") or []
        for stage in report.get("stage_order") or []
    ]
    cells = [(g, s, c) for g, s, c in cells if c]
    by_position = build_table(
        slug="order-positions",
        caption="Coherent share by the position an item was seen at",
        keys=[GROUP, STAGE, Key("Position", ("position",))],
        measures=[
            Measure("n_judgements", "Judgements", "n_judgements", at("n_judgements"), "count"),
            Measure("coherent_rate", "Coherent share", "coherent_rate", at("coherent_rate")),
        ],
        entries=[
            ((group, stage, row["position"]), row)
            for group, stage, cell in cells
            for row in cell.get("positions") or []
        ],
        note="Positions in each annotator's shuffled batch, 1 first; the attention check "
        "takes its place in the order but is not counted here.",
        empty="No recorded order yet.",
    )
    tests = build_table(
        slug="order-effects",
        caption="Order effects",
        keys=[GROUP, STAGE],
        measures=[
            Measure("chi2_p", "Position × label p", "order_chi2_p", at("chi2_p"), "p"),
            Measure(
                "human_before",
                "Human first: coherent",
                "order_human_before",
                at("human", "before", "coherent_rate"),
                count=("n_human_before", at("human", "before", "n_judgements")),
            ),
            Measure(
                "human_after",
                "Human after a synthetic: coherent",
                "order_human_after",
                at("human", "after", "coherent_rate"),
                count=("n_human_after", at("human", "after", "n_judgements")),
            ),
            Measure("human_chi2_p", "Before × after p", "p_value", at("human", "chi2_p"), "p"),
        ],
        entries=[((group, stage), cell) for group, stage, cell in cells],
        note="A chi-squared test of position × coherent/incoherent; the human reflection's "
        "coherent share when the annotator met it before any synthetic candidate of the "
        "batch, and after one.",
        empty="No recorded order yet.",
    )
    return [by_position, tests]


def pay_table(report: dict) -> Table:
    pay = report.get("pay") or {}
    totals = pay.get("totals") or {}
    return build_table(
        slug="pay",
        caption="Pay: cost and hourly rate earned",
        keys=[
            GROUP,
            STAGE,
            Key(
                "Pay",
                ("amount", "currency", "unit"),
                show=lambda amount, currency, unit: f"{amount:.2f} {currency} per {unit}",
            ),
        ],
        measures=[
            Measure("n_batches", "Batches paid", "pay_batches", at("n_batches"), "count"),
            Measure("hours", "Hours", "pay_hours", at("hours"), digits=1),
            Measure("total_cost", "Cost", "pay_total", at("total_cost"), digits=2),
            Measure(
                "cost_per_judgement",
                "Per judgement",
                "pay_per_judgement",
                at("cost_per_judgement"),
                digits=3,
            ),
            Measure(
                "hourly_median",
                "Hourly (median)",
                "pay_hourly",
                at("hourly_rate", "median"),
                digits=2,
            ),
            Measure("hourly_q1", "Hourly (Q1)", "pay_hourly_q1", at("hourly_rate", "q1"), digits=2),
            Measure("hourly_q3", "Hourly (Q3)", "pay_hourly_q3", at("hourly_rate", "q3"), digits=2),
            Measure(
                "minimum_hourly_rate",
                "Least hourly",
                "pay_minimum",
                at("minimum_hourly_rate"),
                digits=2,
            ),
            Measure(
                "share_below_minimum",
                "Below it",
                "pay_below_minimum",
                at("share_below_minimum"),
                digits=2,
            ),
        ],
        entries=[
            ((c["group"], c["stage"], c["amount"], c["currency"], c["unit"]), c)
            for c in pay.get("cells") or []
        ],
        note="Batches paid are the submitted ones; a batch's working time runs from its claim "
        "to its submission. Amounts are in each row's currency; totals: "
        + (
            ", ".join(
                f"{cost:.2f} {currency}" if cost is not None else f"unknown in {currency}"
                for currency, cost in totals.items()
            )
            or "none"
        )
        + ".",
        empty="No pay set (a stage's page sets each group's pay).",
    )
