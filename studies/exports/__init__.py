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
``studies.datafiles.spreadsheet``), ``xlsx`` (text cells only:
``studies.datafiles.xlsx``), or, for publishing, ``jsonl`` and ``parquet`` (typed
columns: ``studies.datafiles.typed``); ``studies.exports.files`` writes each. Annotators
appear only by pseudonym: no e-mail, platform ids or link tokens.

The published format has a file per instrument (``export_instruments``): the
coherence protocol's, the Likert stages' (``studies.exports.likert``), and the
pairwise and ranking stages' (``studies.exports.comparisons``); an export covering
stages of several is a zip holding one file of each (``export_zip_write``).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterator, Mapping

from ..models import ErrorCategory, Stage, Study
from .codes import CODES_COLUMNS, codes_csv_chunks, codes_filename, codes_rows
from .csvtext import csv_chunks
from .files import TEXT_FILES, file_extension, rows_file_write, rows_text_chunks
from .options import (
    FILES,
    FORMATS,
    ExportOptions,
    export_instruments,
    export_options_clean,
    file_clean,
    flag_clean,
)
from .rows import coherence_judgements, export_header, export_rows

__all__ = [
    "CODES_COLUMNS",
    "FILES",
    "FORMATS",
    "TEXT_FILES",
    "ExportOptions",
    "codes_csv_chunks",
    "codes_filename",
    "codes_rows",
    "csv_chunks",
    "export_column_kinds",
    "export_csv_chunks",
    "export_file_write",
    "export_filename",
    "export_header",
    "export_instruments",
    "export_options_clean",
    "export_row_count",
    "export_rows",
    "export_text_chunks",
    "export_zip_write",
    "file_clean",
    "file_extension",
    "flag_clean",
    "rows_file_write",
    "rows_text_chunks",
]


def export_csv_chunks(*, study: Study, options: ExportOptions) -> Iterator[str]:
    """The CSV text in chunks of a few hundred rows (for a streaming response or a file)."""
    return csv_chunks(export_rows(study=study, options=options))


def export_column_kinds(
    *, study: Study, options: ExportOptions, instrument: str | None = None
) -> dict[str, str]:
    """The typed files' kinds of the export's own columns: the coherence formats'
    category columns (named by slug) are Yes / empty booleans; the other columns' kinds
    are in ``studies.columns``."""
    instrument = instrument or export_instruments(study=study, options=options)[0]
    if options.fmt == "training" or instrument != Stage.Instrument.COHERENCE:
        return {}
    return {
        slug: "boolean"
        for slug in ErrorCategory.objects.filter(study=study).values_list("slug", flat=True)
    }


def export_row_count(*, study: Study, options: ExportOptions, instrument: str) -> int:
    """How many rows (the header not counted) the export's ``instrument`` file has: one
    query counting what its rows read."""
    if options.fmt == "training":
        from .training import training_answers

        return training_answers(study=study, options=options).count()
    if instrument == Stage.Instrument.LIKERT:
        from .likert import likert_ratings

        return likert_ratings(study=study, options=options).count()
    if instrument in (Stage.Instrument.PAIRWISE, Stage.Instrument.RANKING):
        from .comparisons import comparison_judgements

        return comparison_judgements(study=study, options=options, instrument=instrument).count()
    return coherence_judgements(study=study, options=options).count()


def export_text_chunks(*, study: Study, options: ExportOptions) -> Iterator[str]:
    """A text file's content (CSV or JSON Lines, as ``options.file``) in chunks."""
    return rows_text_chunks(
        export_rows(study=study, options=options),
        file=options.file,
        kinds=export_column_kinds(study=study, options=options),
    )


def export_file_write(*, study: Study, options: ExportOptions, target) -> None:
    """Write the rows as ``options.file`` to ``target`` (see ``rows_file_write``)."""
    rows_file_write(
        export_rows(study=study, options=options),
        file=options.file,
        target=target,
        sheet_name="annotations",
        kinds=export_column_kinds(study=study, options=options),
    )


def export_filename(*, study: Study, options: ExportOptions, instrument: str | None = None) -> str:
    """The download's name: ``<slug>-annotations[-full|-training][-likert|-pairwise|
    -ranking].csv`` (or ``.xlsx``, ``.jsonl``, ``.parquet``); ``<slug>-annotations.zip``
    for an export of several files, whose ``instrument`` file is named as it would be
    alone."""
    instruments = export_instruments(study=study, options=options)
    if instrument is None and len(instruments) > 1:
        return f"{study.slug}-annotations.zip"
    instrument = instrument or instruments[0]
    suffix = {"published": "", "full": "-full", "training": "-training"}[options.fmt]
    if instrument != Stage.Instrument.COHERENCE:
        suffix += f"-{instrument}"
    return f"{study.slug}-annotations{suffix}.{file_extension(options.file)}"


def export_zip_write(
    *, study: Study, options: ExportOptions, target, texts: Mapping[str, str] | None = None
) -> None:
    """A zip of the export's file per instrument (each as ``options.file``) to
    ``target`` (a path or a binary file), after the ``texts`` given (name → text, such
    as a dataset card). Raises ValidationError (on ``file``) when a workbook's rows do
    not fit in a worksheet."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in (texts or {}).items():
            archive.writestr(name, text)
        for instrument in export_instruments(study=study, options=options):
            name = export_filename(study=study, options=options, instrument=instrument)
            rows = export_rows(study=study, options=options, instrument=instrument)
            kinds = export_column_kinds(study=study, options=options, instrument=instrument)
            if options.file in TEXT_FILES:
                with archive.open(name, "w") as member:
                    for chunk in rows_text_chunks(rows, file=options.file, kinds=kinds):
                        member.write(chunk.encode("utf-8"))
                continue
            with tempfile.TemporaryFile() as built:
                rows_file_write(
                    rows, file=options.file, target=built, sheet_name="annotations", kinds=kinds
                )
                built.seek(0)
                with archive.open(name, "w") as member:
                    while block := built.read(1 << 20):
                        member.write(block)
