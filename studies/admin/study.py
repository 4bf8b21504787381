"""The study page: its settings with its stages, groups, categories and consent
versions inline (``configuration``), the progress table, the materials upload, the
export and the "create annotators" page."""

import copy

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.forms.models import construct_instance
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from ..datafiles.admin import data_file_import_view
from ..datafiles.materials import materials_format_for, materials_import
from ..exports import FILES
from ..links import absolute_url
from ..models import (
    CHECK_MESSAGES,
    Annotator,
    AnnotatorGroup,
    DialogueContext,
    ErrorCategory,
    Reflection,
    Study,
)
from ..permissions import Capability, user_may, user_may_create_studies
from ..selectors import (
    stage_code_warnings,
    study_analysed_sources,
    study_has_judgements,
    study_missing_for_opening,
    study_opening_message,
    study_progress,
)
from ..selectors.readiness import study_crowd_settings_missing, study_tutorial_missing
from ..selectors.training import training_pool_warning
from ..services import (
    annotators_create,
    consent_version_sync,
    error_categories_create_defaults,
)
from ..services.crowd import PLATFORM_NAMES, stage_platform_ids_ready
from ..services.in_use import (
    INSTRUMENT_FIELDS,
    locked_reason,
    study_instrument_is_locked,
    study_seed_is_locked,
)
from ..services.roles import study_created_by
from .common import HUMAN_DURATIONS, LockedOnceUsedForm, PageRequestMixin, is_changelist
from .configuration import (
    AnnotatorGroupInline,
    ConsentVersionInline,
    ErrorCategoryInline,
    StageInline,
)
from .definition import definition_export_view, definition_import_view
from .forms import CreateAnnotatorsForm, ImportMaterialsForm, _save_categories
from .per_study import PerStudyAdminMixin, study_page
from .privacy import PurgePersonalDataMixin
from .roles import StudyRolesMixin
from .training import TrainingItemInline, TrainingQuizInline

SESSION_CREATED_ANNOTATORS = "admin_created_annotators"

# --- study ---------------------------------------------------------------------------------


def _count(model, field: str):
    """A correlated COUNT subquery (cheaper than joining several relations)."""
    return Coalesce(
        Subquery(
            model.objects.filter(**{field: OuterRef("pk")})
            .order_by()
            .values(field)
            .annotate(n=Count("pk"))
            .values("n"),
            output_field=IntegerField(),
        ),
        0,
    )


CROWD_GROUP_AFTER_SAVE = (
    "The menu lists this study's groups, which are saved with it: save the study with "
    "its groups first, then choose the crowd group here."
)


class StudyForm(LockedOnceUsedForm):
    """Once annotators answered, the instrument's fields are shown read-only and a
    change to one is refused with a message, like the other locked fields."""

    class Meta:
        model = Study
        fields = (
            "title", "slug", "status", "description", "contact_email", "overlap_k",
            "batches_per_stage", "batch_time_limit", "avoid_recurrence",
            "attention_failure_policy", "seed", "information_sheet", "consent_text",
            "crowd_group", "mturk_frame", "coding_reveals_sources", "tutorial_intro",
            "tutorial_example_turns", "tutorial_example_notes", "tutorial_empathy_explanation",
            *INSTRUMENT_FIELDS,
        )  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        locked = bool(self.instance.pk) and study_instrument_is_locked(study=self.instance)
        for name in INSTRUMENT_FIELDS if locked else ():
            if name in self.fields:
                self.fields[name].widget.attrs["readonly"] = True
                self.fields[name].help_text = f"Locked: {locked_reason(model=Study)}."
        if "crowd_group" in self.fields:
            self.fields["crowd_group"].queryset = (
                self.instance.groups.all() if self.instance.pk else AnnotatorGroup.objects.none()
            )
            if not self.instance.pk:
                self.fields["crowd_group"].help_text = CROWD_GROUP_AFTER_SAVE

    def clean(self):
        cleaned = super().clean()
        status = cleaned.get("status")
        if self.instance.purged_at is not None and status and status != Study.Status.CLOSED:
            # purged_at is not a form field, so the form does not check its constraint.
            self.add_error("status", CHECK_MESSAGES["study_purged_stays_closed"])
            return cleaned
        if status == Study.Status.OPEN:
            # The texts as submitted; stages, groups, categories and materials as saved.
            candidate = construct_instance(self, copy.copy(self.instance))
            missing = study_missing_for_opening(study=candidate)
            if missing:
                self.add_error("status", study_opening_message(missing))
        return cleaned


CROWD_SECTION = "Crowd platform (Prolific, MTurk)"
TUTORIAL_SECTION = "Tutorial"


@admin.register(Study)
class StudyAdmin(
    PerStudyAdminMixin,
    PageRequestMixin,
    PurgePersonalDataMixin,
    StudyRolesMixin,
    admin.ModelAdmin,
):
    """Seen by every role but the coder's; changed (opened, closed) by those who may
    configure the study; added by users who may create studies (each becomes its
    owner); deleted by its owners. Its Roles page: ``StudyRolesMixin``."""

    study_path = "pk"
    delete_capability = Capability.GOVERN
    form = StudyForm
    formfield_overrides = HUMAN_DURATIONS
    list_display = (
        "title", "slug", "status", "overlap_k", "batches_per_stage", "n_contexts", "n_annotators",
        "dashboard_link",
    )  # fmt: skip
    list_filter = ("status",)
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    inlines = (
        StageInline, AnnotatorGroupInline, ErrorCategoryInline, ConsentVersionInline,
        TrainingQuizInline, TrainingItemInline,
    )  # fmt: skip
    actions = ("export_annotations", "purge_personal_data")  # analysis adds "run_analysis"
    change_form_template = "admin/studies/study/change_form.html"
    fieldsets = (
        (None, {"fields": ("title", "slug", "status", "description", "contact_email")}),
        (
            "Protocol",
            {
                "fields": (
                    "overlap_k",
                    "batches_per_stage",
                    "batch_time_limit",
                    "avoid_recurrence",
                    "attention_failure_policy",
                    "seed",
                )
            },
        ),
        (
            "Instrument",
            {
                "description": "What annotators are asked. Locked once annotation started, "
                "so every answer of the study answers the same question.",
                "fields": INSTRUMENT_FIELDS,
            },
        ),
        ("Information sheet and consent", {"fields": ("information_sheet", "consent_text")}),
        (
            "Publishing the data",
            {
                "classes": ("collapse",),
                "description": "What the dataset card says of the published annotations "
                "(downloaded beside the annotation exports).",
                "fields": ("data_description", "data_license", "data_languages"),
            },
        ),
        (
            CROWD_SECTION,
            {
                "classes": ("collapse",),
                "description": "Crowd workers start each stage at that stage's join link (with "
                "the platform's ids: PROLIFIC_PID, STUDY_ID, SESSION_ID or workerId, "
                "assignmentId, hitId, turkSubmitTo) and join the group chosen here under a "
                "pseudonym. Each stage has its own link and codes: see the stages below.",
                "fields": ("crowd_group", "mturk_frame"),
            },
        ),
        (
            "Coding descriptions",
            {
                "description": "Free-text descriptions are coded on the coding page "
                '(the "Code descriptions" links at the top of this page).',
                "fields": ("coding_reveals_sources",),
            },
        ),
        (
            TUTORIAL_SECTION,
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

    def get_fieldsets(self, request, obj=None):
        """The crowd and tutorial sections open by themselves when they hold what the
        study lacks (``study_crowd_settings_missing``, ``study_tutorial_missing``)."""
        fieldsets = super().get_fieldsets(request, obj)
        study = obj if obj is not None else Study()
        lacking = set()
        if study_crowd_settings_missing(study=study):
            lacking.add(CROWD_SECTION)
        if study_tutorial_missing(study=study):
            lacking.add(TUTORIAL_SECTION)
        return [
            (name, {**options, "classes": [c for c in options["classes"] if c != "collapse"]})
            if name in lacking
            else (name, options)
            for name, options in fieldsets
        ]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if is_changelist(request):
            qs = qs.defer(
                "description", "information_sheet", "consent_text", "tutorial_intro",
                "tutorial_example_turns", "tutorial_example_notes", "tutorial_empathy_explanation",
            ).annotate(
                _n_contexts=_count(DialogueContext, "study"),
                _n_annotators=_count(Annotator, "study"),
            )  # fmt: skip
        return qs

    def has_add_permission(self, request):
        return user_may_create_studies(request.user)

    def has_view_permission(self, request, obj=None):
        # Who may create studies has a list to add to (empty until they do).
        if obj is None and self.has_add_permission(request):
            return True
        return super().has_view_permission(request, obj)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:
            study_created_by(study=obj, user=request.user)

    def get_readonly_fields(self, request, obj=None):
        locked = ()
        if obj is not None and study_seed_is_locked(study=obj):
            locked += ("seed",)
        # The instrument's fields are locked by StudyForm, which refuses a change.
        return locked

    @admin.display(description="contexts", ordering="_n_contexts")
    def n_contexts(self, obj):
        return obj._n_contexts

    @admin.display(description="annotators", ordering="_n_annotators")
    def n_annotators(self, obj):
        return obj._n_annotators

    @admin.display(description="dashboard")
    def dashboard_link(self, obj):
        return format_html(
            '<a href="{}">Dashboard</a>', reverse("analysis:dashboard", args=[obj.slug])
        )

    def save_formset(self, request, form, formset, change):
        if formset.model is ErrorCategory:
            _save_categories(formset, form.instance)
        else:
            super().save_formset(request, form, formset, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        study = form.instance
        if not change:
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
            path(
                "<int:study_id>/platform-ids/<int:position>/<str:platform>/",
                self.admin_site.admin_view(self.platform_ids_view),
                name="studies_study_platform_ids",
            ),
            path(
                "<int:study_id>/export/",
                self.admin_site.admin_view(self.export_view),
                name="studies_study_export",
            ),
            path(
                "<int:study_id>/definition/",
                self.admin_site.admin_view(self.definition_export_view),
                name="studies_study_definition",
            ),
            path(
                "import-definition/",
                self.admin_site.admin_view(self.definition_import_view),
                name="studies_study_import_definition",
            ),
        ]
        return urls + super().get_urls()

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = extra_context or {}
        study = self.get_object(request, object_id)
        if study is not None:
            extra_context["n_contexts"] = study.contexts.count()
            extra_context["progress"] = study_progress(study=study)
            extra_context["has_judgements"] = study_has_judgements(study_id=study.pk)
            if request.method == "GET":
                for warning in stage_code_warnings(study=study):
                    messages.warning(request, warning)
                if warning := training_pool_warning(study=study):
                    messages.warning(request, warning)
            # What the page's links lead to, each shown to those who may use it.
            extra_context["may"] = {
                capability.name: user_may(request.user, study, capability)
                for capability in Capability
            }
            extra_context["can_export"] = extra_context["may"][Capability.READ_ROWS.name]
        return super().change_view(request, object_id, form_url, extra_context)

    @study_page(Capability.CONFIGURE)
    def import_materials_view(self, request: HttpRequest, study: Study):
        return data_file_import_view(
            request,
            admin_site=self.admin_site,
            study=study,
            form_class=ImportMaterialsForm,
            template="admin/studies/study/import_materials.html",
            title=f"Import materials into {study.title}",
            do_import=lambda data: materials_import(
                study=study,
                content=data["file"].read(),
                fmt=materials_format_for(data["file"].name),
                pool=data["pool"],
            ),
        )

    @study_page(Capability.PERSONAL_DATA)
    def platform_ids_view(self, request: HttpRequest, study: Study, position: int, platform):
        """The platform ids whose wait for this stage has passed, one per line (for the
        platform's allow-list): personal data."""
        stage = get_object_or_404(study.stages, position=position)
        if platform not in PLATFORM_NAMES:
            raise Http404("Unknown platform.")
        ids = stage_platform_ids_ready(stage=stage, platform=platform)
        response = HttpResponse("".join(f"{i}\n" for i in ids), content_type="text/plain")
        response["Content-Disposition"] = (
            f'attachment; filename="{study.slug}-stage-{position}-{platform}-ids.txt"'
        )
        return response

    @study_page(Capability.SEE)
    def definition_export_view(self, request: HttpRequest, study: Study):
        return definition_export_view(self, request, study)

    def definition_import_view(self, request: HttpRequest):
        return definition_import_view(self, request)

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "may_create": self.has_add_permission(request)}
        return super().changelist_view(request, extra_context)

    @study_page(Capability.READ_ROWS)
    def export_view(self, request: HttpRequest, study: Study):
        """A form whose GET goes to the streaming download (studies:export)."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "study": study,
            "stages": study.stages.order_by("position").values_list("name", flat=True),
            "groups": study.groups.order_by("name").values_list("name", flat=True),
            "sources": Reflection.objects.filter(context__study=study)
            .order_by("source")
            .values_list("source", flat=True)
            .distinct(),
            "analysed_sources": study_analysed_sources(study=study),
            "files": FILES.items(),
            "title": f"Export the annotations of {study.title}",
        }
        return TemplateResponse(request, "admin/studies/study/export.html", context)

    def has_export_permission(self, request) -> bool:
        return self.may(request, None, Capability.READ_ROWS)

    @admin.action(description="Export the annotations (published CSV)", permissions=["export"])
    def export_annotations(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one study to export.", messages.WARNING)
            return None
        if self.action_refused(request, queryset, Capability.READ_ROWS):
            return None
        study = queryset.get()
        return HttpResponseRedirect(reverse("studies:export", args=[study.slug]))

    @study_page(Capability.MANAGE_ANNOTATORS)
    def create_annotators_view(self, request: HttpRequest, study: Study):
        """POST creates, then redirects to a GET that shows the links (personal data:
        only to those who may see it), so reloading the page never creates more
        annotators."""
        form = CreateAnnotatorsForm(
            request.POST or None, study=study, initial={"group": request.GET.get("group")}
        )
        if request.method == "POST" and form.is_valid():
            try:
                with transaction.atomic():
                    created = annotators_create(
                        group=form.cleaned_data["group"], count=form.cleaned_data["count"]
                    )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                request.session[SESSION_CREATED_ANNOTATORS] = [a.pk for a in created]
                messages.success(
                    request, f"Created {len(created)} annotators. Send each their own link."
                )
                return HttpResponseRedirect(request.path + "?created=1")
        created_ids = []
        if (
            request.method == "GET"
            and request.GET.get("created")
            and user_may(request.user, study, Capability.PERSONAL_DATA)
        ):
            created_ids = request.session.get(SESSION_CREATED_ANNOTATORS, [])
        annotators = Annotator.objects.filter(pk__in=created_ids, study=study).order_by(
            "group__name", "number"
        )
        links = [
            (
                a.pseudonym,
                absolute_url(reverse("studies:invitation", args=[a.access_token]), request=request),
            )
            for a in annotators
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
