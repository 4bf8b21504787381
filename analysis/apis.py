"""The REST API of analysis runs (interfaces only; docs/developers/api.md).

Starting a run goes through ``analysis_run_enqueue``, the service the dashboard and
the admin action use, so parameters obey ``analysis_parameters_clean`` everywhere.
"""

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, renderers, serializers
from rest_framework.response import Response

from studies.api_framework import (
    PageNumberPagination,
    ResearcherApi,
    error_responses,
    paginated_response,
)
from studies.apis.common import TAG_DATA
from studies.apis.exports import FILE_PARAMETER, FILE_RENDERERS, FILE_RESPONSES, CsvRenderer
from studies.permissions import Capability, study_object_check

from .dataset_views import dataset_card_response, dataset_zip_response
from .item_export import COLUMNS as ITEM_COLUMNS
from .item_export import LIKERT_COLUMNS as ITEM_LIKERT_COLUMNS
from .item_export import items_parameters_clean
from .item_views import items_response
from .models import AnalysisRun
from .parameters import MAX_BOOTSTRAP_RESAMPLES
from .selectors.judgements import analysis_run_get, analysis_run_list
from .services import analysis_run_enqueue

TAGS = ["analysis"]
MAX_RESAMPLES = MAX_BOOTSTRAP_RESAMPLES
MAX_SEED = 2**32 - 1


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.CharField(source="study.slug", help_text="The study's slug.")
    status = serializers.ChoiceField(choices=AnalysisRun.Status.choices)
    progress = serializers.IntegerField(help_text="Percent done.")
    trigger = serializers.ChoiceField(choices=AnalysisRun.Trigger.choices)
    parameters = serializers.JSONField(help_text="The cleaned parameters, defaults filled in.")
    error = serializers.CharField(help_text="Why a failed run failed; empty otherwise.")
    created_at = serializers.DateTimeField()
    dispatched_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    duration_seconds = serializers.FloatField(allow_null=True)

    class Meta:
        ref_name = "AnalysisRun"


class RunDetailSerializer(RunSerializer):
    result = serializers.JSONField(
        allow_null=True,
        help_text="The JSON report (documentation: /docs/analysts/report/); null until done.",
    )

    class Meta:
        ref_name = "AnalysisRunWithReport"


class AnalysisRunListApi(ResearcherApi):
    # Reading runs and their reports is downloading analyses, as starting one is running
    # them: the same capability (viewers read the aggregates on the dashboard).
    may = Capability.ANALYSE
    pagination_class = PageNumberPagination

    class InputSerializer(serializers.Serializer):
        excluded_sources = serializers.ListField(
            child=serializers.CharField(),
            required=False,
            help_text='Synthetic sources to leave out, e.g. ["BART"].',
        )
        include_expired = serializers.BooleanField(
            required=False, help_text="Also count batches that expired before submission."
        )
        bootstrap_resamples = serializers.IntegerField(
            required=False,
            min_value=0,
            max_value=MAX_RESAMPLES,
            help_text="For the 95% intervals; 0 turns them off. Default 1000.",
        )
        seed = serializers.IntegerField(
            required=False, min_value=0, max_value=MAX_SEED, help_text="Bootstrap seed."
        )
        fast_seconds = serializers.FloatField(
            required=False,
            min_value=0,
            help_text="Quality: answers faster than this many seconds are fast. Default 3.",
        )
        agreement_floor = serializers.FloatField(
            required=False,
            min_value=0,
            max_value=1,
            help_text="Quality: annotators agreeing with their group's majority less "
            "often are flagged. Default 0.5.",
        )
        crossed_settings = serializers.ListField(
            child=serializers.CharField(),
            required=False,
            help_text='Generation settings to cross, e.g. ["model", "p"]: the label '
            "distribution per combination of their values (at most 4).",
        )

        class Meta:
            ref_name = "AnalysisRunParameters"

        def to_internal_value(self, data):
            value = super().to_internal_value(data)
            # Other keys go on to analysis_parameters_clean, which refuses them in the
            # words it uses everywhere.
            value.update({key: data[key] for key in data if key not in self.fields})
            return value

    @extend_schema(
        tags=TAGS,
        summary="The study's analysis runs, newest first (without reports)",
        responses={200: RunSerializer(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request, slug: str):
        return paginated_response(
            paginator=self.pagination_class(),
            serializer_class=RunSerializer,
            queryset=analysis_run_list(study_id=request.study.pk),
            request=request,
            view=self,
        )

    @extend_schema(
        tags=TAGS,
        summary="Start an analysis run",
        description="Queues a run; poll `GET /api/analysis-runs/{id}/` (the Location header) "
        "until its status is done or failed.",
        request=InputSerializer,
        responses={
            202: OpenApiResponse(RunSerializer, "Queued."),
            **error_responses(400, 401, 403, 404, 413, 415),
        },
    )
    def post(self, request, slug: str):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = analysis_run_enqueue(
            study=request.study, parameters=serializer.validated_data, user=request.user
        )
        return Response(
            RunSerializer(run).data,
            status=202,
            headers={"Location": reverse("api:analysis-run-detail", args=[run.pk])},
        )


class AnalysisRunDetailApi(ResearcherApi):
    """One run; `result` is the JSON report (documentation: /docs/analysts/report/), null
    until the run is done. Needs a role in the run's study that may run and download
    analyses (404 without a role there)."""

    may = Capability.ANALYSE

    @extend_schema(
        tags=TAGS,
        summary="An analysis run with its JSON report",
        responses={200: RunDetailSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request, run_id: int):
        run = analysis_run_get(run_id=run_id)
        missing = f"No analysis run {run_id}."
        if run is None:
            raise exceptions.NotFound(missing)
        study_object_check(request.user, run.study, self.may, missing=missing)
        return Response(RunDetailSerializer(run).data)


class ItemExportApi(ResearcherApi):
    """Streams the item-level CSV: one row per (stage, item, group) of the judgements the
    report analyses (the same as `manage.py export_items`). Row-level data: needs a role
    that may read the annotation export."""

    renderer_classes = FILE_RENDERERS
    may = Capability.READ_ROWS

    class InputSerializer(serializers.Serializer):
        exclude_source = serializers.ListField(child=serializers.CharField(), required=False)
        include_expired = serializers.BooleanField(required=False, default=False)
        file = serializers.CharField(required=False, default="csv")
        instrument = serializers.CharField(required=False, default="", allow_blank=True)

        class Meta:
            ref_name = "ItemExportParameters"

    @extend_schema(
        tags=TAG_DATA,
        summary="Export the item-level CSV (streamed)",
        parameters=[
            OpenApiParameter(
                "exclude_source",
                str,
                many=True,
                description="Leave out this reflection source (repeat for several), as the "
                "analysis does.",
            ),
            OpenApiParameter(
                "include_expired", bool, description="Also batches that expired before submission."
            ),
            FILE_PARAMETER,
            OpenApiParameter(
                "instrument",
                str,
                enum=["coherence", "likert"],
                description="Whose items: the coherence protocol's stages (the default) or "
                "the Likert stages' (the default in a study of Likert stages only), one row "
                "per item, group and dimension.",
            ),
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description=f"RFC 4180 CSV, UTF-8, columns {', '.join(ITEM_COLUMNS)}; "
                f"for Likert stages {', '.join(ITEM_LIKERT_COLUMNS)}.",
            ),
            **{key: value for key, value in FILE_RESPONSES.items() if key[1] != "text/csv"},
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request, slug: str):
        study = request.study
        data = {"exclude_source": request.query_params.getlist("exclude_source")}
        for key in ("include_expired", "file", "instrument"):
            if key in request.query_params:
                data[key] = request.query_params[key]
        serializer = self.InputSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        parameters = items_parameters_clean(
            study=study,
            excluded_sources=serializer.validated_data.get("exclude_source", []),
            include_expired=serializer.validated_data["include_expired"],
            file=serializer.validated_data["file"],
            instrument=serializer.validated_data["instrument"],
        )
        return items_response(study=study, parameters=parameters)


class MarkdownRenderer(CsvRenderer):
    """Lets a client ask for ``Accept: text/markdown``; errors then come as text."""

    media_type = "text/markdown"
    format = "md"


class ZipRenderer(MarkdownRenderer):
    media_type = "application/zip"
    format = "zip"
    charset = None


class DatasetCardApi(ResearcherApi):
    """The study's dataset card (`README.md`), generated as the study stands: what the
    published files hold, who annotated, how they were recruited and paid, the protocol
    and the agreement of the newest finished analysis run. It goes with the row-level
    files, so it needs a role that may read them."""

    may = Capability.READ_ROWS
    renderer_classes = [renderers.JSONRenderer, MarkdownRenderer]

    @extend_schema(
        tags=TAG_DATA,
        summary="The dataset card (README.md)",
        responses={
            (200, "text/markdown"): OpenApiResponse(
                OpenApiTypes.STR, description="Markdown with a YAML header, as dataset hubs read."
            ),
            **error_responses(401, 403, 404),
        },
    )
    def get(self, request, slug: str):
        return dataset_card_response(request.study)


class DatasetApi(ResearcherApi):
    """The dataset as a zip: `README.md` (the card) and the published format with its
    optional columns as Parquet, one file per instrument."""

    may = Capability.READ_ROWS
    renderer_classes = [renderers.JSONRenderer, ZipRenderer]

    @extend_schema(
        tags=TAG_DATA,
        summary="The dataset (zip of the card and the Parquet files)",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
            **error_responses(401, 403, 404),
        },
    )
    def get(self, request, slug: str):
        return dataset_zip_response(request.study)
