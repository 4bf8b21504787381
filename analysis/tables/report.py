"""The report's tables, in the order a researcher reads them."""

from __future__ import annotations

from ..explanations import explain
from .cells import (
    GROUP_STAGE,
    KAPPA_COLUMNS,
    MEE_VARIANTS,
    Cell,
    Column,
    Part,
    Table,
    agreement_cells,
    annotators_in_order,
    category_labels,
    cells_in_order,
    count_suffix,
    name_cell,
    stat,
    stat_part,
    stat_with_ci,
    text_cell,
)

# --------------------------------------------------------------------------- tables


def agreement_table(report: dict) -> Table:
    rows = []
    for group, stage, cell in cells_in_order(report):
        coherence = cell.get("coherence") or {}
        rows.append(
            [
                name_cell(group),
                name_cell(stage),
                stat(cell.get("n_judgements"), "n_judgements", kind="count"),
                stat(cell.get("n_items"), "n_items", kind="count"),
                stat(cell.get("raters_per_item"), "raters_per_item", kind="count"),
                stat(cell.get("n_annotators"), "n_annotators", kind="count"),
                stat(cell.get("coherent_rate"), "coherent_rate", digits=2),
                *agreement_cells(coherence),
            ]
        )
    return Table(
        slug="agreement",
        caption="Global agreement on coherent / incoherent",
        columns=[
            *GROUP_STAGE,
            Column("Judgements", explain("n_judgements")),
            Column("Items", explain("n_items")),
            Column("Raters per item", explain("raters_per_item")),
            Column("Annotators", explain("n_annotators")),
            Column("Coherent share", explain("coherent_rate")),
            *KAPPA_COLUMNS,
        ],
        rows=rows,
    )


def majority_table(report: dict) -> Table:
    categories = category_labels(report)
    rows = []
    for group, stage, cell in cells_in_order(report):
        ratios = (cell.get("coherence") or {}).get("majority_agreement") or {}
        per_category = cell.get("error_categories") or {}
        row = [
            name_cell(group),
            name_cell(stage),
            stat(ratios.get("coherent"), "majority_agreement", digits=2),
            stat(ratios.get("incoherent"), "majority_agreement", digits=2),
        ]
        for slug, _ in categories:
            entry = per_category.get(slug) or {}
            row.append(
                count_suffix(
                    stat(entry.get("majority_agreement"), "majority_agreement", digits=2),
                    entry.get("n_items_flagged"),
                    "n_items_flagged",
                )
            )
        rows.append(row)
    return Table(
        slug="majority",
        caption="Majority agreement ratios",
        columns=[
            *GROUP_STAGE,
            Column("Coherent", explain("majority_agreement")),
            Column("Incoherent", explain("majority_agreement")),
            *(Column(label, explain("majority_agreement")) for _, label in categories),
        ],
        rows=rows,
        note="Per label: items a majority gave the label ÷ items at least one annotator "
        "gave it; for the error categories, n is the number of items flagged at least once.",
    )


def error_category_table(report: dict) -> Table:
    rows = []
    for group, stage, cell in cells_in_order(report):
        mee = cell.get("most_evident_error") or {}
        for variant, label, key in MEE_VARIANTS:
            summary = mee.get(variant)
            if summary is None:
                continue
            rows.append(
                [
                    name_cell(group),
                    name_cell(stage),
                    text_cell(label, explain(key)),
                    stat(
                        summary.get("n_items_all_incoherent", summary.get("n_items")),
                        "n_items_all_incoherent",
                        kind="count",
                    ),
                    *agreement_cells(summary),
                ]
            )
    return Table(
        slug="error-categories",
        caption="Error-category agreement (most evident error)",
        columns=[
            *GROUP_STAGE,
            Column("Variant", numeric=False),
            Column("Items all incoherent", explain("n_items_all_incoherent")),
            *KAPPA_COLUMNS,
        ],
        rows=rows,
        note="Over the items every annotator judged incoherent; an annotator who chose one "
        "category has it as most evident error.",
    )


def inter_group_table(report: dict) -> Table:
    rows = []
    for entry in report.get("inter_group") or []:
        rows.append(
            [
                name_cell(entry.get("stage", "")),
                name_cell(" vs ".join(str(g) for g in entry.get("groups") or [])),
                stat(entry.get("n_items"), "inter_group_items", kind="count"),
                stat(entry.get("spearman"), "spearman"),
                stat(entry.get("spearman_p"), "p_value", kind="p"),
                stat(entry.get("pearson"), "pearson"),
                stat(entry.get("pearson_p"), "p_value", kind="p"),
                stat_with_ci(
                    entry.get("krippendorff_alpha_majority"),
                    entry.get("krippendorff_alpha_majority_ci"),
                    "alpha_majority",
                ),
                stat_with_ci(
                    entry.get("krippendorff_alpha_scores"),
                    entry.get("krippendorff_alpha_scores_ci"),
                    "alpha_scores",
                ),
            ]
        )
    return Table(
        slug="inter-group",
        caption="Inter-group correlation and agreement",
        columns=[
            Column("Stage", numeric=False),
            Column("Groups", numeric=False),
            Column("Common items", explain("inter_group_items")),
            Column("Spearman ρ", explain("spearman")),
            Column("p", explain("p_value")),
            Column("Pearson r", explain("pearson")),
            Column("p", explain("p_value")),
            Column("α majority labels [95% CI]", explain("alpha_majority")),
            Column("α coherence scores [95% CI]", explain("alpha_scores")),
        ],
        rows=rows,
        empty="Needs two groups that judged the same stage.",
    )


def _arrow(rates: dict, first: str, second: str, key: str) -> Cell:
    a = stat_part(rates.get(first), key, "number", 2)
    b = stat_part(rates.get(second), key, "number", 2)
    return Cell((a, Part("→", "", "arrow"), b))


def cross_stage_table(report: dict) -> Table:
    rows = []
    for group in report.get("group_order") or []:
        shifts = ((report.get("groups") or {}).get(group) or {}).get("human_cross_stage") or []
        for shift in shifts:
            first, second = shift.get("from", ""), shift.get("to", "")
            everything = shift.get("all") or {}
            free = shift.get("recurrence_free") or {}
            rows.append(
                [
                    name_cell(group),
                    name_cell(f"{first} → {second}"),
                    _arrow(everything.get("coherent_rate") or {}, first, second, "shift_rate"),
                    stat(everything.get("chi2_p"), "chi2_p", kind="p"),
                    _arrow(
                        free.get("coherent_rate") or {}, first, second, "shift_recurrence_free_rate"
                    ),
                    stat(free.get("chi2_p"), "chi2_p", kind="p"),
                    stat(shift.get("wilcoxon_p"), "wilcoxon_p", kind="p"),
                    stat(shift.get("n_items_paired"), "n_items_paired", kind="count"),
                ]
            )
    return Table(
        slug="cross-stage",
        caption="Cross-stage shift on human reflections",
        columns=[
            Column("Group", numeric=False),
            Column("Stages", numeric=False),
            Column("Coherent share", explain("shift_rate")),
            Column("χ² p", explain("chi2_p")),
            Column("Recurrence-free", explain("shift_recurrence_free_rate")),
            Column("χ² p", explain("chi2_p")),
            Column("Wilcoxon p", explain("wilcoxon_p")),
            Column("Paired items", explain("n_items_paired")),
        ],
        rows=rows,
        empty="Needs a group that judged two stages.",
    )


def human_vs_synthetic_table(report: dict) -> Table:
    rows = []
    for group, stage, cell in cells_in_order(report):
        test = cell.get("human_vs_synthetic") or {}
        rates = test.get("coherent_rate") or {}
        counts = test.get("n_judgements") or {}
        rows.append(
            [
                name_cell(group),
                name_cell(stage),
                count_suffix(
                    stat(rates.get("human"), "human_rate", digits=2),
                    counts.get("human"),
                    "n_judgements",
                ),
                count_suffix(
                    stat(rates.get("synthetic"), "synthetic_rate", digits=2),
                    counts.get("synthetic"),
                    "n_judgements",
                ),
                stat(test.get("chi2_p"), "human_vs_synthetic_p", kind="p"),
            ]
        )
    return Table(
        slug="human-vs-synthetic",
        caption="Human vs synthetic reflections",
        columns=[
            *GROUP_STAGE,
            Column("Human: coherent share", explain("human_rate")),
            Column("Synthetic: coherent share", explain("synthetic_rate")),
            Column("χ² p", explain("human_vs_synthetic_p")),
        ],
        rows=rows,
    )


def annotator_table(report: dict) -> Table:
    stages = list(report.get("stage_order") or [])
    rows = []
    for group in report.get("group_order") or []:
        annotators = ((report.get("groups") or {}).get(group) or {}).get("annotators") or {}
        for name in annotators_in_order(annotators):
            entry = annotators[name] or {}
            rates = entry.get("nonrecurring_human_coherent_rate") or {}
            counts = entry.get("n_nonrecurring") or {}
            rows.append(
                [
                    name_cell(group),
                    name_cell(name),
                    stat(entry.get("n_recurring"), "n_recurring", kind="count"),
                    stat(
                        entry.get("recurring_identical_rate"), "recurring_identical_rate", digits=2
                    ),
                    *(
                        count_suffix(
                            stat(rates.get(stage), "nonrecurring_rate", digits=2),
                            counts.get(stage),
                            "n_nonrecurring",
                        )
                        for stage in stages
                    ),
                ]
            )
    return Table(
        slug="annotators",
        caption="Per-annotator consistency on human reflections",
        columns=[
            Column("Group", numeric=False),
            Column("Annotator", numeric=False),
            Column("Recurring", explain("n_recurring")),
            Column("Same answer", explain("recurring_identical_rate")),
            *(Column(f"Coherent, {stage} only", explain("nonrecurring_rate")) for stage in stages),
        ],
        rows=rows,
    )


def empathy_table(report: dict) -> Table:
    rows = []
    for group, stage, cell in cells_in_order(report):
        empathy = cell.get("empathy") or {}
        merged = empathy.get("merged") or {}
        rows.append(
            [
                name_cell(group),
                name_cell(stage),
                stat(
                    empathy.get("n_items_all_coherent", empathy.get("n_items")),
                    "empathy_items",
                    kind="count",
                ),
                *agreement_cells(empathy, prefix="empathy_"),
                stat_with_ci(
                    merged.get("krippendorff_alpha"),
                    merged.get("krippendorff_alpha_ci"),
                    "empathy_merged_alpha",
                ),
            ]
        )
    return Table(
        slug="empathy",
        caption="Agreement on the 5-point understanding statement",
        columns=[
            *GROUP_STAGE,
            Column("Items all coherent", explain("empathy_items")),
            Column("Fleiss κ [95% CI]", explain("empathy_fleiss_kappa")),
            Column("Randolph κ [95% CI]", explain("empathy_randolph_kappa")),
            Column("Krippendorff α [95% CI]", explain("empathy_krippendorff_alpha")),
            Column("α, 3-point [95% CI]", explain("empathy_merged_alpha")),
        ],
        rows=rows,
    )


def automatic_evaluator_table(report: dict) -> Table:
    rows = [
        [
            name_cell(entry.get("stage", "")),
            name_cell(entry.get("evaluator", "")),
            name_cell(entry.get("group", "")),
            stat(entry.get("n_items"), "evaluator_items", kind="count"),
            stat(entry.get("spearman"), "evaluator_spearman"),
            stat(entry.get("spearman_p"), "p_value", kind="p"),
        ]
        for entry in report.get("automatic_evaluators") or []
    ]
    return Table(
        slug="automatic-evaluators",
        caption="Automatic evaluators vs coherence scores",
        columns=[
            Column("Stage", numeric=False),
            Column("Evaluator", numeric=False),
            Column("Group", numeric=False),
            Column("Items", explain("evaluator_items")),
            Column("Spearman ρ", explain("evaluator_spearman")),
            Column("p", explain("p_value")),
        ],
        rows=rows,
        empty="No automatic scores imported.",
    )


def report_tables(report: dict) -> list[Table]:
    """Every table of the report, in reading order (see the module docstring)."""
    tables = [
        agreement_table(report),
        majority_table(report),
        error_category_table(report),
        inter_group_table(report),
        cross_stage_table(report),
        human_vs_synthetic_table(report),
        annotator_table(report),
        empathy_table(report),
    ]
    if report.get("automatic_evaluators"):
        tables.append(automatic_evaluator_table(report))
    return tables
