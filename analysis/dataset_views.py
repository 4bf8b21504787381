"""The dataset card and the dataset as downloads (interfaces only): linked from the
admin's export page; the API sends the same (``analysis.apis``). The card describes the
row-level files it accompanies, so both need a role that may read them."""

from django.http import FileResponse, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from studies.models import Study
from studies.permissions import Capability
from studies.views.common import staff_page
from studies.views.exports import built_file_response, private_download

from .dataset_card import dataset_card, dataset_zip_filename, dataset_zip_write

CARD_CONTENT_TYPE = "text/markdown; charset=utf-8"


def dataset_card_response(study: Study) -> HttpResponse:
    response = HttpResponse(dataset_card(study), content_type=CARD_CONTENT_TYPE)
    response["Content-Disposition"] = 'attachment; filename="README.md"'
    return private_download(response)


def dataset_zip_response(study: Study) -> FileResponse:
    """The zip, built in a temporary file, then streamed from there."""
    return built_file_response(
        lambda target: dataset_zip_write(study=study, target=target),
        filename=dataset_zip_filename(study),
        content_type="application/zip",
    )


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
