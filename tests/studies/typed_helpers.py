"""Reading the typed export files back (JSON Lines, Parquet) and comparing them with
the CSV rows, by the test's own inverse of the typed files."""

import io
import math
from datetime import datetime

import pandas as pd


def as_csv_cell(value) -> str:
    """A typed value as the CSV writes it (the test's own inverse of the typed files)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, pd.Timestamp | datetime):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def assert_same_as_csv(frame: pd.DataFrame, rows: list[list[str]]) -> None:
    header, *body = rows
    assert list(frame.columns) == header
    assert len(frame) == len(body)
    for column, name in enumerate(header):
        for read, cell in zip(frame[name].tolist(), (row[column] for row in body), strict=True):
            if isinstance(read, float) and not math.isnan(read):
                assert read == float(cell), (name, read, cell)
            else:
                assert as_csv_cell(read) == cell, (name, read, cell)


def parquet_frame(data: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data), dtype_backend="pyarrow")


def jsonl_frame(text: str) -> pd.DataFrame:
    return pd.read_json(io.StringIO(text), lines=True, dtype=False, precise_float=True)
