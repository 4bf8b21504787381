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

The published format has a file per instrument (``export_instruments``): the
coherence protocol's, the Likert stages' (``studies.exports.likert``), and the
pairwise and ranking stages' (``studies.exports.comparisons``); an export covering
stages of several is a zip holding one file of each (``export_zip_write``).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError

from ..datafiles.xlsx import ExcelLimitError, xlsx_write
from ..models import Stage, Study
from .codes import CODES_COLUMNS, codes_csv_chunks, codes_filename, codes_rows
from .csvtext import csv_chunks
from .options import (
    FILES,
    FORMATS,
    ExportOptions,
    export_instruments,
    export_options_clean,
    file_clean,
    flag_clean,
)
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
    "export_instruments",
    "export_options_clean",
    "export_rows",
    "export_xlsx_write",
    "export_zip_write",
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


def export_filename(*, study: Study, options: ExportOptions, instrument: str | None = None) -> str:
    """The download's name: ``<slug>-annotations[-full|-training][-likert|-pairwise|
    -ranking].csv`` (or
    ``.xlsx``); ``<slug>-annotations.zip`` for an export of several files, whose
    ``instrument`` file is named as it would be alone."""
    instruments = export_instruments(study=study, options=options)
    if instrument is None and len(instruments) > 1:
        return f"{study.slug}-annotations.zip"
    instrument = instrument or instruments[0]
    suffix = {"published": "", "full": "-full", "training": "-training"}[options.fmt]
    if instrument != Stage.Instrument.COHERENCE:
        suffix += f"-{instrument}"
    extension = "xlsx" if options.file == "xlsx" else "csv"
    return f"{study.slug}-annotations{suffix}.{extension}"


def export_zip_write(*, study: Study, options: ExportOptions, target) -> None:
    """A zip of the export's file per instrument (each as ``options.file``) to
    ``target`` (a path or a binary file). Raises ValidationError (on ``file``) when a
    workbook's rows do not fit in a worksheet."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for instrument in export_instruments(study=study, options=options):
            name = export_filename(study=study, options=options, instrument=instrument)
            rows = export_rows(study=study, options=options, instrument=instrument)
            if options.file == "xlsx":
                with tempfile.TemporaryFile() as workbook:
                    rows_xlsx_write(rows=rows, target=workbook, sheet_name="annotations")
                    workbook.seek(0)
                    with archive.open(name, "w") as member:
                        while block := workbook.read(1 << 20):
                            member.write(block)
            else:
                with archive.open(name, "w") as member:
                    for chunk in csv_chunks(rows):
                        member.write(chunk.encode("utf-8"))
