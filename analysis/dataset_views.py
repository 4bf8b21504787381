"""The dataset card and the dataset as downloads (interfaces only): linked from the
admin's export page; the API sends the same (``analysis.apis``). The card describes the
row-level files it accompanies, so both need a role that may read them."""

import tempfile

from django.http import FileResponse, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from studies.models import Study
from studies.permissions import Capability
from studies.views.common import staff_page

from .dataset_card import dataset_card, dataset_zip_filename, dataset_zip_write

CARD_CONTENT_TYPE = "text/markdown; charset=utf-8"


def dataset_card_response(study: Study) -> HttpResponse:
    response = HttpResponse(dataset_card(study), content_type=CARD_CONTENT_TYPE)
    response["Content-Disposition"] = 'attachment; filename="README.md"'
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def dataset_zip_response(study: Study) -> FileResponse:
    """The zip is built in a temporary file (a zip can only be finished at its end),
    then streamed from there."""
    target = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the response)
    try:
        dataset_zip_write(study=study, target=target)
    except BaseException:
        target.close()
        raise
    target.seek(0)
    response = FileResponse(
        target,
        as_attachment=True,
        filename=dataset_zip_filename(study),
        content_type="application/zip",
    )
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
@staff_page(may=Capability.READ_ROWS)
def dataset_card_download(request: HttpRequest, slug: str) -> HttpResponse:
    """``README.md``: the study's dataset card."""
    return dataset_card_response(request.study)


@require_GET
@staff_page(may=Capability.READ_ROWS)
def dataset_download(request: HttpRequest, slug: str) -> FileResponse:
    """``<slug>-dataset.zip``: the card and the published files as Parquet."""
    return dataset_zip_response(request.study)
