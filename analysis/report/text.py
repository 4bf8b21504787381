"""The report as plain text for the terminal (``manage.py analyze``): what was
analysed, then every table of :mod:`analysis.tables` with the dashboard's numbers."""

from __future__ import annotations

from ..tables import (
    Table,
    collector_paused,
    likert_tables,
    nothing_counted,
    preference_tables,
    quality_table,
    report_tables,
    waiting_table,
)


def table_lines(table: Table) -> list[str]:
    """``table`` as aligned columns under its caption (its note below, if any)."""
    lines = [table.caption]
    if not table.rows:
        return [*lines, f"  {table.empty}"]
    header = [column.label for column in table.columns]
    rows = [[cell.text for cell in row] for row in table.rows]
    widths = [max(len(text) for text in column) for column in zip(header, *rows, strict=True)]

    def line(texts: list[str]) -> str:
        return "  ".join(t.ljust(w) for t, w in zip(texts, widths, strict=True)).rstrip()

    lines += [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
    if table.note:
        lines.append(table.note)
    return lines


@collector_paused()
def report_summary_lines(report: dict) -> list[str]:
    """What the run analysed (judgements, exclusions, bootstrap), then the tables (the
    collector paused while they are built and written out: see ``collector_paused``)."""
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
    if (nothing := nothing_counted(report)) is not None:
        others = [*likert_tables(report), *preference_tables(report)]
        lines.append(f"{nothing} count yet (only submitted, non-rejected batches do).")
        # What needs no counted judgement is still there: failed attention checks
        # (rejected batches included), the waits between stages, the other
        # instruments' answers.
        for table in (quality_table(report), waiting_table(report), *others):
            lines += ["", *table_lines(table)]
        return lines
    for table in report_tables(report):
        lines += ["", *table_lines(table)]
    return lines
