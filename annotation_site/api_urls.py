"""The REST API under /api/ (docs/developers/api.md); the views live in each app's apis.py."""

from csp.decorators import csp_replace
from django.urls import path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from analysis import apis as analysis_apis
from studies import apis as study_apis
from studies.api_framework import ApiNotFound
from studies.csp import API_DOCS_POLICY

app_name = "api"

urlpatterns = [
    # The OpenAPI 3 schema (YAML; ?format=json for JSON) and its documentation pages.
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The documentation pages are the Content-Security-Policy's one exception
    # (studies.csp.API_DOCS_POLICY): their renderers inject styles.
    path(
        "docs/",
        csp_replace(API_DOCS_POLICY)(
            SpectacularSwaggerSplitView.as_view(
                url_name="api:schema", template_name="api/swagger_ui.html"
            )
        ),
        name="docs",
    ),
    path(
        "redoc/",
        csp_replace(API_DOCS_POLICY)(
            SpectacularRedocView.as_view(url_name="api:schema", template_name="api/redoc.html")
        ),
        name="redoc",
    ),
    # Studies and their configuration.
    path("studies/", study_apis.StudyListApi.as_view(), name="study-list"),
    path("studies/<slug:slug>/", study_apis.StudyDetailApi.as_view(), name="study-detail"),
    path("studies/<slug:slug>/open/", study_apis.StudyOpenApi.as_view(), name="study-open"),
    path("studies/<slug:slug>/stages/", study_apis.StageListApi.as_view(), name="stage-list"),
    path("studies/<slug:slug>/groups/", study_apis.GroupListApi.as_view(), name="group-list"),
    path("studies/<slug:slug>/progress/", study_apis.ProgressApi.as_view(), name="progress"),
    # Materials.
    path("studies/<slug:slug>/contexts/", study_apis.ContextListApi.as_view(), name="context-list"),
    path("studies/<slug:slug>/batches/", study_apis.BatchListApi.as_view(), name="batch-list"),
    path(
        "studies/<slug:slug>/materials/",
        study_apis.MaterialsImportApi.as_view(),
        name="materials-import",
    ),
    # Annotations.
    path(
        "studies/<slug:slug>/assignments/",
        study_apis.AssignmentListApi.as_view(),
        name="assignment-list",
    ),
    path(
        "assignments/<int:assignment_id>/reject/",
        study_apis.AssignmentRejectApi.as_view(),
        name="assignment-reject",
    ),
    path(
        "studies/<slug:slug>/judgements/",
        study_apis.JudgementListApi.as_view(),
        name="judgement-list",
    ),
    path(
        "studies/<slug:slug>/export/",
        study_apis.AnnotationExportApi.as_view(),
        name="annotation-export",
    ),
    path(
        "studies/<slug:slug>/items/",
        analysis_apis.ItemExportApi.as_view(),
        name="item-export",
    ),
    path(
        "studies/<slug:slug>/dataset-card/",
        analysis_apis.DatasetCardApi.as_view(),
        name="dataset-card",
    ),
    path(
        "studies/<slug:slug>/dataset/",
        analysis_apis.DatasetApi.as_view(),
        name="dataset",
    ),
    # Analysis.
    path(
        "studies/<slug:slug>/analysis-runs/",
        analysis_apis.AnalysisRunListApi.as_view(),
        name="analysis-run-list",
    ),
    path(
        "analysis-runs/<int:run_id>/",
        analysis_apis.AnalysisRunDetailApi.as_view(),
        name="analysis-run-detail",
    ),
    # Must stay last: any other path under /api/ ending in "/" is a JSON 404 (paths
    # without the slash still get CommonMiddleware's redirect first).
    re_path(r"^(?:.*/)?$", ApiNotFound.as_view()),
]
