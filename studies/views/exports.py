"""Staff downloads of a study's annotations (the published or the full format, as CSV,
an Excel workbook, JSON Lines or Parquet) and of its questionnaire answers: pseudonymous rows, for roles
that may read them (``Capability.READ_ROWS``; no platform id, e-mail or token is in
them)."""

import tempfile
from collections.abc import Callable, Iterable, Mapping

from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from ..exports import (
    TEXT_FILES,
    export_column_kinds,
    export_filename,
    export_instruments,
    export_options_clean,
    export_rows,
    export_zip_write,
    file_clean,
    rows_file_write,
    rows_text_chunks,
)
from ..exports.files import CONTENT_TYPES
from ..exports.questionnaires import questionnaire_export_filename, questionnaire_export_rows
from ..models import Study
from ..permissions import Capability
from .common import staff_page


def rows_response(
    *,
    rows: Callable[[], Iterable[list]],
    file: str,
    filename: str,
    sheet_name: str,
    kinds: Mapping[str, str] | None = None,
) -> StreamingHttpResponse | FileResponse:
    """A download of ``rows()`` (the header first) as ``file`` (one of ``FILES``; the
    rows are already spreadsheet-safe when asked; ``kinds``: the typed files' extra
    column kinds). CSV and JSON Lines stream: the first rows leave while the rest are
    still read. An Excel workbook or a Parquet file is built in a temporary file
    (constant memory: either can only be finished at its end), then streamed from
    there. Raises ValidationError when the rows do not fit in an Excel worksheet."""
    if file not in TEXT_FILES:
        return built_file_response(
            lambda target: rows_file_write(
                rows(), file=file, target=target, sheet_name=sheet_name, kinds=kinds
            ),
            filename=filename,
            content_type=CONTENT_TYPES[file],
        )
    response = StreamingHttpResponse(
        (chunk.encode("utf-8") for chunk in rows_text_chunks(rows(), file=file, kinds=kinds)),
        content_type=CONTENT_TYPES[file],
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return private_download(response)


def private_download(response):
    """A download that no cache keeps and no browser reads as another type."""
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def built_file_response(
    write: Callable[[object], object], *, filename: str, content_type: str
) -> FileResponse:
    """A download of a file ``write(target)`` builds in a temporary file (a workbook,
    Parquet file or zip can only be finished at its end: constant memory), then
    streamed from there; the file is closed by the response once sent, or here on
    failure."""
    target = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the response)
    try:
        write(target)
    except BaseException:
        target.close()
        raise
    target.seek(0)
    return private_download(
        FileResponse(target, as_attachment=True, filename=filename, content_type=content_type)
    )


def export_response(*, study: Study, options) -> StreamingHttpResponse | FileResponse:
    """The annotation export as a download (``rows_response``); a zip of one file per
    instrument when it covers stages of several (built in a temporary file, as a
    workbook is)."""
    if len(export_instruments(study=study, options=options)) > 1:
        return built_file_response(
            lambda target: export_zip_write(study=study, options=options, target=target),
            filename=export_filename(study=study, options=options),
            content_type="application/zip",
        )
    return rows_response(
        rows=lambda: export_rows(study=study, options=options),
        file=options.file,
        filename=export_filename(study=study, options=options),
        sheet_name="annotations",
        kinds=export_column_kinds(study=study, options=options),
    )


def bad_request(exc: ValidationError) -> HttpResponseBadRequest:
    lines = [f"{field}: {'; '.join(msgs)}" for field, msgs in exc.message_dict.items()]
    return HttpResponseBadRequest(
        "Nothing exported:\n" + "\n".join(lines), content_type="text/plain; charset=utf-8"
    )


@require_GET
@staff_page(may=Capability.READ_ROWS)
def export_annotations(request, slug: str):
    """``?format=published|full&file=csv|csv-spreadsheet-safe|xlsx|jsonl|parquet&stage=...
    &group=...&source=...&include_expired=1&include_rejected=1&extended=1`` (lists repeat the
    parameter)."""
    study = request.study
    try:
        options = export_options_clean(study=study, data=request.GET)
        return export_response(study=study, options=options)
    except ValidationError as exc:
        return bad_request(exc)


@require_GET
@staff_page(may=Capability.READ_ROWS)
def export_questionnaires(request, slug: str):
    """The questionnaire answers (``studies.exports.questionnaires``):
    ``?file=`` one of ``FILES``."""
    study = request.study
    try:
        file = file_clean(request.GET.get("file"))
        return rows_response(
            rows=lambda: questionnaire_export_rows(
                study=study, spreadsheet_safe=file == "csv-spreadsheet-safe"
            ),
            file=file,
            filename=questionnaire_export_filename(study=study, file=file),
            sheet_name="questionnaires",
        )
    except ValidationError as exc:
        if not hasattr(exc, "error_dict"):
            exc = ValidationError({"file": exc.messages})
        return bad_request(exc)
