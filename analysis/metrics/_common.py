"""Helpers shared by the metric modules."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def clean(value: Any) -> float | None:
    """A finite Python float, or None for None/NaN/inf: the report is strict JSON."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def check_unique_ratings(ratings: pd.DataFrame, *, item: str, rater: str) -> None:
    if ratings.duplicated(subset=[item, rater]).any():
        raise ValueError(f"ratings contain more than one row per ({item!r}, {rater!r}) pair")
