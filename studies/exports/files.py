"""How each kind of export file (``FILES``) is written, for every export: the
annotation formats, the questionnaire answers, the codes and the item-level export.
Their rows are text (the header first); here they become the file asked for.

CSV and JSON Lines are text and stream a chunk at a time. An Excel workbook and a
Parquet file can only be finished at their end: they are written to a file (a
temporary one for a download), then sent."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping

from django.core.exceptions import ValidationError

from ..datafiles.typed import (
    JSONL_CONTENT_TYPE,
    PARQUET_CONTENT_TYPE,
    TypedCellError,
    jsonl_chunks,
    parquet_write,
)
from ..datafiles.xlsx import CONTENT_TYPE as XLSX_CONTENT_TYPE
from ..datafiles.xlsx import ExcelLimitError, xlsx_write
from .csvtext import csv_chunks

EXTENSIONS = {
    "csv": "csv",
    "csv-spreadsheet-safe": "csv",
    "xlsx": "xlsx",
    "jsonl": "jsonl",
    "parquet": "parquet",
}
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "csv-spreadsheet-safe": "text/csv; charset=utf-8",
    "xlsx": XLSX_CONTENT_TYPE,
    "jsonl": f"{JSONL_CONTENT_TYPE}; charset=utf-8",
    "parquet": PARQUET_CONTENT_TYPE,
}
#: The kinds written as text, a chunk at a time (to stdout too); the others are binary.
TEXT_FILES = frozenset({"csv", "csv-spreadsheet-safe", "jsonl"})


def file_extension(file: str) -> str:
    """The file name's extension for ``file`` (one of ``FILES``)."""
    return EXTENSIONS[file]


def rows_text_chunks(
    rows: Iterable[list[str]], *, file: str, kinds: Mapping[str, str] | None = None
) -> Iterator[str]:
    """A text kind's content in chunks: CSV (the rows as they are) or JSON Lines
    (typed by ``kinds`` and ``studies.columns``)."""
    if file == "jsonl":
        return jsonl_chunks(rows, kinds)
    if file not in TEXT_FILES:
        raise ValueError(f"{file} is not a text file.")
    return csv_chunks(rows)


def rows_file_write(
    rows: Iterable[list[str]],
    *,
    file: str,
    target,
    sheet_name: str,
    kinds: Mapping[str, str] | None = None,
) -> None:
    """Write ``rows`` (the header first) as ``file`` to ``target`` (a path or a binary
    file), in constant memory. ``sheet_name`` names a workbook's sheet, ``kinds`` the
    typed files' extra column kinds. Raises ValidationError (on ``file``) when the rows
    do not fit in an Excel worksheet, or when a cell of a Parquet file is not of its
    column's kind; ``target`` then holds no usable file."""
    if file == "xlsx":
        try:
            xlsx_write(rows=rows, target=target, sheet_name=sheet_name)
        except ExcelLimitError as exc:
            raise ValidationError({"file": f"{exc}."}) from None
    elif file == "parquet":
        try:
            parquet_write(rows, target=target, kinds=kinds)
        except TypedCellError as exc:
            raise ValidationError({"file": f"{exc} Download the CSV instead."}) from None
    else:
        chunks = rows_text_chunks(rows, file=file, kinds=kinds)
        if isinstance(target, str | os.PathLike):
            with open(target, "wb") as handle:
                for chunk in chunks:
                    handle.write(chunk.encode("utf-8"))
        else:
            for chunk in chunks:
                target.write(chunk.encode("utf-8"))
