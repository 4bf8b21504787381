"""Plain-text summary of a report, for the terminal (``manage.py analyze``)."""

from __future__ import annotations


def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ci(pair) -> str:
    low, high = pair or (None, None)
    return "" if low is None else f" [{low:.2f}, {high:.2f}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells):
        return "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True))

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def report_summary_lines(report: dict) -> list[str]:
    """The headline numbers a researcher checks first: agreement per group and
    stage, between groups, and the cross-stage shift on human reflections."""
    params = report["parameters"]
    lines = [
        f"Study {report['study']}: {report['n_judgements']} judgements analysed"
        + (
            f", excluding {', '.join(params['excluded_sources'])}"
            if params.get("excluded_sources")
            else ""
        )
        + (", expired batches included" if params.get("include_expired") else "")
        + f" ({params.get('bootstrap_resamples', 0)} bootstrap resamples, seed {params.get('seed', 0)}).",
    ]
    if not report["groups"]:
        lines.append("No judgements count yet (only submitted, non-rejected batches do).")
        return lines
    rows = []
    for group in report["group_order"]:
        for stage in report["stage_order"]:
            cell = report["groups"][group]["stages"].get(stage)
            if cell is None:
                continue
            coherence = cell["coherence"]
            rows.append(
                [
                    group,
                    stage,
                    str(cell["n_items"]),
                    str(cell["raters_per_item"] or "–"),
                    _num(cell["coherent_rate"], 2),
                    _num(coherence["fleiss_kappa"])
                    + _ci(coherence["fleiss_kappa_ci"])
                    + (f" {coherence['fleiss_band']}" if coherence["fleiss_band"] else ""),
                    _num(coherence["randolph_kappa"]) + _ci(coherence["randolph_kappa_ci"]),
                    _num(coherence["krippendorff_alpha"]) + _ci(coherence["krippendorff_alpha_ci"]),
                    _num(coherence["majority_agreement"]["coherent"], 2),
                    _num(coherence["majority_agreement"]["incoherent"], 2),
                ]
            )
    lines += ["", "Agreement on coherent / incoherent"]
    lines += _table(
        [
            "group",
            "stage",
            "items",
            "raters",
            "coherent",
            "Fleiss κ [95% CI]",
            "Randolph κ",
            "Krippendorff α",
            "MA coh.",
            "MA incoh.",
        ],
        rows,
    )
    if report["inter_group"]:
        lines += ["", "Between groups (coherence scores of the items both judged)"]
        lines += _table(
            ["stage", "groups", "items", "Spearman (p)", "Pearson (p)", "α majority", "α scores"],
            [
                [
                    e["stage"],
                    " vs ".join(e["groups"]),
                    str(e["n_items"]),
                    f"{_num(e['spearman'])} ({_num(e['spearman_p'], 4)})",
                    f"{_num(e['pearson'])} ({_num(e['pearson_p'], 4)})",
                    _num(e["krippendorff_alpha_majority"]),
                    _num(e["krippendorff_alpha_scores"]),
                ]
                for e in report["inter_group"]
            ],
        )
    shifts = [
        (group, shift)
        for group in report["group_order"]
        for shift in report["groups"][group]["human_cross_stage"]
    ]
    if shifts:
        lines += ["", "Human reflections across stages (coherent share; χ² p; Wilcoxon p)"]
        rows = []
        for group, shift in shifts:
            rates = shift["all"]["coherent_rate"]
            free = shift["recurrence_free"]["coherent_rate"]
            rows.append(
                [
                    group,
                    f"{shift['from']} → {shift['to']}",
                    f"{_num(rates[shift['from']], 2)} → {_num(rates[shift['to']], 2)}",
                    _num(shift["all"]["chi2_p"], 4),
                    f"{_num(free[shift['from']], 2)} → {_num(free[shift['to']], 2)}",
                    _num(shift["recurrence_free"]["chi2_p"], 4),
                    _num(shift["wilcoxon_p"], 4),
                ]
            )
        lines += _table(
            ["group", "stages", "all", "χ² p", "recurrence-free", "χ² p", "Wilcoxon p"], rows
        )
    if report.get("automatic_evaluators"):
        lines += ["", "Automatic evaluators vs coherence scores (Spearman)"]
        lines += _table(
            ["stage", "evaluator", "group", "items", "Spearman (p)"],
            [
                [
                    e["stage"],
                    e["evaluator"],
                    e["group"],
                    str(e["n_items"]),
                    f"{_num(e['spearman'])} ({_num(e['spearman_p'], 4)})",
                ]
                for e in report["automatic_evaluators"]
            ],
        )
    return lines
