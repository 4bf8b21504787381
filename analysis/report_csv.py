"""The report's tables as tidy CSV (one number per row, raw values, no formatting),
for a spreadsheet or R/pandas: the dashboard offers each as a download.

Every table is a header plus rows built from the stored JSON report only, so any
past run can be exported. Empty cells stand for null (undefined) values.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator

from studies.datafiles.spreadsheet import cell_escape

AGREEMENT_STATISTICS = (
    ("fleiss_kappa", "fleiss_band"),
    ("randolph_kappa", "randolph_band"),
    ("krippendorff_alpha", None),
)


def _cells(report: dict) -> Iterator[tuple[str, str, dict]]:
    for group in report.get("group_order", []):
        stages = report["groups"][group]["stages"]
        for stage in report.get("stage_order", []):
            if stage in stages:
                yield group, stage, stages[stage]


def _agreement_rows(measure: str, group: str, stage: str, summary: dict) -> Iterator[list]:
    for key, band in AGREEMENT_STATISTICS:
        low, high = summary.get(f"{key}_ci") or (None, None)
        n_items = summary.get("n_items_alpha" if key == "krippendorff_alpha" else "n_items")
        yield [
            group,
            stage,
            measure,
            key,
            summary.get(key),
            low,
            high,
            summary.get(band) if band else None,
            n_items,
            summary.get("raters_per_item") if key != "krippendorff_alpha" else None,
        ]


def agreement_rows(report: dict) -> Iterator[list]:
    yield [
        "group",
        "stage",
        "measure",
        "statistic",
        "value",
        "ci_low",
        "ci_high",
        "band",
        "n_items",
        "raters_per_item",
    ]
    for group, stage, cell in _cells(report):
        yield from _agreement_rows("coherence", group, stage, cell["coherence"])
        for variant, summary in sorted(cell["most_evident_error"].items()):
            yield from _agreement_rows(f"most_evident_error:{variant}", group, stage, summary)
        yield from _agreement_rows("empathy", group, stage, cell["empathy"])
        yield from _agreement_rows("empathy:merged", group, stage, cell["empathy"]["merged"])
    for entry in report.get("inter_group", []):
        pair = " vs ".join(entry["groups"])
        for key in ("krippendorff_alpha_majority", "krippendorff_alpha_scores"):
            low, high = entry.get(f"{key}_ci") or (None, None)
            yield [pair, entry["stage"], "between_groups", key, entry.get(key), low, high,
                   None, entry.get("n_items"), None]  # fmt: skip


def majority_rows(report: dict) -> Iterator[list]:
    yield ["group", "stage", "label", "majority_agreement", "n_items_flagged"]
    for group, stage, cell in _cells(report):
        for label in ("coherent", "incoherent"):
            yield [group, stage, label, cell["coherence"]["majority_agreement"][label], None]
        for category in report.get("categories", []):
            entry = cell["error_categories"].get(category["slug"], {})
            yield [
                group,
                stage,
                category["slug"],
                entry.get("majority_agreement"),
                entry.get("n_items_flagged"),
            ]


def label_distribution_rows(report: dict) -> Iterator[list]:
    yield ["group", "stage", "reflections", "label", "share"]
    for group, stage, cell in _cells(report):
        for reflections, shares in sorted(cell["label_distribution"].items()):
            for label, share in shares.items():
                yield [group, stage, reflections, label, share]


def inter_group_rows(report: dict) -> Iterator[list]:
    keys = ("n_items", "spearman", "spearman_p", "pearson", "pearson_p",
            "krippendorff_alpha_majority", "krippendorff_alpha_scores")  # fmt: skip
    yield ["stage", "group_a", "group_b", *keys]
    for entry in report.get("inter_group", []):
        yield [entry["stage"], *entry["groups"], *(entry.get(k) for k in keys)]


def cross_stage_rows(report: dict) -> Iterator[list]:
    yield ["group", "from", "to", "subset", "coherent_rate_from", "coherent_rate_to",
           "n_judgements_from", "n_judgements_to", "chi2_p", "wilcoxon_p"]  # fmt: skip
    for group in report.get("group_order", []):
        for shift in report["groups"][group]["human_cross_stage"]:
            for subset in ("all", "recurrence_free"):
                part = shift[subset]
                yield [
                    group,
                    shift["from"],
                    shift["to"],
                    subset,
                    part["coherent_rate"].get(shift["from"]),
                    part["coherent_rate"].get(shift["to"]),
                    part.get("n_judgements", {}).get(shift["from"]),
                    part.get("n_judgements", {}).get(shift["to"]),
                    part.get("chi2_p"),
                    shift.get("wilcoxon_p") if subset == "all" else None,
                ]


def human_vs_synthetic_rows(report: dict) -> Iterator[list]:
    yield ["group", "stage", "coherent_rate_human", "coherent_rate_synthetic", "chi2_p"]
    for group, stage, cell in _cells(report):
        part = cell["human_vs_synthetic"]
        rates = part["coherent_rate"]
        yield [group, stage, rates.get("human"), rates.get("synthetic"), part.get("chi2_p")]


def annotator_rows(report: dict) -> Iterator[list]:
    yield ["group", "annotator", "recurring_identical_rate", "n_recurring", "stage",
           "nonrecurring_human_coherent_rate", "n_nonrecurring"]  # fmt: skip
    for group in report.get("group_order", []):
        annotators = report["groups"][group]["annotators"]
        for name, entry in annotators.items():
            for stage in report.get("stage_order", []):
                if stage not in entry["nonrecurring_human_coherent_rate"]:
                    continue
                yield [
                    group,
                    name,
                    entry["recurring_identical_rate"],
                    entry.get("n_recurring"),
                    stage,
                    entry["nonrecurring_human_coherent_rate"][stage],
                    entry.get("n_nonrecurring", {}).get(stage),
                ]


def automatic_evaluator_rows(report: dict) -> Iterator[list]:
    keys = ("n_items", "spearman", "spearman_p", "pearson", "pearson_p")
    yield ["stage", "evaluator", "group", *keys]
    for entry in report.get("automatic_evaluators", []):
        yield [entry["stage"], entry["evaluator"], entry["group"], *(entry.get(k) for k in keys)]


TABLES: dict[str, Callable[[dict], Iterator[list]]] = {
    "agreement": agreement_rows,
    "majority-agreement": majority_rows,
    "label-distribution": label_distribution_rows,
    "between-groups": inter_group_rows,
    "cross-stage": cross_stage_rows,
    "human-vs-synthetic": human_vs_synthetic_rows,
    "annotators": annotator_rows,
    "automatic-evaluators": automatic_evaluator_rows,
}


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return cell_escape(str(value))


def report_table_csv(report: dict, table: str) -> str:
    """One of ``TABLES`` as RFC 4180 CSV text (``KeyError`` for an unknown name)."""
    rows = TABLES[table](report)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()
