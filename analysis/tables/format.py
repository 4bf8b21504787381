"""How the report's numbers are written on the dashboard and in the terminal: the one
place for decimals, p-values, intervals, counts and the dash of an undefined value.
The CSV downloads write the raw values instead."""

from __future__ import annotations

import math
from typing import Any

from ..metrics.agreement import DISPLAY_DIGITS

DASH = "–"


def finite(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, not a number or not finite."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def format_number(value: Any, digits: int = DISPLAY_DIGITS) -> str:
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


def ci_pair(pair: Any) -> tuple[Any, Any]:
    """The two ends of a stored interval (``[low, high]``), (None, None) when absent."""
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        return pair[0], pair[1]
    return None, None


def format_ci(pair: Any, digits: int = DISPLAY_DIGITS) -> str:
    """``[low, high]``, or a dash when either end is missing."""
    low, high = (finite(v) for v in ci_pair(pair))
    if low is None or high is None:
        return DASH
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def format_count(value: Any) -> str:
    number = finite(value)
    return DASH if number is None else f"{int(number):d}"


def format_value(value: Any, kind: str = "number", digits: int = DISPLAY_DIGITS) -> str:
    """``value`` written as a statistic of ``kind``: "number" (``digits`` decimals),
    "count" or "p"."""
    if kind == "p":
        return format_p(value)
    if kind == "count":
        return format_count(value)
    return format_number(value, digits)
