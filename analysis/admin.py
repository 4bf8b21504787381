import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.template.defaultfilters import truncatechars
from django.urls import path
from django.utils.html import format_html

from studies.admin.study import StudyAdmin as StudiesStudyAdmin
from studies.datafiles.admin import DataFileUploadForm, data_file_import_view
from studies.models import Study

from .importers import automatic_scores_import
from .models import AnalysisRun, AutomaticScore
from .services import analysis_run_enqueue

# The study list's "Run the analysis" action lives here, since analysis builds on
# studies and never the reverse: the study admin registered by the studies app is
# registered again with the action added (INSTALLED_APPS lists studies first).
admin.site.unregister(Study)


@admin.register(Study)
class StudyAdmin(StudiesStudyAdmin):
    actions = ("run_analysis", *StudiesStudyAdmin.actions)

    @admin.action(description="Run the analysis for the selected studies")
    def run_analysis(self, request, queryset):
        for study in queryset:
            analysis_run_enqueue(study=study, user=request.user)
        self.message_user(
            request,
            f"Queued {queryset.count()} analysis run(s); see Analysis runs.",
            messages.SUCCESS,
        )


@admin.register(AnalysisRun)
class AnalysisRunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "study", "status", "progress", "created_at", "duration")
    list_filter = ("status", "study")
    readonly_fields = (
        "study",
        "status",
        "progress",
        "parameters_pretty",
        "result_pretty",
        "error",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
    )
    exclude = ("parameters", "result")

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("study")
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            qs = qs.defer("result")
        return qs

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="duration")
    def duration(self, obj):
        seconds = obj.duration_seconds
        return f"{seconds:.1f} s" if seconds is not None else ""

    @admin.display(description="parameters")
    def parameters_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.parameters, indent=2))

    @admin.display(description="result")
    def result_pretty(self, obj):
        if obj.result is None:
            return ""
        return format_html("<pre>{}</pre>", json.dumps(obj.result, indent=2, ensure_ascii=False))


class ImportScoresForm(DataFileUploadForm):
    extensions = (".csv",)
    file = forms.FileField(help_text="A .csv file of scores (see the README).")


@admin.register(AutomaticScore)
class AutomaticScoreAdmin(admin.ModelAdmin):
    """Scores are written only by the import (the study page's *Import automatic scores*
    or ``manage.py import_scores``); researchers look, and may delete a wrong evaluator's
    rows."""

    list_display = (
        "evaluator", "score", "stage", "dialogue", "source", "reflection_text", "imported_at",
    )  # fmt: skip
    list_filter = ("study", "evaluator", "stage")
    list_select_related = ("stage", "reflection__context")
    search_fields = ("evaluator", "reflection__text", "reflection__context__external_id")
    readonly_fields = (
        "study", "stage", "reflection", "evaluator", "score", "imported_at",
    )  # fmt: skip

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="dialogue", ordering="reflection__context__external_id")
    def dialogue(self, obj):
        return obj.reflection.context.external_id

    @admin.display(description="source", ordering="reflection__source")
    def source(self, obj):
        return obj.reflection.source

    @admin.display(description="reflection")
    def reflection_text(self, obj):
        return truncatechars(obj.reflection.text, 80)

    def get_urls(self):
        return [
            path(
                "import/<int:study_id>/",
                self.admin_site.admin_view(self.import_view),
                name="analysis_automaticscore_import",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest, study_id: int):
        """Reached from the study's admin page; needs the right to change the study and
        to add and change scores."""
        study = get_object_or_404(Study, pk=study_id)
        if not request.user.has_perms(
            (
                "studies.change_study",
                "analysis.add_automaticscore",
                "analysis.change_automaticscore",
            )
        ):
            raise PermissionDenied
        return data_file_import_view(
            request,
            admin_site=self.admin_site,
            study=study,
            form_class=ImportScoresForm,
            template="admin/analysis/automaticscore/import.html",
            title=f"Import automatic scores into {study.title}",
            do_import=lambda upload: automatic_scores_import(study=study, file=upload),
            extra_context={"n_scores": study.automatic_scores.count()},
        )
