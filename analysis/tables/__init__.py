"""The JSON report as the dashboard's tables (pure functions, no ORM)."""

from .cells import (
    DASH,
    Cell,
    Column,
    Part,
    Table,
    annotators_in_order,
    category_labels,
    cells_in_order,
    finite,
    format_ci,
    format_count,
    format_number,
    format_p,
)
from .report import report_tables

__all__ = [
    "DASH",
    "Cell",
    "Column",
    "Part",
    "Table",
    "annotators_in_order",
    "category_labels",
    "cells_in_order",
    "finite",
    "format_ci",
    "format_count",
    "format_number",
    "format_p",
    "report_tables",
]
