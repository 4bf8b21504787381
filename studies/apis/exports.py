"""The annotation export as an API download (the same files as the admin and the
command: studies/exports/)."""

from types import SimpleNamespace

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import renderers
from rest_framework.negotiation import DefaultContentNegotiation

from ..api_framework import ResearcherApi, error_responses
from ..datafiles.typed import JSONL_CONTENT_TYPE, PARQUET_CONTENT_TYPE
from ..datafiles.xlsx import CONTENT_TYPE as XLSX_CONTENT_TYPE
from ..exports import FILES, FORMATS, export_options_clean
from ..permissions import Capability
from ..views.exports import export_response
from .common import TAG_DATA


class CsvRenderer(renderers.BaseRenderer):
    """Lets a client ask for ``Accept: text/csv``; errors then come as plain text."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict) and "message" in data:
            return str(data["message"]).encode("utf-8")
        return b"" if data is None else str(data).encode("utf-8")


class XlsxRenderer(CsvRenderer):
    """Lets a client ask for the Excel workbook's media type; errors come as text."""

    media_type = XLSX_CONTENT_TYPE
    format = "xlsx"
    charset = None


class JsonlRenderer(CsvRenderer):
    """Lets a client ask for JSON Lines' media type; errors come as text."""

    media_type = JSONL_CONTENT_TYPE
    format = "jsonl"


class ParquetRenderer(CsvRenderer):
    """Lets a client ask for Parquet's media type; errors come as text."""

    media_type = PARQUET_CONTENT_TYPE
    format = "parquet"
    charset = None


#: Every kind of file an export offers, as a client may ask for it in ``Accept``.
FILE_RENDERERS = [
    renderers.JSONRenderer,
    CsvRenderer,
    XlsxRenderer,
    JsonlRenderer,
    ParquetRenderer,
]
#: The responses of a download of rows in any of the kinds of file (``FILES``).
FILE_RESPONSES = {
    (200, "text/csv"): OpenApiResponse(
        OpenApiTypes.STR, description="RFC 4180 CSV, UTF-8, one row per line."
    ),
    (200, XLSX_CONTENT_TYPE): OpenApiResponse(
        OpenApiTypes.BINARY, description="With file=xlsx: one worksheet, text cells."
    ),
    (200, JSONL_CONTENT_TYPE): OpenApiResponse(
        OpenApiTypes.STR,
        description="With file=jsonl: one JSON object per line, typed values.",
    ),
    (200, PARQUET_CONTENT_TYPE): OpenApiResponse(
        OpenApiTypes.BINARY, description="With file=parquet: typed columns."
    ),
}


class ExportNegotiation(DefaultContentNegotiation):
    """``?format=`` names the export format here (as on the download URL), not one of
    DRF's renderers, so DRF's format override is off for this view."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)


#: ``?file=``: the kinds of file every export offers (``FILES``).
FILE_PARAMETER = OpenApiParameter(
    "file",
    str,
    enum=list(FILES),
    description="Default: csv. " + " ".join(f"`{name}`: {what}." for name, what in FILES.items()),
)


def _list(name: str, what: str) -> OpenApiParameter:
    return OpenApiParameter(
        name, str, many=True, description=f"Only this {what} (repeat for several)."
    )


class AnnotationExportApi(ResearcherApi):
    """Streams the study's annotations: the published format or the full
    audit format, as CSV (texts exactly as stored, or spreadsheet-safe), as an Excel
    workbook, or typed for publishing as JSON Lines or Parquet; same options as `manage.py export_annotations`. Likert, pairwise and
    ranking stages have published formats of their own: an export covering stages of
    several instruments is a zip of one file per instrument."""

    may = Capability.READ_ROWS
    renderer_classes = FILE_RENDERERS
    content_negotiation_class = ExportNegotiation

    @extend_schema(
        tags=TAG_DATA,
        summary="Export annotations as CSV, Excel, JSON Lines or Parquet",
        parameters=[
            OpenApiParameter("format", str, enum=list(FORMATS), description="Default: published."),
            FILE_PARAMETER,
            _list("stage", "stage name"),
            _list("group", "group name"),
            _list("source", "reflection source"),
            OpenApiParameter("include_expired", bool, description="Also expired batches."),
            OpenApiParameter("include_rejected", bool, description="Also rejected batches."),
            OpenApiParameter(
                "extended",
                bool,
                description="Published format plus annotator_group, most_evident_error, empathy.",
            ),
        ],
        responses={
            **FILE_RESPONSES,
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="The published format of stages using several instruments (the "
                "coherence protocol, Likert ratings, pairwise preference, ranking): one file "
                "per instrument, as `file` says.",
            ),
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request, slug: str):
        options = export_options_clean(study=request.study, data=request.query_params)
        return export_response(study=request.study, options=options)
