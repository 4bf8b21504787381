"""Annotators and their work: read-only records, with researcher actions that go
through the services (rejecting work, exempting from a waiting period)."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html

from ..models import Annotator, Assignment, Judgement, LikertRating, Stage, WaitExemption
from ..permissions import Capability
from ..services import annotator_validate, assignment_reject, wait_exemption_grant
from ..services.screening import screened_out_exists
from .common import (
    CategoryLabelCacheMixin,
    ReadOnlyAdminMixin,
    judgement_category_labels,
    judgement_empathy_label,
    judgement_most_evident_label,
)
from .per_study import PerStudyAdminMixin, PerStudyInlineMixin
from .training import TrainingAttemptInline, TrainingOutcomeMixin


class AnnotatorForm(forms.ModelForm):
    class Meta:
        model = Annotator
        fields = ("is_active", "email")

    def clean(self):
        cleaned = super().clean()
        annotator_validate(annotator=self.instance)
        return cleaned


class WaitExemptionForm(forms.ModelForm):
    class Meta:
        model = WaitExemption
        fields = ("stage", "reason")

    def __init__(self, *args, annotator=None, **kwargs):
        super().__init__(*args, **kwargs)
        if annotator is not None:
            self.fields["stage"].queryset = Stage.objects.filter(
                study_id=annotator.study_id, position__gt=1
            ).select_related("study")


class WaitExemptionInline(PerStudyInlineMixin, admin.TabularInline):
    """Granted (and withdrawn) by those who manage the study's annotators."""

    model = WaitExemption
    study_path = "annotator__study"
    view_capability = Capability.READ_ROWS
    add_capability = delete_capability = Capability.MANAGE_ANNOTATORS
    form = WaitExemptionForm
    extra = 0
    fields = ("stage", "reason", "granted_by", "granted_at")
    readonly_fields = ("granted_by", "granted_at")
    verbose_name = "exemption from a waiting period"
    verbose_name_plural = "exemptions from waiting periods (who granted them and when is recorded)"

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)

        class Bound(formset):
            def get_form_kwargs(self, index):
                return {**super().get_form_kwargs(index), "annotator": obj}

        return Bound

    change_capability = None  # add or delete; an exemption is never edited after the fact


def short_time(moment) -> str:
    """A list cell's time, short ("2026-05-12 14:05", the site's time zone); "-" for none."""
    return date_format(timezone.localtime(moment), "Y-m-d H:i") if moment else "-"


class ScreenedOutFilter(admin.SimpleListFilter):
    title = "screened out"
    parameter_name = "screened_out"

    def lookups(self, request, model_admin):
        return (("yes", "Yes"), ("no", "No"))

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(_screened_out=self.value() == "yes")
        return queryset


@admin.register(Annotator)
class AnnotatorAdmin(PerStudyAdminMixin, TrainingOutcomeMixin, admin.ModelAdmin):
    """Pseudonymous rows for the roles that read the study's rows; their personal data
    (e-mail, platform ids, the invitation link) only for those who may see it; changed
    (deactivated, exempted from a wait) by those who manage the annotators.

    Annotators are created in bulk with numbered pseudonyms: "Create annotators" on the
    study page or the action on the group list, not here."""

    view_capability = Capability.READ_ROWS
    change_capability = delete_capability = Capability.MANAGE_ANNOTATORS
    add_capability = None
    #: Shows ``access_token`` (a personal column).
    personal_displays = ("invitation_link",)
    form = AnnotatorForm
    # Short columns, so that the list fits a 1280-pixel screen beside its filters: the
    # group names its study ("Layperson (pilot)"), the times are short.
    list_display = (
        "pseudonym", "group", "consented", "screened_out", "created", "last_seen", "active",
    )  # fmt: skip
    list_filter = ("study", "group", "is_active", "platform", ScreenedOutFilter)
    search_fields = ("pseudonym", "platform_participant_id")
    list_select_related = ("group__study", "study")
    inlines = (WaitExemptionInline, TrainingAttemptInline)
    readonly_fields = (
        "study", "group", "pseudonym", "invitation_link", "platform", "platform_participant_id",
        "consented_version", "consented_at", "tutorial_completed_at", "training_outcome_display",
        "created_at", "last_seen_at",
    )  # fmt: skip
    fields = (
        "pseudonym", "study", "group", "invitation_link", "is_active", "email", "platform",
        "platform_participant_id", "consented_version", "consented_at", "tutorial_completed_at",
        "training_outcome_display", "created_at", "last_seen_at",
    )  # fmt: skip

    def save_formset(self, request, form, formset, change):
        if formset.model is not WaitExemption:
            return super().save_formset(request, form, formset, change)
        for obj in formset.save(commit=False):
            wait_exemption_grant(
                annotator=form.instance, stage=obj.stage, by=request.user, reason=obj.reason
            )
        for obj in formset.deleted_objects:
            obj.delete()
        return None

    @admin.display(boolean=True, description="consented")
    def consented(self, obj):
        return obj.consented_at is not None

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_screened_out=screened_out_exists())

    @admin.display(boolean=True, description="screened out", ordering="_screened_out")
    def screened_out(self, obj):
        return obj._screened_out

    @admin.display(description="created", ordering="created_at")
    def created(self, obj):
        return short_time(obj.created_at)

    @admin.display(description="last seen", ordering="last_seen_at")
    def last_seen(self, obj):
        return short_time(obj.last_seen_at)

    @admin.display(boolean=True, description="active", ordering="is_active")
    def active(self, obj):
        return obj.is_active

    @admin.display(description="invitation link")
    def invitation_link(self, obj):
        url = reverse("studies:invitation", args=[obj.access_token])
        return format_html('<a href="{}">{}</a>', url, url)


class JudgementInline(ReadOnlyAdminMixin, PerStudyInlineMixin, admin.TabularInline):
    model = Judgement
    study_path = "assignment__stage__study"
    view_capability = Capability.READ_ROWS
    extra = 0
    fields = (
        "reflection", "coherent", "categories", "most_evident", "error_description",
        "empathy_label", "seconds_spent", "updated_at",
    )  # fmt: skip
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("reflection", "assignment__stage")

    def categories(self, obj):
        return judgement_category_labels(obj)

    @admin.display(description="most evident error")
    def most_evident(self, obj):
        return judgement_most_evident_label(obj)

    @admin.display(description="agreement (1–5)")
    def empathy_label(self, obj):
        return judgement_empathy_label(obj)


class RejectForm(forms.Form):
    reason = forms.CharField(
        max_length=Assignment._meta.get_field("rejection_reason").max_length,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Recorded with the assignment, your name and the time.",
    )


@admin.register(Assignment)
class AssignmentAdmin(
    CategoryLabelCacheMixin, ReadOnlyAdminMixin, PerStudyAdminMixin, admin.ModelAdmin
):
    """Read by the roles that read the study's rows; rejected by those who manage the
    annotators."""

    study_path = "stage__study"
    view_capability = Capability.READ_ROWS
    list_display = (
        "annotator", "batch", "status", "is_recurring", "attention_passed", "assigned_at",
        "expires_at", "submitted_at",
    )  # fmt: skip
    list_filter = ("status", "attention_passed", "is_recurring", "stage__study", "stage", "group")
    search_fields = ("annotator__pseudonym", "batch__context__external_id")
    list_select_related = ("annotator", "batch__stage", "batch__context")
    inlines = (JudgementInline,)
    actions = ("reject",)

    def get_queryset(self, request):
        return super().get_queryset(request).defer("batch__context__turns")

    def has_reject_permission(self, request):
        return self.may(request, None, Capability.MANAGE_ANNOTATORS)

    @admin.action(
        description="Reject the selected assignments (releases their slots)…",
        permissions=["reject"],
    )
    def reject(self, request, queryset):
        if self.action_refused(request, queryset, Capability.MANAGE_ANNOTATORS):
            return None
        form = RejectForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            done, refused = 0, []
            for assignment in queryset:
                try:
                    assignment_reject(
                        assignment=assignment, reason=form.cleaned_data["reason"], by=request.user
                    )
                    done += 1
                except ValidationError as exc:
                    refused.append(f"{assignment}: {' '.join(exc.messages)}")
            if done:
                self.message_user(request, f"Rejected {done} assignment(s).", messages.SUCCESS)
            for line in refused:
                self.message_user(request, line, messages.WARNING)
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "assignments": queryset,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "title": "Reject assignments",
        }
        return TemplateResponse(request, "admin/studies/assignment/reject.html", context)


@admin.register(Judgement)
class JudgementAdmin(
    CategoryLabelCacheMixin, ReadOnlyAdminMixin, PerStudyAdminMixin, admin.ModelAdmin
):
    study_path = "assignment__stage__study"
    view_capability = Capability.READ_ROWS
    list_display = (
        "annotator", "reflection_source", "coherent", "categories", "most_evident",
        "empathy_label", "ratings", "comparison", "assignment_status", "updated_at",
    )  # fmt: skip
    list_filter = (
        "coherent", "reflection__kind", "assignment__status", "assignment__stage__study",
        "assignment__stage",
    )  # fmt: skip
    search_fields = ("assignment__annotator__pseudonym", "reflection__text")
    list_select_related = (
        "assignment__annotator", "assignment__stage", "reflection", "opponent",
    )  # fmt: skip
    # The detail page too shows the study's labels, not the stored numbers.
    fields = (
        "assignment", "reflection", "coherent", "categories", "most_evident",
        "error_description", "empathy_label", "ratings", "opponent", "shown_swapped",
        "comparison", "reason", "seconds_spent", "revision", "created_at", "updated_at",
    )  # fmt: skip
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("reflection__text", "opponent__text", "assignment__order")
            .prefetch_related(
                Prefetch("ratings", queryset=LikertRating.objects.select_related("dimension"))
            )
        )

    @admin.display(description="Likert ratings")
    def ratings(self, obj):
        """A Likert stage's answer: its rating on each dimension ("-": a coherence one)."""
        given = sorted(obj.ratings.all(), key=lambda r: r.dimension.position)
        return "; ".join(r.dimension.rating_text(r.value, r.cannot_judge) for r in given) or "-"

    @admin.display(description="pair or rank")
    def comparison(self, obj):
        """A pairwise answer as shown and chosen ("A: GPT-2, B: Human → B (Human)"), a
        ranking answer's rank ("rank 2"); "-" for the other instruments."""
        if obj.rank is not None:
            return f"rank {obj.rank}"
        if obj.opponent_id is None:
            return "-"
        left, right = (
            (obj.opponent, obj.reflection) if obj.shown_swapped else (obj.reflection, obj.opponent)
        )
        chosen = {"A": f" ({left.source})", "B": f" ({right.source})"}.get(obj.choice, "")
        return f"A: {left.source}, B: {right.source} → {obj.choice}{chosen}"

    @admin.display(description="annotator", ordering="assignment__annotator__pseudonym")
    def annotator(self, obj):
        return obj.assignment.annotator.pseudonym

    @admin.display(description="source", ordering="reflection__source")
    def reflection_source(self, obj):
        return obj.reflection.source

    @admin.display(description="assignment", ordering="assignment__status")
    def assignment_status(self, obj):
        return obj.assignment.get_status_display()

    def categories(self, obj):
        return judgement_category_labels(obj)

    @admin.display(description="most evident error")
    def most_evident(self, obj):
        return judgement_most_evident_label(obj)

    @admin.display(description="agreement (1–5)", ordering="empathy")
    def empathy_label(self, obj):
        return judgement_empathy_label(obj)
