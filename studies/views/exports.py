"""Staff downloads of a study's annotations (the published or the full format, as CSV
or as an Excel workbook)."""

import tempfile

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from ..datafiles.xlsx import CONTENT_TYPE as XLSX_CONTENT_TYPE
from ..exports import (
    FILES,
    export_csv_chunks,
    export_filename,
    export_options_clean,
    export_xlsx_write,
    rows_csv_chunks,
    rows_xlsx_write,
)
from ..exports.questionnaires import questionnaire_export_filename, questionnaire_export_rows
from ..models import Study
from ..permissions import user_may_read_judgements, user_may_read_studies


def export_response(*, study: Study, options) -> StreamingHttpResponse | FileResponse:
    """A streaming download. CSV: the first rows leave while the rest are still read.
    Excel: the workbook is built in a temporary file (constant memory: a zip archive
    can only be finished at its end), then streamed from there. Raises ValidationError
    when the rows do not fit in an Excel worksheet."""
    return file_response(
        filename=export_filename(study=study, options=options),
        file=options.file,
        csv_chunks=lambda: export_csv_chunks(study=study, options=options),
        xlsx_write=lambda target: export_xlsx_write(study=study, options=options, target=target),
    )


def file_response(*, filename: str, file: str, csv_chunks, xlsx_write):
    """``export_response`` for any export: ``csv_chunks()`` gives the CSV text,
    ``xlsx_write(target)`` writes the workbook."""
    if file == "xlsx":
        # Closed by the response once sent, or here on failure.
        target = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            xlsx_write(target)
        except BaseException:
            target.close()
            raise
        target.seek(0)
        response = FileResponse(
            target, as_attachment=True, filename=filename, content_type=XLSX_CONTENT_TYPE
        )
    else:
        response = StreamingHttpResponse(
            (chunk.encode("utf-8") for chunk in csv_chunks()),
            content_type="text/csv; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _bad_request(exc: ValidationError) -> HttpResponseBadRequest:
    lines = [f"{field}: {'; '.join(msgs)}" for field, msgs in exc.message_dict.items()]
    return HttpResponseBadRequest(
        "Nothing exported:\n" + "\n".join(lines), content_type="text/plain; charset=utf-8"
    )


@require_GET
@staff_member_required
def export_annotations(request, slug: str):
    """``?format=published|full&file=csv|csv-spreadsheet-safe|xlsx&stage=...&group=...
    &source=...&include_expired=1&include_rejected=1&extended=1`` (lists repeat the
    parameter)."""
    user = request.user
    if not (user_may_read_studies(user) and user_may_read_judgements(user)):
        raise PermissionDenied  # an export is rows of judgements (studies.permissions)
    study = get_object_or_404(Study, slug=slug)
    try:
        options = export_options_clean(study=study, data=request.GET)
        return export_response(study=study, options=options)
    except ValidationError as exc:
        return _bad_request(exc)


@require_GET
@staff_member_required
def export_questionnaires(request, slug: str):
    """The questionnaire answers (``studies.exports.questionnaires``):
    ``?file=csv|csv-spreadsheet-safe|xlsx``."""
    user = request.user
    if not (user_may_read_studies(user) and user_may_read_judgements(user)):
        raise PermissionDenied  # answers, like judgements (studies.permissions)
    study = get_object_or_404(Study, slug=slug)
    file = request.GET.get("file") or "csv"
    if file not in FILES:
        choices = ", ".join(f'"{name}"' for name in FILES)
        return _bad_request(ValidationError({"file": f'Choose {choices}, not "{file}".'}))

    def rows():
        return questionnaire_export_rows(
            study=study, spreadsheet_safe=file == "csv-spreadsheet-safe"
        )

    try:
        return file_response(
            filename=questionnaire_export_filename(study=study, file=file),
            file=file,
            csv_chunks=lambda: rows_csv_chunks(rows()),
            xlsx_write=lambda target: rows_xlsx_write(
                rows=rows(), target=target, sheet_name="questionnaires"
            ),
        )
    except ValidationError as exc:
        return _bad_request(exc)
