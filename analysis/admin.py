import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.template.defaultfilters import truncatechars
from django.urls import path
from django.utils.html import format_html

from studies.admin.per_study import PerStudyAdminMixin, study_page
from studies.admin.study import StudyAdmin as StudiesStudyAdmin
from studies.datafiles.admin import DataFileUploadForm, data_file_import_view
from studies.models import Study
from studies.permissions import Capability

from .computed_scores import automatic_scores_compute_enqueue, scores_compute_notice
from .importers import automatic_scores_import
from .metrics.overlap import METRICS
from .models import AnalysisRun, AutomaticScore
from .services import analysis_run_enqueue

# The study list's "Run the analysis" action lives here, since analysis builds on
# studies and never the reverse: the study admin registered by the studies app is
# registered again with the action added (INSTALLED_APPS lists studies first).
admin.site.unregister(Study)


@admin.register(Study)
class StudyAdmin(StudiesStudyAdmin):
    actions = ("run_analysis", "compute_scores", *StudiesStudyAdmin.actions)

    def has_analyse_permission(self, request) -> bool:
        return self.may(request, None, Capability.ANALYSE)

    @admin.action(description="Run the analysis for the selected studies", permissions=["analyse"])
    def run_analysis(self, request, queryset):
        if self.action_refused(request, queryset, Capability.ANALYSE):
            return
        for study in queryset:
            analysis_run_enqueue(study=study, user=request.user)
        self.message_user(
            request,
            f"Queued {queryset.count()} analysis run(s); see Analysis runs.",
            messages.SUCCESS,
        )

    @admin.action(
        description="Compute BLEU-4 and ROUGE-L scores for the selected studies",
        permissions=["analyse"],
    )
    def compute_scores(self, request, queryset):
        """Both metrics, on the worker; a study whose computation is refused (no human
        reflections, scores imported under a metric's name) is named with the reason and
        nothing is queued for it (to replace imported scores, use the dashboard or
        ``manage.py compute_scores --replace``)."""
        if self.action_refused(request, queryset, Capability.ANALYSE):
            return
        queued = []
        for study in queryset:
            try:
                automatic_scores_compute_enqueue(study=study, metrics=METRICS)
            except ValidationError as exc:
                self.message_user(
                    request, f"{study.title}: {' '.join(exc.messages)}", messages.ERROR
                )
            else:
                queued.append(study.slug)
        if queued:
            self.message_user(
                request, scores_compute_notice(METRICS, studies=queued), messages.SUCCESS
            )


@admin.register(AnalysisRun)
class AnalysisRunAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    """Runs, with their results (the analysis's output): for those who may run and
    download analyses; started from the study list's action, never added here."""

    view_capability = delete_capability = Capability.ANALYSE
    add_capability = change_capability = None
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
    file = forms.FileField(help_text="A .csv file of scores, in the format linked above.")
    replace = forms.BooleanField(
        required=False,
        label="Replace computed metrics",
        help_text=f"Accept evaluators named like a metric computed here ({', '.join(METRICS)}, "
        "ignoring case) and delete that metric's computed scores.",
    )


@admin.register(AutomaticScore)
class AutomaticScoreAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    """Scores are written only by the import (the study page's *Import automatic scores*
    or ``manage.py import_scores``) and the computation (the study list's action): an
    analysis's input, so for those who may run analyses, who look, import, compute, and
    may delete a wrong evaluator's rows."""

    view_capability = delete_capability = Capability.ANALYSE
    add_capability = change_capability = None

    list_display = (
        "evaluator", "score", "origin", "stage", "dialogue", "source", "reflection_text",
        "imported_at",
    )  # fmt: skip
    list_filter = ("study", "evaluator", "origin", "stage")
    list_select_related = ("stage", "reflection__context")
    search_fields = ("evaluator", "reflection__text", "reflection__context__external_id")
    readonly_fields = (
        "study", "stage", "reflection", "evaluator", "score", "origin", "imported_at",
    )  # fmt: skip

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

    @study_page(Capability.ANALYSE)
    def import_view(self, request: HttpRequest, study: Study):
        """Reached from the study's admin page."""

        def do_import(data: dict):
            # The checkbox says whether to replace computed metrics.
            return automatic_scores_import(study=study, file=data["file"], replace=data["replace"])

        return data_file_import_view(
            request,
            admin_site=self.admin_site,
            study=study,
            form_class=ImportScoresForm,
            template="admin/analysis/automaticscore/import.html",
            title=f"Import automatic scores into {study.title}",
            do_import=do_import,
            extra_context={"n_scores": study.automatic_scores.count()},
        )


from . import admin_candidates  # noqa: E402,F401  (registers CandidateSelection)
