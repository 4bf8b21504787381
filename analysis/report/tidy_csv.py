"""The report's tables (:mod:`analysis.tables`) as tidy CSV, for a spreadsheet or
R/pandas: the dashboard offers each table as a download.

One row per number of the table, unformatted: the table's identifying columns (group,
stage, annotator…), then the dimension a column stands for where it has one (``label``,
``stage``, ``reflections``), then ``statistic``, ``value``, ``ci_low``, ``ci_high`` and
``band`` (the last three empty where the statistic has none). Counts shown as "(n = …)" are rows of their
own. Empty cells stand for null (undefined) values. Built from the stored JSON report
only, so any past run can be exported.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from studies.datafiles.spreadsheet import cell_escape

from ..tables import Table

NUMBER_COLUMNS = ["statistic", "value", "ci_low", "ci_high", "band"]


def table_rows(table: Table) -> Iterator[list]:
    """The header, then one row per number of ``table``, in the table's order."""
    facets = table.facets
    yield [*table.key_names, *facets, *NUMBER_COLUMNS]
    for row in table.rows:
        keys = [value for cell in row for value in cell.keys]
        for cell in row:
            for stat in cell.stats:
                dimension, facet = stat.facet or (None, None)
                low, high = stat.ci or (None, None)
                yield [
                    *keys,
                    *(facet if name == dimension else None for name in facets),
                    stat.name,
                    stat.value,
                    low,
                    high,
                    stat.band,
                ]


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return cell_escape(str(value))


def table_csv(table: Table) -> str:
    """``table`` as RFC 4180 CSV text."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    for row in table_rows(table):
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()
