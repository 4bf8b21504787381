import json

from django.contrib import admin
from django.utils.html import format_html

from .models import AnalysisRun


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
