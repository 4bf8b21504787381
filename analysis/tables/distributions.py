"""The report's per-annotator consistency and label distribution tables."""

from __future__ import annotations

from ..metrics.association import INCOHERENT_UNSPECIFIED
from .model import GROUP, STAGE, Key, Measure, Table, at, build_table
from .walk import (
    annotators_by_group,
    category_labels,
    cells_in_order,
    distribution_rows,
    not_offered_in_row,
    stage_order,
)

KIND_LABELS = {"human": "All human", "synthetic": "All synthetic"}
#: The per-annotator table's row pooling a group's annotators.
POOLED_ROW = "All"


def annotator_table(report: dict) -> Table:
    per_stage = [
        Measure(
            "nonrecurring_human_coherent_rate",
            f"Coherent, {stage} only",
            "nonrecurring_rate",
            at("nonrecurring_human_coherent_rate", stage),
            digits=2,
            count=("n_nonrecurring", at("n_nonrecurring", stage)),
            facet=("stage", stage),
        )
        for stage in stage_order(report)
    ]
    return build_table(
        slug="annotators",
        caption="Per-annotator consistency on human reflections",
        keys=[GROUP, Key("Annotator", ("annotator",))],
        measures=[
            Measure("n_recurring", "Recurring", "n_recurring", at("n_recurring"), "count"),
            Measure(
                "recurring_identical_rate",
                "Same answer",
                "recurring_identical_rate",
                at("recurring_identical_rate"),
                digits=2,
            ),
            *per_stage,
        ],
        entries=[
            ((group, name), entry)
            for group, name, entry in annotators_by_group(report, pooled=POOLED_ROW)
        ],
        note=f'"{POOLED_ROW}" pools the group\'s annotators: their recurring pairs, and their '
        "once-only judgements per stage.",
    )


def label_segments(report: dict) -> list[tuple[str, str]]:
    """(slug, label) of the label distribution's parts, in order: coherent, each error
    category, incoherent without a category."""
    return [
        ("coherent", "Coherent"),
        *category_labels(report),
        (INCOHERENT_UNSPECIFIED, "Incoherent, no category"),
    ]


def label_share_measures(report: dict, *path: str) -> list[Measure]:
    """One column per part of the label distribution at ``path`` of a row's data."""
    return [
        Measure(
            "label_share", label, "label_share", at(*path, slug), digits=2, facet=("label", slug)
        )
        for slug, label in label_segments(report)
    ]


def label_distribution_table(report: dict) -> Table:
    entries = [
        ((group, stage, row), (cell.get("label_distribution") or {}).get(row) or {})
        for group, stage, cell in cells_in_order(report)
        for row in distribution_rows(cell)
    ]
    return build_table(
        slug="label-distribution",
        caption="Label distribution per group and stage",
        keys=[
            GROUP,
            STAGE,
            Key("Reflections", ("reflections",), show=lambda r: KIND_LABELS.get(r, str(r))),
        ],
        measures=label_share_measures(report),
        entries=entries,
        note="Share of the judgements of each kind and source of reflections; an incoherent "
        "judgement is split equally among the error categories it selected.",
        not_offered=not_offered_in_row(report),
    )
