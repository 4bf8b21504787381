"""The stored JSON report as tables, built once and rendered everywhere: the dashboard
(HTML), the CSV downloads (:mod:`analysis.report.tidy_csv`), the terminal summary
(:mod:`analysis.report.text`) and the figures (:mod:`analysis.plots`). Pure functions of
the report dict, no ORM.

* :mod:`.format`: how numbers are written (decimals, p-values, intervals, dashes);
* :mod:`.model`: cells, columns, tables, and the :class:`Measure` that defines a
  statistic column once;
* :mod:`.walk`: the one reading order of groups, stages, pairs and annotators;
* :mod:`.agreement`, :mod:`.comparisons`, :mod:`.distributions`, :mod:`.systems`,
  :mod:`.quality`, :mod:`.descriptions`, :mod:`.likert`, :mod:`.preferences`:
  the table builders.

A new statistic is one more :class:`Measure` in a builder (and its explanation in
:mod:`analysis.explanations`): every rendering then shows it.
"""

from .agreement import (
    agreement_over_time_table,
    agreement_table,
    category_set_table,
    empathy_table,
    error_category_table,
    holds_in_cells,
    majority_table,
)
from .comparisons import (
    automatic_evaluator_table,
    cross_stage_table,
    human_vs_synthetic_table,
    inter_group_table,
)
from .descriptions import (
    coder_agreement_table,
    description_codes_table,
    description_tables,
    descriptions_table,
)
from .distributions import annotator_table, label_distribution_table, label_segments
from .diversity import diversity_table, selection_diversity_table, spread_table
from .format import DASH, finite, format_ci, format_count, format_number, format_p
from .gates import gated_tables
from .generation import (
    generation_crossed_table,
    generation_mee_table,
    generation_mee_variants_table,
    generation_settings_table,
    generation_trends_table,
)
from .likert import (
    likert_groups_table,
    likert_pairs_table,
    likert_table,
    likert_tables,
    nothing_counted,
)
from .model import Cell, Column, Key, Measure, Part, Record, Stat, Table, collector_paused
from .preferences import preference_tables
from .quality import order_tables, pay_table, quality_table, waiting_table, workload_table
from .questionnaires import questionnaire_table
from .systems import (
    evaluator_source_table,
    evaluator_systems_table,
    group_comparison_table,
    group_systems_table,
    system_pairs_table,
    system_tables,
    systems_table,
)
from .walk import annotators_in_order, category_labels, cells_in_order


def _added_in_version_14(report: dict) -> list[Table]:
    """The set and over-time agreement tables, where the report has them."""
    return [
        build(report)
        for key, build in (
            ("category_sets", category_set_table),
            ("agreement_over_time", agreement_over_time_table),
        )
        if holds_in_cells(report, key)
    ]


@collector_paused()
def report_tables(report: dict) -> list[Table]:
    """Every table of the report, in reading order (see :func:`.model.collector_paused`)."""
    tables = [
        agreement_table(report),
        majority_table(report),
        error_category_table(report),
        *_added_in_version_14(report),
        inter_group_table(report),
        cross_stage_table(report),
        human_vs_synthetic_table(report),
        annotator_table(report),
        empathy_table(report),
        label_distribution_table(report),
        quality_table(report),
        waiting_table(report),
        workload_table(report),
        *order_tables(report),
    ]
    if (report.get("pay") or {}).get("cells"):
        tables.append(pay_table(report))
    if report.get("questionnaires"):
        tables.append(questionnaire_table(report))
    if report.get("automatic_evaluators"):
        tables.append(automatic_evaluator_table(report))
    return (
        tables
        + system_tables(report)
        + description_tables(report)
        + likert_tables(report)
        + preference_tables(report)
        + gated_tables(report)
        + ([diversity_table(report)] if (report.get("diversity") or {}).get("stages") else [])
        + (
            [selection_diversity_table(report)]
            if (report.get("diversity") or {}).get("selections")
            else []
        )
        + ([spread_table(report)] if report.get("spread") else [])
    )


__all__ = [
    "DASH",
    "Cell",
    "Column",
    "Key",
    "Measure",
    "Part",
    "Record",
    "Stat",
    "Table",
    "agreement_over_time_table",
    "agreement_table",
    "annotator_table",
    "annotators_in_order",
    "automatic_evaluator_table",
    "category_labels",
    "category_set_table",
    "cells_in_order",
    "coder_agreement_table",
    "collector_paused",
    "cross_stage_table",
    "description_codes_table",
    "description_tables",
    "descriptions_table",
    "diversity_table",
    "empathy_table",
    "error_category_table",
    "evaluator_source_table",
    "evaluator_systems_table",
    "finite",
    "format_ci",
    "format_count",
    "format_number",
    "format_p",
    "generation_crossed_table",
    "generation_mee_table",
    "generation_mee_variants_table",
    "generation_settings_table",
    "generation_trends_table",
    "group_comparison_table",
    "group_systems_table",
    "human_vs_synthetic_table",
    "inter_group_table",
    "label_distribution_table",
    "label_segments",
    "likert_groups_table",
    "likert_pairs_table",
    "likert_table",
    "likert_tables",
    "majority_table",
    "nothing_counted",
    "order_tables",
    "pay_table",
    "preference_tables",
    "quality_table",
    "questionnaire_table",
    "report_tables",
    "selection_diversity_table",
    "spread_table",
    "system_pairs_table",
    "system_tables",
    "systems_table",
    "waiting_table",
    "workload_table",
]
