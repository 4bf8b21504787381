"""Annotation exports: the published format and the full audit format, as
CSV or as an Excel workbook.

Rows are streamed: one query read through a server-side cursor
(``iterator(chunk_size=...)``) and written a chunk at a time, so memory stays flat
however many judgements a study holds; only the study's dialogue contexts are held
(as the JSON text the published format writes), and in the full format the
per-annotator columns (``annotator_columns``), which the analysis computes from a few
columns of the study's counted judgements before the first row. ``ExportOptions.file`` is one of
``FILES``: ``csv`` (RFC 4180, ``\\r\\n``, UTF-8 without BOM; every text exactly as
stored, so import_annotations, pandas and R read it back cell for cell),
``csv-spreadsheet-safe`` (formula-like cells prefixed with an apostrophe:
``studies.datafiles.spreadsheet``) or ``xlsx`` (text cells only:
``studies.datafiles.xlsx``). Annotators appear only by pseudonym: no e-mail,
platform ids or link tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError

from ..datafiles.xlsx import ExcelLimitError, xlsx_write
from ..models import Study
from .codes import CODES_COLUMNS, codes_csv_chunks, codes_filename, codes_rows
from .csvtext import csv_chunks
from .options import FILES, FORMATS, ExportOptions, export_options_clean, file_clean, flag_clean
from .rows import export_header, export_rows

__all__ = [
    "CODES_COLUMNS",
    "FILES",
    "FORMATS",
    "ExportOptions",
    "codes_csv_chunks",
    "codes_filename",
    "codes_rows",
    "csv_chunks",
    "export_csv_chunks",
    "export_filename",
    "export_header",
    "export_options_clean",
    "export_rows",
    "export_xlsx_write",
    "file_clean",
    "flag_clean",
    "rows_xlsx_write",
]


def export_csv_chunks(*, study: Study, options: ExportOptions) -> Iterator[str]:
    """The CSV text in chunks of a few hundred rows (for a streaming response or a file)."""
    return csv_chunks(export_rows(study=study, options=options))


def rows_xlsx_write(*, rows: Iterable[list[str]], target, sheet_name: str) -> None:
    """Rows of text (the header first) as an Excel workbook to ``target`` (a path or a
    binary file), in constant memory. Raises ValidationError (on ``file``) when they do
    not fit in a worksheet; ``target`` then holds no usable workbook."""
    try:
        xlsx_write(rows=rows, target=target, sheet_name=sheet_name)
    except ExcelLimitError as exc:
        raise ValidationError({"file": f"{exc}."}) from None


def export_xlsx_write(*, study: Study, options: ExportOptions, target) -> None:
    """Write the rows as an Excel workbook to ``target`` (see ``rows_xlsx_write``)."""
    rows_xlsx_write(
        rows=export_rows(study=study, options=options), target=target, sheet_name="annotations"
    )


def export_filename(*, study: Study, options: ExportOptions) -> str:
    suffix = {"published": "", "full": "-full", "training": "-training"}[options.fmt]
    extension = "xlsx" if options.file == "xlsx" else "csv"
    return f"{study.slug}-annotations{suffix}.{extension}"
