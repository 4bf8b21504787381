"""A finished run's report as downloads (interfaces only): the JSON report, each table
as CSV and each figure as SVG, for the dashboard's links. For roles that may run and
download analyses (``Capability.ANALYSE``); the dashboard shows the rest the report."""

import json

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from studies.models import Study
from studies.permissions import Capability
from studies.views.common import staff_page

from .models import AnalysisRun
from .plots import PLOTS
from .report.tidy_csv import table_csv
from .tables import report_tables


def _done_run(study: Study, run_id: int) -> AnalysisRun:
    return get_object_or_404(
        AnalysisRun.objects.select_related("study"),
        pk=run_id,
        study=study,
        status=AnalysisRun.Status.DONE,
    )


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@staff_page(may=Capability.ANALYSE)
def report_json(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    study = request.study
    run = _done_run(study, run_id)
    body = json.dumps(run.result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    return _attachment(response, f"{slugify(study.slug)}-analysis-{run.pk}.json")


@require_GET
@staff_page(may=Capability.ANALYSE)
def report_table(request: HttpRequest, slug: str, run_id: int, table: str) -> HttpResponse:
    """One table of a run's report as tidy CSV (raw numbers, empty = null)."""
    study = request.study
    run = _done_run(study, run_id)
    found = next((t for t in report_tables(run.result) if t.slug == table), None)
    if found is None:
        raise Http404("No such table.")
    response = HttpResponse(table_csv(found), content_type="text/csv; charset=utf-8")
    return _attachment(response, f"{slugify(study.slug)}-analysis-{run.pk}-{table}.csv")


@require_GET
@staff_page(may=Capability.ANALYSE)
def plot_svg(request: HttpRequest, slug: str, run_id: int, plot: str) -> HttpResponse:
    """One figure of a run's report as SVG; ``?download=1`` as an attachment,
    ``?by=source`` splits the label distribution by source."""
    if plot not in PLOTS:
        raise Http404("No such figure.")
    study = request.study
    run = _done_run(study, run_id)
    if plot == "label-distribution" and request.GET.get("by") == "source":
        svg, name = PLOTS[plot](run.result, by="source"), f"{plot}-by-source"
    else:
        svg, name = PLOTS[plot](run.result), plot
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    if request.GET.get("download"):
        _attachment(response, f"{slugify(study.slug)}-{run.pk}-{name}.svg")
    return response
