"""Staff downloads of a study's annotations (the published or the full CSV)."""

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from ..exports import export_csv_chunks, export_filename, export_options_clean
from ..models import Study


def export_response(*, study: Study, options) -> StreamingHttpResponse:
    """A streaming CSV download: the first rows leave while the rest are still read."""
    response = StreamingHttpResponse(
        (chunk.encode("utf-8") for chunk in export_csv_chunks(study=study, options=options)),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{export_filename(study=study, options=options)}"'
    )
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
@staff_member_required
def export_annotations(request, slug: str):
    """``?format=published|full&stage=...&group=...&source=...&include_expired=1
    &include_rejected=1&extended=1`` (lists repeat the parameter)."""
    if not any(map(request.user.has_perm, ("studies.view_study", "studies.change_study"))):
        raise PermissionDenied  # staff who may not see studies may not export them
    study = get_object_or_404(Study, slug=slug)
    try:
        options = export_options_clean(study=study, data=request.GET)
    except ValidationError as exc:
        lines = [f"{field}: {'; '.join(msgs)}" for field, msgs in exc.message_dict.items()]
        return HttpResponseBadRequest(
            "Nothing exported:\n" + "\n".join(lines), content_type="text/plain; charset=utf-8"
        )
    return export_response(study=study, options=options)
