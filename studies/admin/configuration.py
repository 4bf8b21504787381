"""The study's configuration beside the study page: inlines of stages, groups,
categories and consent versions, and their own admin pages."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from ..durations import duration_format
from ..models import (
    TUTORIAL_FIELDS,
    WORDING_FIELDS,
    AnnotatorGroup,
    ConsentVersion,
    ErrorCategory,
    LikertDimension,
    Stage,
    StageGate,
)
from ..permissions import Capability, user_may
from ..selectors import error_category_is_used
from ..services import (
    error_category_next_bit,
)
from ..services.crowd import PLATFORM_NAMES, stage_join_links
from ..services.gates import gate_rule_changed
from ..services.stages import stage_scheme_mark_final
from .common import (
    HUMAN_DURATIONS,
    PageRequestMixin,
    ReadOnlyAdminMixin,
    is_changelist,
    page_request,
)
from .forms import (
    AnnotatorGroupForm,
    ErrorCategoryForm,
    ErrorCategoryFormSet,
    LikertDimensionForm,
    LikertDimensionFormSet,
    StageForm,
    StageFormSet,
    StageInlineForm,
)
from .per_study import PerStudyAdminMixin, PerStudyInlineMixin
from .stage_rules import StageGateInline, StageGroupWaitInline, StagePayInline


class StageInline(PerStudyInlineMixin, admin.StackedInline):
    """Each stage as a block of short rows (its settings, then what the crowd platform
    needs), so the study page fits a 1280-pixel screen however many settings a
    stage has; a table row of them all was twice as wide."""

    model = Stage
    form = StageInlineForm
    formset = StageFormSet
    extra = 0
    fields = (
        ("position", "name", "min_wait"),
        ("groups", "overlap_k", "batches_per_stage"),
        ("instrument", "no_answer", "empathy_after_yes", "categories_from_coding"),
        ("allows_ties", "asks_reason", "pairs_per_context"),
        ("completion_code", "partial_completion_code", "screened_out_code"),
        "platform_task_ids",
        "join_links",
        "wording_and_tutorial",
    )
    readonly_fields = ("join_links", "wording_and_tutorial")
    formfield_overrides = HUMAN_DURATIONS
    classes = ("stages",)

    @admin.display(description="crowd join links (paste into the platform)")
    def join_links(self, obj):
        return stage_join_links_html(obj)

    @admin.display(description="wording and tutorial")
    def wording_and_tutorial(self, obj):
        """Which of the stage's texts are its own (set on the stage's page)."""
        if obj is None or not obj.pk:
            return "The study's (a saved stage can have its own, on its page)."
        own = [
            label
            for label, names in (
                ("question or prompt", WORDING_FIELDS),
                ("tutorial", TUTORIAL_FIELDS),
            )
            if any(getattr(obj, name) for name in names)
        ]
        url = reverse("admin:studies_stage_change", args=[obj.pk])
        what = f"its own {' and '.join(own)}" if own else "the study's"
        return format_html('{} (<a href="{}">change on the stage\'s page</a>)', what, url)


def stage_join_links_html(stage: Stage):
    """A saved stage's join link per platform, each in a read-only box to copy, on the
    address the page was asked at (``page_request``); from the second stage on, links to
    the platform ids ready for it (personal data: for those who may see it)."""
    if stage is None or not stage.pk:
        return "Save the stage first."
    request = page_request()
    links = stage_join_links(stage=stage, request=request)
    ids = ""
    personal = request is not None and user_may(
        request.user, stage.study_id, Capability.PERSONAL_DATA
    )
    if stage.position > 1 and personal:  # who may be invited back (allow-list), per platform
        ids = format_html(
            "Platform ids ready for this stage: {}",
            format_html_join(
                ", ",
                '<a href="{}">{}</a>',
                (
                    (
                        reverse(
                            "admin:studies_study_platform_ids",
                            args=[stage.study_id, stage.position, platform],
                        ),
                        name,
                    )
                    for platform, name in PLATFORM_NAMES.items()
                ),
            ),
        )
    return format_html(
        '<div class="join-links">{}{}</div>',
        format_html_join(
            "",
            '<label>{} <input type="text" readonly value="{}"></label>',
            ((PLATFORM_NAMES[platform], url) for platform, url in links.items()),
        ),
        ids,
    )


class AnnotatorGroupInline(PerStudyInlineMixin, admin.TabularInline):
    model = AnnotatorGroup
    form = AnnotatorGroupForm
    extra = 0
    fields = ("name", "pseudonym_prefix")


class ErrorCategoryInline(PerStudyInlineMixin, admin.StackedInline):
    model = ErrorCategory
    form = ErrorCategoryForm
    formset = ErrorCategoryFormSet
    extra = 0
    # Not the storage bit: it is the service's to assign (error_category_next_bit) and
    # means nothing to a researcher.
    fields = (
        ("slug", "label", "order"),
        "definition",
        "example_reflection",
        "example_explanation",
        "catches_attention_check",
    )
    classes = ("collapse",)


class ConsentVersionInline(ReadOnlyAdminMixin, PerStudyInlineMixin, admin.TabularInline):
    model = ConsentVersion
    extra = 0
    fields = ("number", "created_at", "created_by", "n_consents")
    readonly_fields = fields
    verbose_name_plural = "consent versions (created automatically when the texts change)"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("information_sheet", "consent_text")
            .annotate(_n=Count("consents"))
        )

    @admin.display(description="annotators who consented")
    def n_consents(self, obj):
        return obj._n


@admin.register(ConsentVersion)
class ConsentVersionAdmin(ReadOnlyAdminMixin, PerStudyAdminMixin, admin.ModelAdmin):
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

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("study", "created_by")
        if is_changelist(request):
            qs = qs.defer("information_sheet", "consent_text")
        return qs


STAGE_WORDING_SECTION = "Wording and tutorial of this stage"


class LikertDimensionInline(PerStudyInlineMixin, admin.StackedInline):
    """A Likert stage's dimensions, in order, on the stage's page."""

    model = LikertDimension
    form = LikertDimensionForm
    formset = LikertDimensionFormSet
    study_path = "stage__study"
    extra = 0
    fields = (
        ("position", "name"),
        "statement",
        ("points", "labels"),
        "offers_cannot_judge",
        ("checks_attention", "attention_pass_min", "attention_pass_max"),
    )
    verbose_name_plural = (
        "Likert dimensions (a Likert stage rates each candidate on every one of them; "
        "one of them checks attention)"
    )


@admin.register(Stage)
class StageAdmin(PerStudyAdminMixin, PageRequestMixin, admin.ModelAdmin):
    form = StageForm
    list_display = (
        "name",
        "study",
        "position",
        "min_wait_display",
        "instrument",
        "no_answer",
        "scheme",
    )
    list_filter = ("study",)
    list_select_related = ("study", "scheme_final_by")
    search_fields = ("name", "study__slug")
    formfield_overrides = HUMAN_DURATIONS
    actions = ("mark_scheme_final",)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "study", "position", "name", "min_wait", "groups", "overlap_k",
                    "batches_per_stage", "instrument", "no_answer",
                    "empathy_after_yes", "allows_ties", "asks_reason", "pairs_per_context",
                    "categories_from_coding", "categories", "scheme_final_at", "scheme_final_by",
                )
            },
        ),
        (
            "Crowd platforms",
            {
                "fields": (
                    "join_key", "completion_code", "partial_completion_code",
                    "screened_out_code", "platform_task_ids", "join_links",
                )
            },
        ),
        (
            STAGE_WORDING_SECTION,
            {
                "description": "Each field left empty is the study's. The questions' wording "
                "is locked once annotators work in the stage. A stage with any tutorial "
                "text of its own shows its tutorial to each annotator before their first "
                "batch of the stage: a free-text first phase can leave the categories out, "
                "and the next phase explain them.",
                "fields": (*WORDING_FIELDS, *TUTORIAL_FIELDS),
            },
        ),
    )  # fmt: skip

    @admin.display(description="minimum wait", ordering="min_wait")
    def min_wait_display(self, obj):
        return duration_format(obj.min_wait)

    @admin.display(description="error scheme")
    def scheme(self, obj):
        """Whether the stage waits for its scheme (closed to annotators) or when it was
        marked final, and by whom."""
        if not obj.categories_from_coding:
            return "-"
        if obj.awaits_scheme:
            return "from coding: not final, closed to annotators"
        return (
            f"final since {obj.scheme_final_at:%Y-%m-%d %H:%M} ({obj.scheme_final_by or 'unknown'})"
        )

    def get_readonly_fields(self, request, obj=None):
        return (
            ("study", "join_links", "scheme_final_at", "scheme_final_by") if obj is not None else ()
        )

    def get_inlines(self, request, obj):
        """A saved Likert stage lists its dimensions (and a stage switched back to the
        coherence protocol those it kept, which can then be deleted)."""
        if obj is None:
            return ()
        likert = obj.instrument == Stage.Instrument.LIKERT or obj.dimensions.exists()
        gate = (StageGateInline,) if obj.position > 1 else ()
        return (
            StageGroupWaitInline,
            StagePayInline,
            *gate,
            *((LikertDimensionInline,) if likert else ()),
        )

    def save_formset(self, request, form, formset, change):
        """A gate added or changed (before its stage has work) decides its items
        afresh, and forms the batches of contexts already decided."""
        super().save_formset(request, form, formset, change)
        if formset.model is StageGate:
            for gate_form in formset.forms:
                gate = gate_form.instance
                if gate.pk and gate_form.has_changed() and gate_form not in formset.deleted_forms:
                    gate_rule_changed(gate=gate)

    def get_fieldsets(self, request, obj=None):
        """A new stage has no join links or scheme mark to show yet."""
        if obj is not None:
            return self.fieldsets
        shown_once_saved = {"join_links", "scheme_final_at", "scheme_final_by"}
        return [
            (
                name,
                {**options, "fields": [f for f in options["fields"] if f not in shown_once_saved]},
            )
            for name, options in self.fieldsets
        ]

    @admin.action(
        description="Mark the error scheme final (opens a stage whose categories come from coding)",
        permissions=["change"],
    )
    def mark_scheme_final(self, request, queryset):
        """One stage at a time: the mark is recorded with who made it and when."""
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one stage.", messages.WARNING)
            return
        if self.action_refused(request, queryset, Capability.CONFIGURE):
            return
        try:
            stage = stage_scheme_mark_final(stage=queryset.get(), by=request.user)
        except ValidationError as exc:
            for message in exc.messages:
                self.message_user(request, f"Nothing was changed: {message}", messages.ERROR)
            return
        self.message_user(
            request,
            f"The error scheme of {stage.name} ({stage.study.slug}) is final: the stage "
            "opens to annotators as its other rules allow.",
            messages.SUCCESS,
        )

    @admin.display(description="crowd join links (paste into the platform)")
    def join_links(self, obj):
        return stage_join_links_html(obj)


@admin.register(AnnotatorGroup)
class AnnotatorGroupAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    form = AnnotatorGroupForm
    list_display = ("name", "study", "pseudonym_prefix", "n_annotators")
    list_filter = ("study",)
    list_select_related = ("study",)
    search_fields = ("name",)
    actions = ("create_annotators",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n=Count("annotators"))

    def get_readonly_fields(self, request, obj=None):
        return ("study",) if obj is not None else ()

    @admin.display(description="annotators", ordering="_n")
    def n_annotators(self, obj):
        return obj._n

    def has_create_annotators_permission(self, request) -> bool:
        return self.may(request, None, Capability.MANAGE_ANNOTATORS)

    @admin.action(
        description="Create annotators for the selected group (shows their links)",
        permissions=["create_annotators"],
    )
    def create_annotators(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one group.", messages.WARNING)
            return None
        if self.action_refused(request, queryset, Capability.MANAGE_ANNOTATORS):
            return None
        group = queryset.get()
        url = reverse("admin:studies_study_create_annotators", args=[group.study_id])
        return HttpResponseRedirect(f"{url}?group={group.pk}")


@admin.register(ErrorCategory)
class ErrorCategoryAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    form = ErrorCategoryForm
    list_display = ("label", "slug", "study", "order")
    list_filter = ("study",)
    list_select_related = ("study",)
    search_fields = ("slug", "label")

    def get_readonly_fields(self, request, obj=None):
        # The storage bit is not shown: error_category_next_bit assigns it.
        return ("study",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if obj.pk is None:
            obj.bit = error_category_next_bit(study=obj.study)
        super().save_model(request, obj, form, change)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and error_category_is_used(category=obj):
            return False
        return super().has_delete_permission(request, obj)
