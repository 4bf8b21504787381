"""Annotation exports: the published format and the full audit format, as
CSV or as an Excel workbook.

Rows are streamed: one query read through a server-side cursor
(``iterator(chunk_size=...)``) and written a chunk at a time, so memory stays flat
however many judgements a study holds; only the study's dialogue contexts are held
(as the JSON text the published format writes). ``ExportOptions.file`` is one of
``FILES``: ``csv`` (RFC 4180, ``\\r\\n``, UTF-8 without BOM; every text exactly as
stored, so import_annotations, pandas and R read it back cell for cell),
``csv-spreadsheet-safe`` (formula-like cells prefixed with an apostrophe:
``studies.datafiles.spreadsheet``) or ``xlsx`` (text cells only:
``studies.datafiles.xlsx``). Annotators appear only by pseudonym: no e-mail,
platform ids or link tokens.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.core.exceptions import ValidationError

from ..datafiles.xlsx import ExcelLimitError, xlsx_write
from ..models import Study
from .options import FILES, FORMATS, ExportOptions, export_options_clean
from .rows import export_header, export_rows

__all__ = [
    "FILES",
    "FORMATS",
    "ExportOptions",
    "export_csv_chunks",
    "export_filename",
    "export_header",
    "export_options_clean",
    "export_rows",
    "export_xlsx_write",
]

ROWS_PER_WRITE = 500


class _Line:
    """A write-only file for csv.writer that hands back what was written."""

    def write(self, value: str) -> str:
        return value


def export_csv_chunks(*, study: Study, options: ExportOptions) -> Iterator[str]:
    """The CSV text in chunks of a few hundred rows (for a streaming response or a file)."""
    writer = csv.writer(_Line(), lineterminator="\r\n")
    buffer: list[str] = []
    for cells in export_rows(study=study, options=options):
        buffer.append(writer.writerow(cells))
        if len(buffer) >= ROWS_PER_WRITE:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)


def export_xlsx_write(*, study: Study, options: ExportOptions, target) -> None:
    """Write the rows as an Excel workbook to ``target`` (a path or a binary file),
    in constant memory. Raises ValidationError (on ``file``) when the export does not
    fit in a worksheet; ``target`` then holds no usable workbook."""
    try:
        xlsx_write(
            rows=export_rows(study=study, options=options), target=target, sheet_name="annotations"
        )
    except ExcelLimitError as exc:
        raise ValidationError({"file": f"{exc}."}) from None


def export_filename(*, study: Study, options: ExportOptions) -> str:
    suffix = {"published": "", "full": "-full", "training": "-training"}[options.fmt]
    extension = "xlsx" if options.file == "xlsx" else "csv"
    return f"{study.slug}-annotations{suffix}.{extension}"
