"""The researchers' workspace: configure studies, import materials, invite annotators.

Admin forms validate with the models' own constraints (Django runs
``Model.validate_constraints`` in ``full_clean``); writes with rules go through
``services``.
"""

from contextvars import ContextVar

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.db.models.functions import Substr
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from .importers import MaterialsImportError, materials_format_for, materials_import
from .models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    BatchItem,
    ConsentVersion,
    DialogueContext,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from .protocol import EMPATHY_SCALE
from .selectors import study_overview
from .services import (
    annotator_validate,
    annotators_create,
    consent_version_sync,
    error_categories_create_defaults,
)


def _is_changelist(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return bool(match and match.url_name and match.url_name.endswith("changelist"))


class ReadOnlyAdminMixin:
    """Rows written only by annotators or services: researchers look, never edit."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- study -------------------------------------------------------------------------------


class StageInline(admin.TabularInline):
    model = Stage
    extra = 0
    fields = ("position", "name", "min_wait")


class AnnotatorGroupInline(admin.TabularInline):
    model = AnnotatorGroup
    extra = 0
    fields = ("name", "pseudonym_prefix")


class ErrorCategoryInline(admin.StackedInline):
    model = ErrorCategory
    extra = 0
    fields = (
        ("slug", "label", "order", "bit"),
        "definition",
        "example_reflection",
        "example_explanation",
    )
    classes = ("collapse",)


class ConsentVersionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ConsentVersion
    extra = 0
    fields = ("number", "created_at", "created_by", "n_consents")
    readonly_fields = fields
    verbose_name_plural = "consent versions (created automatically when the texts change)"

    @admin.display(description="annotators who consented")
    def n_consents(self, obj):
        return obj.consents.count()


class ImportMaterialsForm(forms.Form):
    file = forms.FileField(help_text="A .json or .csv materials file (see the README).")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if materials_format_for(upload.name) is None:
            raise ValidationError("Upload a .json or .csv file.")
        return upload


class CreateAnnotatorsForm(forms.Form):
    group = forms.ModelChoiceField(queryset=AnnotatorGroup.objects.none())
    count = forms.IntegerField(
        min_value=1, max_value=1000, initial=10, label="Number of annotators"
    )

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = study.groups.all()


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = (
        "title",
        "slug",
        "status",
        "overlap_k",
        "batches_per_stage",
        "n_contexts",
        "n_annotators",
    )
    list_filter = ("status",)
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    inlines = (StageInline, AnnotatorGroupInline, ErrorCategoryInline, ConsentVersionInline)
    change_form_template = "admin/studies/study/change_form.html"
    fieldsets = (
        (None, {"fields": ("title", "slug", "status", "description", "contact_email")}),
        (
            "Protocol",
            {"fields": ("overlap_k", "batches_per_stage", "batch_time_limit", "seed")},
        ),
        ("Information sheet and consent", {"fields": ("information_sheet", "consent_text")}),
        (
            "Tutorial",
            {
                "classes": ("collapse",),
                "fields": (
                    "tutorial_intro",
                    "tutorial_example_turns",
                    "tutorial_example_notes",
                    "tutorial_empathy_explanation",
                ),
            },
        ),
    )

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if _is_changelist(request):
            qs = qs.defer(
                "description",
                "information_sheet",
                "consent_text",
                "tutorial_intro",
                "tutorial_example_turns",
                "tutorial_example_notes",
                "tutorial_empathy_explanation",
            ).annotate(
                _n_contexts=Count("contexts", distinct=True),
                _n_annotators=Count("annotators", distinct=True),
            )
        return qs

    @admin.display(description="contexts", ordering="_n_contexts")
    def n_contexts(self, obj):
        return getattr(obj, "_n_contexts", None)

    @admin.display(description="annotators", ordering="_n_annotators")
    def n_annotators(self, obj):
        return getattr(obj, "_n_annotators", None)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        study = form.instance
        if not change and not study.categories.exists():
            error_categories_create_defaults(study=study)
        if consent_version_sync(study=study, user=request.user) is not None and change:
            messages.info(
                request,
                "The information sheet or consent text changed: a new consent version was created.",
            )

    def get_urls(self):
        urls = [
            path(
                "<int:study_id>/import-materials/",
                self.admin_site.admin_view(self.import_materials_view),
                name="studies_study_import_materials",
            ),
            path(
                "<int:study_id>/create-annotators/",
                self.admin_site.admin_view(self.create_annotators_view),
                name="studies_study_create_annotators",
            ),
        ]
        return urls + super().get_urls()

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = extra_context or {}
        study = self.get_object(request, object_id)
        if study is not None:
            extra_context["overview"] = study_overview(study=study)
        return super().change_view(request, object_id, form_url, extra_context)

    def _study_or_404(self, request, study_id) -> Study:
        study = get_object_or_404(Study, pk=study_id)
        if not self.has_change_permission(request, study):
            raise PermissionDenied
        return study

    def import_materials_view(self, request: HttpRequest, study_id: int):
        study = self._study_or_404(request, study_id)
        issues = []
        form = ImportMaterialsForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                summary = materials_import(
                    study=study, content=upload.read(), fmt=materials_format_for(upload.name)
                )
            except MaterialsImportError as exc:
                issues = exc.issues
                messages.error(
                    request,
                    f"Nothing was imported: the file has {len(issues)} problem(s), listed below.",
                )
            else:
                messages.success(request, f"Imported {upload.name}: {summary}")
                return HttpResponseRedirect(reverse("admin:studies_study_change", args=[study.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "study": study,
            "form": form,
            "issues": issues,
            "title": f"Import materials into {study.title}",
        }
        return TemplateResponse(request, "admin/studies/study/import_materials.html", context)

    def create_annotators_view(self, request: HttpRequest, study_id: int):
        study = self._study_or_404(request, study_id)
        initial = {"group": request.GET.get("group")}
        form = CreateAnnotatorsForm(request.POST or None, study=study, initial=initial)
        created = []
        if request.method == "POST" and form.is_valid():
            try:
                created = annotators_create(
                    group=form.cleaned_data["group"], count=form.cleaned_data["count"]
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(
                    request, f"Created {len(created)} annotators. Send each their own link."
                )
        links = [
            (
                a.pseudonym,
                request.build_absolute_uri(reverse("studies:invitation", args=[a.access_token])),
            )
            for a in created
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "study": study,
            "form": form,
            "links": links,
            "links_tsv": "\n".join(f"{p}\t{u}" for p, u in links),
            "title": f"Create annotators for {study.title}",
        }
        return TemplateResponse(request, "admin/studies/study/create_annotators.html", context)


@admin.register(ConsentVersion)
class ConsentVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("study", "number", "created_at", "created_by")
    list_filter = ("study",)
    readonly_fields = (
        "study",
        "number",
        "information_sheet",
        "consent_text",
        "created_at",
        "created_by",
    )


@admin.register(Stage)
class StageAdmin(admin.ModelAdmin):
    list_display = ("name", "study", "position", "min_wait")
    list_filter = ("study",)
    search_fields = ("name", "study__slug")


@admin.register(AnnotatorGroup)
class AnnotatorGroupAdmin(admin.ModelAdmin):
    list_display = ("name", "study", "pseudonym_prefix", "n_annotators")
    list_filter = ("study",)
    search_fields = ("name",)
    actions = ("create_annotators",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n=Count("annotators"))

    @admin.display(description="annotators", ordering="_n")
    def n_annotators(self, obj):
        return obj._n

    @admin.action(description="Create annotators for the selected group (shows their links)")
    def create_annotators(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one group.", messages.WARNING)
            return None
        group = queryset.get()
        url = reverse("admin:studies_study_create_annotators", args=[group.study_id])
        return HttpResponseRedirect(f"{url}?group={group.pk}")


@admin.register(ErrorCategory)
class ErrorCategoryAdmin(admin.ModelAdmin):
    list_display = ("label", "slug", "study", "order", "bit")
    list_filter = ("study",)
    search_fields = ("slug", "label")


# --- materials -----------------------------------------------------------------------------


class ReflectionInline(admin.TabularInline):
    model = Reflection
    extra = 0
    fields = ("kind", "source", "text", "generation")


@admin.register(DialogueContext)
class DialogueContextAdmin(admin.ModelAdmin):
    list_display = ("external_id", "study", "n_reflections", "n_batches", "created_at")
    list_filter = ("study",)
    search_fields = ("external_id",)
    inlines = (ReflectionInline,)

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if _is_changelist(request):
            qs = qs.defer("turns").annotate(
                _n_reflections=Count("reflections", distinct=True),
                _n_batches=Count("batches", distinct=True),
            )
        return qs

    @admin.display(description="reflections", ordering="_n_reflections")
    def n_reflections(self, obj):
        return obj._n_reflections

    @admin.display(description="batches", ordering="_n_batches")
    def n_batches(self, obj):
        return obj._n_batches


@admin.register(Reflection)
class ReflectionAdmin(admin.ModelAdmin):
    list_display = ("short_text", "source", "kind", "context")
    list_filter = ("kind", "source", "context__study")
    search_fields = ("text", "context__external_id")
    list_select_related = ("context",)

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if _is_changelist(request):
            qs = qs.defer("text", "generation", "context__turns").annotate(
                _preview=Substr("text", 1, 91)
            )
        return qs

    @admin.display(description="text")
    def short_text(self, obj):
        text = obj._preview
        return text if len(text) <= 90 else text[:87] + "…"


class BatchItemInline(admin.TabularInline):
    model = BatchItem
    extra = 0
    fields = ("position", "reflection")
    raw_id_fields = ("reflection",)


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("__str__", "stage", "context", "n_items", "n_assignments")
    list_filter = ("stage__study", "stage")
    search_fields = ("context__external_id",)
    list_select_related = ("stage", "context")
    inlines = (BatchItemInline,)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("context__turns")
            .annotate(
                _n_items=Count("items", distinct=True),
                _n_assignments=Count("assignments", distinct=True),
            )
        )

    @admin.display(description="items", ordering="_n_items")
    def n_items(self, obj):
        return obj._n_items

    @admin.display(description="assignments", ordering="_n_assignments")
    def n_assignments(self, obj):
        return obj._n_assignments


# --- people and their work ----------------------------------------------------------------


class AnnotatorForm(forms.ModelForm):
    class Meta:
        model = Annotator
        fields = ("is_active", "email")

    def clean(self):
        cleaned = super().clean()
        annotator_validate(annotator=self.instance)
        return cleaned


@admin.register(Annotator)
class AnnotatorAdmin(admin.ModelAdmin):
    form = AnnotatorForm
    list_display = (
        "pseudonym",
        "group",
        "study",
        "consented",
        "created_at",
        "last_seen_at",
        "is_active",
    )
    list_filter = ("study", "group", "is_active", "platform")
    search_fields = ("pseudonym", "platform_participant_id")
    list_select_related = ("group", "study")
    readonly_fields = (
        "study",
        "group",
        "pseudonym",
        "invitation_link",
        "platform",
        "platform_participant_id",
        "consented_version",
        "consented_at",
        "tutorial_completed_at",
        "created_at",
        "last_seen_at",
    )
    fields = (
        "pseudonym",
        "study",
        "group",
        "invitation_link",
        "is_active",
        "email",
        "platform",
        "platform_participant_id",
        "consented_version",
        "consented_at",
        "tutorial_completed_at",
        "created_at",
        "last_seen_at",
    )

    def has_add_permission(self, request):
        # Annotators are created in bulk with numbered pseudonyms: "Create annotators"
        # on the study page or the group list.
        return False

    @admin.display(boolean=True, description="consented")
    def consented(self, obj):
        return obj.consented_at is not None

    @admin.display(description="invitation link")
    def invitation_link(self, obj):
        url = reverse("studies:invitation", args=[obj.access_token])
        return format_html('<a href="{}">{}</a>', url, url)


class JudgementInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Judgement
    extra = 0
    fields = (
        "reflection",
        "coherent",
        "categories",
        "most_evident",
        "empathy",
        "seconds_spent",
        "updated_at",
    )
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("reflection", "assignment__batch__stage__study")
        )

    def categories(self, obj):
        return judgement_category_labels(obj)

    @admin.display(description="most evident error")
    def most_evident(self, obj):
        return judgement_most_evident_label(obj)


# Category labels per study, cached for the duration of one changelist render so a
# page of judgements costs one query for labels rather than one per row.
_labels_cache: ContextVar[dict | None] = ContextVar("category_labels", default=None)


def _category_labels(study_id: int) -> dict[int, str]:
    cache = _labels_cache.get()
    if cache is not None and study_id in cache:
        return cache[study_id]
    labels = dict(ErrorCategory.objects.filter(study_id=study_id).values_list("bit", "label"))
    if cache is not None:
        cache[study_id] = labels
    return labels


class CategoryLabelCacheMixin:
    def changelist_view(self, request, extra_context=None):
        token = _labels_cache.set({})
        try:
            response = super().changelist_view(request, extra_context)
            if hasattr(response, "render"):
                response.render()
            return response
        finally:
            _labels_cache.reset(token)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        token = _labels_cache.set({})
        try:
            response = super().change_view(request, object_id, form_url, extra_context)
            if hasattr(response, "render"):
                response.render()
            return response
        finally:
            _labels_cache.reset(token)


def judgement_category_labels(obj: Judgement) -> str:
    labels = _category_labels(obj.assignment.batch.stage.study_id)
    return ", ".join(label for bit, label in sorted(labels.items()) if obj.error_flags & (1 << bit))


def judgement_most_evident_label(obj: Judgement) -> str:
    if obj.most_evident_bit is None:
        return ""
    return _category_labels(obj.assignment.batch.stage.study_id).get(obj.most_evident_bit, "?")


@admin.register(Assignment)
class AssignmentAdmin(CategoryLabelCacheMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "annotator",
        "batch",
        "status",
        "is_recurring",
        "attention_passed",
        "assigned_at",
        "submitted_at",
    )
    list_filter = (
        "status",
        "attention_passed",
        "is_recurring",
        "batch__stage__study",
        "batch__stage",
    )
    search_fields = ("annotator__pseudonym", "batch__context__external_id")
    list_select_related = ("annotator", "batch__stage", "batch__context")
    inlines = (JudgementInline,)

    def get_queryset(self, request):
        return super().get_queryset(request).defer("batch__context__turns")


@admin.register(Judgement)
class JudgementAdmin(CategoryLabelCacheMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "annotator",
        "reflection_source",
        "coherent",
        "categories",
        "most_evident",
        "empathy_label",
        "updated_at",
    )
    list_filter = (
        "coherent",
        "reflection__kind",
        "assignment__batch__stage__study",
        "assignment__batch__stage",
    )
    search_fields = ("assignment__annotator__pseudonym", "reflection__text")
    list_select_related = ("assignment__annotator", "assignment__batch__stage", "reflection")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("reflection__text", "assignment__order")

    @admin.display(description="annotator", ordering="assignment__annotator__pseudonym")
    def annotator(self, obj):
        return obj.assignment.annotator.pseudonym

    @admin.display(description="source", ordering="reflection__source")
    def reflection_source(self, obj):
        return obj.reflection.source

    def categories(self, obj):
        return judgement_category_labels(obj)

    @admin.display(description="most evident error")
    def most_evident(self, obj):
        return judgement_most_evident_label(obj)

    @admin.display(description="agreement (1–5)", ordering="empathy")
    def empathy_label(self, obj):
        return f"{obj.empathy} – {EMPATHY_SCALE[obj.empathy]}" if obj.empathy else ""
