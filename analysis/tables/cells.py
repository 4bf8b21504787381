"""The JSON report as the dashboard's tables, in the order a researcher reads them.

Pure functions of the report dict (no ORM): each table is a caption, columns and
rows of cells; every number in a cell carries its one-line explanation
(:mod:`analysis.explanations`) and a missing value is a dash explained by why it is
undefined. Stages, groups and categories are iterated in the report's
``stage_order``, ``group_order`` and ``categories`` lists (jsonb keeps no key order).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..explanations import explain, explain_undefined

DASH = "–"

MEE_VARIANTS = [
    ("raw", "Raw", "mee_raw"),
    ("consensus_adjusted", "Consensus", "mee_consensus_adjusted"),
    ("hallucinatory_merged", "Merged", "mee_hallucinatory_merged"),
    (
        "hallucinatory_merged_consensus_adjusted",
        "Merged + consensus",
        "mee_hallucinatory_merged_consensus_adjusted",
    ),
]


# --------------------------------------------------------------------------- formatting


def finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def format_number(value: Any, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, or a dash. An ASCII minus, so numbers copied
    into a spreadsheet stay numbers; no "-0.000"."""
    number = finite(value)
    if number is None:
        return DASH
    text = f"{number:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_p(value: Any) -> str:
    """A p-value with 3 significant digits, "< 0.001" below that, or a dash."""
    number = finite(value)
    if number is None:
        return DASH
    if number < 0.001:
        return "< 0.001"
    return f"{number:#.3g}"


def format_ci(pair: Any, digits: int = 3) -> str:
    """``[low, high]``, or a dash when either end is missing."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return DASH
    low, high = (finite(v) for v in pair)
    if low is None or high is None:
        return DASH
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def format_count(value: Any) -> str:
    number = finite(value)
    return DASH if number is None else f"{int(number):d}"


# --------------------------------------------------------------------------- table model


@dataclass(frozen=True)
class Part:
    """One piece of text in a cell, with its hover explanation."""

    text: str
    title: str = ""
    css: str = ""


@dataclass(frozen=True)
class Cell:
    parts: tuple[Part, ...]
    header: bool = False  # a row header (<th scope="row">)
    numeric: bool = True

    @property
    def text(self) -> str:
        return " ".join(part.text for part in self.parts)


@dataclass(frozen=True)
class Column:
    label: str
    title: str = ""
    numeric: bool = True


@dataclass(frozen=True)
class Table:
    slug: str
    caption: str
    columns: list[Column]
    rows: list[list[Cell]]
    note: str = ""
    empty: str = "Nothing to show."
    extra: dict = field(default_factory=dict)


def name_cell(text: Any) -> Cell:
    return Cell((Part(str(text)),), header=True, numeric=False)


def text_cell(text: Any, title: str = "") -> Cell:
    return Cell((Part(str(text), title),), numeric=False)


def stat_part(value: Any, key: str, kind: str, digits: int) -> Part:
    if kind == "p":
        text = format_p(value)
    elif kind == "count":
        text = format_count(value)
    else:
        text = format_number(value, digits)
    if text == DASH:
        return Part(DASH, explain_undefined(key), "undefined")
    return Part(text, explain(key))


def stat(value: Any, key: str, *, kind: str = "number", digits: int = 3) -> Cell:
    """A number explained by ``key``; a dash explained as undefined when missing."""
    return Cell((stat_part(value, key, kind, digits),))


def stat_with_ci(
    value: Any, ci: Any, key: str, band: str | None = None, *, digits: int = 3
) -> Cell:
    """A statistic, its 95% interval and (optionally) its Landis & Koch band."""
    parts = [stat_part(value, key, "number", digits)]
    if finite(value) is not None:
        if band:
            parts.append(Part(band, explain("band"), "band"))
        interval = format_ci(ci, digits)
        if interval != DASH:
            parts.append(Part(interval, explain("ci"), "ci"))
    return Cell(tuple(parts))


def count_suffix(cell: Cell, count: Any, key: str) -> Cell:
    """``cell`` followed by "(n = count)" explained by ``key``."""
    if finite(count) is None:
        return cell
    return Cell((*cell.parts, Part(f"(n = {format_count(count)})", explain(key), "n")))


# --------------------------------------------------------------------------- helpers


def cells_in_order(report: dict) -> list[tuple[str, str, dict]]:
    """(group, stage, stage cell) for every analysed group × stage, in reading order."""
    result = []
    for group in report.get("group_order") or []:
        stages = ((report.get("groups") or {}).get(group) or {}).get("stages") or {}
        for stage in report.get("stage_order") or []:
            if stages.get(stage) is not None:
                result.append((group, stage, stages[stage]))
    return result


def category_labels(report: dict) -> list[tuple[str, str]]:
    return [(c["slug"], c.get("label") or c["slug"]) for c in report.get("categories") or []]


def _natural_key(name: str):
    return [int(part) if part.isdigit() else part.casefold() for part in re.split(r"(\d+)", name)]


def annotators_in_order(annotators: dict) -> list[str]:
    """Pseudonyms sorted naturally ("Expert 2" before "Expert 10")."""
    return sorted(annotators, key=_natural_key)


def agreement_cells(summary: dict | None, prefix: str = "") -> list[Cell]:
    summary = summary or {}
    return [
        stat_with_ci(
            summary.get("fleiss_kappa"),
            summary.get("fleiss_kappa_ci"),
            f"{prefix}fleiss_kappa",
            summary.get("fleiss_band"),
        ),
        stat_with_ci(
            summary.get("randolph_kappa"),
            summary.get("randolph_kappa_ci"),
            f"{prefix}randolph_kappa",
            summary.get("randolph_band"),
        ),
        stat_with_ci(
            summary.get("krippendorff_alpha"),
            summary.get("krippendorff_alpha_ci"),
            f"{prefix}krippendorff_alpha",
        ),
    ]


GROUP_STAGE = [Column("Group", numeric=False), Column("Stage", numeric=False)]
KAPPA_COLUMNS = [
    Column("Fleiss κ [95% CI]", explain("fleiss_kappa")),
    Column("Randolph κ [95% CI]", explain("randolph_kappa")),
    Column("Krippendorff α [95% CI]", explain("krippendorff_alpha")),
]
