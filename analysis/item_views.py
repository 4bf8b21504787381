"""The item-level export as a download (interfaces only): the dashboard's link and the
admin export page's form (``items_csv``), and the streamed response the API sends too
(``items_response``): any of the annotation export's kinds of file, written as the
annotation export writes them (``studies.views.exports.rows_response``)."""

from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from studies.exports.options import flag_clean
from studies.models import Study
from studies.permissions import Capability
from studies.views.common import staff_page
from studies.views.exports import rows_response

from .item_export import KINDS, items_filename, items_parameters_clean, items_rows


@require_GET
@staff_page(may=Capability.READ_ROWS)
def items_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """The item-level export, streamed: ``?exclude_source=NAME`` (repeatable) and
    ``include_expired=1`` choose the judgements as the analysis parameters do;
    ``file=`` as the annotation export (``FILES``);
    ``instrument=likert`` the Likert stages' items. Rows per item and
    group are row-level data: they need a role that may read the annotation export."""
    study = request.study
    try:
        include_expired = flag_clean(request.GET.get("include_expired", ""))
    except ValidationError as exc:
        return _nothing_exported({"include_expired": exc.messages})
    try:
        parameters = items_parameters_clean(
            study=study,
            excluded_sources=request.GET.getlist("exclude_source"),
            include_expired=include_expired,
            file=request.GET.get("file", ""),
            instrument=request.GET.get("instrument", ""),
        )
        return items_response(study=study, parameters=parameters)
    except ValidationError as exc:
        return _nothing_exported(exc.message_dict)


def items_response(*, study: Study, parameters: dict) -> StreamingHttpResponse | FileResponse:
    """The item-level export as a streaming download (the dashboard's and the API's).
    Raises ValidationError when an Excel workbook cannot hold it."""
    return rows_response(
        rows=lambda: items_rows(study=study, parameters=parameters),
        file=parameters["file"],
        filename=items_filename(study=study, parameters=parameters),
        sheet_name="items",
        kinds=KINDS,
    )


def _nothing_exported(errors: dict[str, list[str]]) -> HttpResponse:
    lines = [f"{field}: {'; '.join(problems)}" for field, problems in errors.items()]
    return HttpResponse(
        "Nothing exported:\n" + "\n".join(lines),
        status=400,
        content_type="text/plain; charset=utf-8",
    )
