"""Dialogue contexts, reflections and batches (built by the materials import)."""

from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.db.models import Count, Exists, OuterRef
from django.db.models.functions import Substr

from ..models import Batch, BatchItem, DialogueContext, Judgement, Reflection, StageGate
from .common import LockedOnceUsedForm, ReadOnlyAdminMixin, is_changelist
from .per_study import PerStudyAdminMixin, PerStudyInlineMixin


class DialogueContextForm(LockedOnceUsedForm):
    class Meta:
        model = DialogueContext
        fields = ("study", "external_id", "turns")


class ReflectionForm(LockedOnceUsedForm):
    class Meta:
        model = Reflection
        fields = ("context", "kind", "source", "text", "generation")


class ReflectionInline(PerStudyInlineMixin, admin.TabularInline):
    model = Reflection
    study_path = "context__study"
    form = ReflectionForm
    extra = 0
    fields = ("kind", "source", "text", "generation")


@admin.register(DialogueContext)
class DialogueContextAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    form = DialogueContextForm
    list_display = ("external_id", "study", "n_reflections", "n_batches", "created_at")
    list_filter = ("study",)
    list_select_related = ("study",)
    search_fields = ("external_id",)
    inlines = (ReflectionInline,)

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if is_changelist(request):
            qs = qs.defer("turns").annotate(
                _n_reflections=Count("reflections", distinct=True),
                _n_batches=Count("batches", distinct=True),
            )
        return qs

    def get_readonly_fields(self, request, obj=None):
        return ("study",) if obj is not None else ()

    @admin.display(description="reflections", ordering="_n_reflections")
    def n_reflections(self, obj):
        return obj._n_reflections

    @admin.display(description="batches", ordering="_n_batches")
    def n_batches(self, obj):
        return obj._n_batches


@admin.register(Reflection)
class ReflectionAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    study_path = "context__study"
    form = ReflectionForm
    list_display = ("short_text", "source", "kind", "context")
    list_filter = ("kind", "source", "context__study")
    search_fields = ("text", "context__external_id")
    list_select_related = ("context",)

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if is_changelist(request):
            qs = qs.defer("text", "generation", "context__turns").annotate(
                _preview=Substr("text", 1, 91)
            )
        return qs

    @admin.display(description="text")
    def short_text(self, obj):
        text = obj._preview
        return text if len(text) <= 90 else text[:87] + "…"


class BatchItemInline(ReadOnlyAdminMixin, PerStudyInlineMixin, admin.TabularInline):
    model = BatchItem
    study_path = "batch__stage__study"
    extra = 0
    fields = ("position", "reflection_kind", "reflection_source", "reflection")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("reflection")

    @admin.display(description="kind")
    def reflection_kind(self, obj):
        return obj.reflection.get_kind_display()

    @admin.display(description="source")
    def reflection_source(self, obj):
        return obj.reflection.source


@admin.register(Batch)
class BatchAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    """Batches come from the materials import; their items are read-only here so that
    a batch cannot mix contexts or lose annotated items."""

    study_path = "stage__study"
    add_capability = None
    list_display = ("__str__", "stage", "context", "n_items", "n_assignments", "has_judgements")
    list_filter = ("stage__study", "stage")
    search_fields = ("context__external_id",)
    list_select_related = ("stage__study", "context")
    readonly_fields = ("stage", "context", "created_at")
    inlines = (BatchItemInline,)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("context__turns")
            .annotate(
                _n_items=Count("items", distinct=True),
                _n_assignments=Count("assignments", distinct=True),
                _judged=Exists(Judgement.objects.filter(assignment__batch=OuterRef("pk"))),
            )
        )

    actions = ("delete_selected",)

    @admin.action(description="Delete selected batches", permissions=["delete"])
    def delete_selected(self, request, queryset):
        """Django's delete action, refused (nothing deleted) while a chosen batch is a
        gated stage's."""
        gated = sorted(str(b) for b in queryset.filter(stage__gate__isnull=False))
        if gated:
            self.message_user(
                request,
                f"Nothing was deleted: {', '.join(gated)} came from a gate, whose decisions "
                "never change, so a gated stage's batches stay.",
                messages.ERROR,
            )
            return None
        return delete_selected(self, request, queryset)

    def has_delete_permission(self, request, obj=None):
        """A gated stage's batch stays: its gate made it from decisions that never
        change, and would not make it again."""
        if obj is not None and StageGate.objects.filter(stage_id=obj.stage_id).exists():
            return False
        return super().has_delete_permission(request, obj)

    @admin.display(description="items", ordering="_n_items")
    def n_items(self, obj):
        return obj._n_items

    @admin.display(description="assignments", ordering="_n_assignments")
    def n_assignments(self, obj):
        return obj._n_assignments

    @admin.display(description="judged", boolean=True)
    def has_judgements(self, obj):
        return obj._judged
