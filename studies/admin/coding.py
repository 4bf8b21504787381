"""Coding descriptions in the admin: the codebook (with the action that turns codes
into error categories), the coders (with the action that chooses the primary one) and
the codings, read-only (coders write them on the coding page)."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..models import Code, Coder, DescriptionCoding
from ..permissions import Capability, user_may_create_studies
from ..services.coding import coder_make_primary, coder_user_problem, reserved_slug_message
from ..services.coding_categories import (
    codes_to_categories,
    codes_to_new_study,
    coding_next_stage,
)
from ..services.in_use import code_is_used, coder_is_used, coders_used, stage_is_locked
from ..services.roles import study_created_by
from .common import ReadOnlyAdminMixin
from .per_study import PerStudyAdminMixin


class CodesToCategoriesForm(forms.Form):
    TARGETS = (
        ("same", "This study: new error categories for its later stages"),
        ("copy", "A new draft study: a copy of this one with these categories"),
    )
    target = forms.ChoiceField(choices=TARGETS, widget=forms.RadioSelect, initial="same")
    slug = forms.CharField(
        required=False, max_length=50, help_text="The new study's slug (for a new study)."
    )
    title = forms.CharField(
        required=False, max_length=200, help_text="The new study's title (for a new study)."
    )
    stage = forms.ChoiceField(
        required=False,
        label="Offer them in",
        help_text="This study only: the stage that offers the new categories (and only "
        "them, besides a category catching the attention check), replacing the default "
        "categories there. Its categories then come from coding: it stays closed to "
        "annotators until a researcher marks its error scheme final (the Stages list's "
        'action "Mark the error scheme final"). Proposed: the first stage asking for '
        "categories after a description stage.",
    )
    attention_check = forms.ChoiceField(
        required=False,
        label="Catches the attention check",
        help_text="The code whose category a No must carry to pass the attention check "
        "(needed for a new study, and for this study when none of its categories does).",
    )

    def __init__(self, *args, codes=(), stages=(), next_stage=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["stage"].choices = [
            ("", "No stage: only add them to the study's categories"),
            *((str(stage.position), stage.name) for stage in stages),
        ]
        self.fields["stage"].initial = str(next_stage.position) if next_stage else ""
        self.fields["attention_check"].choices = [
            ("", "None of these"),
            *((code.slug, code.label) for code in codes),
        ]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("target") == "copy":
            for name in ("slug", "title"):
                if not cleaned.get(name, "").strip():
                    self.add_error(name, "A new study needs this.")
        return cleaned


class CodeForm(forms.ModelForm):
    class Meta:
        model = Code
        fields = ("study", "slug", "label", "definition", "example")

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if problem := reserved_slug_message(slug):
            raise ValidationError(problem)
        return slug


@admin.register(Code)
class CodeAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    """The codebook: seen with the study, changed by those who configure it (coders
    grow it from the coding page)."""

    form = CodeForm
    list_display = ("label", "slug", "study", "n_codings", "definition")
    list_filter = ("study",)
    search_fields = ("slug", "label", "definition")
    readonly_fields = ("created_by", "created_at")
    actions = ("make_error_categories",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n_codings=Count("codings"))

    def get_readonly_fields(self, request, obj=None):
        # The slug names the code in exports and reports: it never changes.
        return (*self.readonly_fields, "study", "slug") if obj is not None else self.readonly_fields

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one at a time, and only unused codes
        return actions

    def has_delete_permission(self, request, obj=None):
        """A code in use stays: removing it would empty codings and change exports."""
        if obj is not None and code_is_used(code=obj):
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.display(description="codings", ordering="_n_codings")
    def n_codings(self, obj):
        return obj._n_codings

    def has_categories_permission(self, request) -> bool:
        return self.may(request, None, Capability.CONFIGURE)

    @admin.action(
        description="Make the selected codes error categories…", permissions=["categories"]
    )
    def make_error_categories(self, request, queryset):
        codes = list(queryset.select_related("study").order_by("label"))
        studies = {code.study_id for code in codes}
        if len(studies) != 1:
            self.message_user(request, "Choose codes of one study at a time.", messages.ERROR)
            return None
        if self.action_refused(request, queryset, Capability.CONFIGURE):
            return None
        study = codes[0].study
        # The stages that can still offer them: asking for categories, no answers yet.
        stages = [
            stage
            for stage in study.stages.order_by("position")
            if stage.answer_settings.asks_categories and not stage_is_locked(stage=stage)
        ]
        next_stage = coding_next_stage(study=study)
        form = CodesToCategoriesForm(
            request.POST if "apply" in request.POST else None,
            codes=codes,
            stages=stages,
            next_stage=next_stage if next_stage in stages else None,
        )
        if form.is_bound and form.is_valid():
            chosen = form.cleaned_data["attention_check"]
            attention_check = next((c for c in codes if c.slug == chosen), None)
            position = form.cleaned_data["stage"]
            offer_in = next((s for s in stages if str(s.position) == position), None)
            try:
                if form.cleaned_data["target"] == "copy":
                    if not user_may_create_studies(request.user):
                        raise ValidationError(
                            "Creating a study needs the permission to create studies."
                        )
                    with transaction.atomic():
                        target = codes_to_new_study(
                            codes=codes,
                            slug=form.cleaned_data["slug"],
                            title=form.cleaned_data["title"],
                            attention_check=attention_check,
                            user=request.user,
                        )
                        study_created_by(study=target, user=request.user)
                else:
                    target = study
                    codes_to_categories(
                        codes=codes, study=study, attention_check=attention_check, stage=offer_in
                    )
            except ValidationError as exc:
                for message in exc.messages:
                    self.message_user(request, f"Nothing was changed: {message}", messages.ERROR)
            else:
                offered = (
                    f" {offer_in.name} offers them, and stays closed to annotators until you "
                    "mark its error scheme final (Stages list)."
                    if offer_in is not None and target is study
                    else ""
                )
                self.message_user(
                    request,
                    f"{len(codes)} error categor{'y' if len(codes) == 1 else 'ies'} added to "
                    f"{target.slug}.{offered}",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(reverse("admin:studies_study_change", args=[target.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Make codes error categories",
            "codes": codes,
            "study": study,
            "form": form,
            "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
            "action": "make_error_categories",
        }
        return TemplateResponse(request, "admin/studies/code/to_categories.html", context)


class CoderForm(forms.ModelForm):
    class Meta:
        model = Coder
        fields = ("study", "user")

    def clean_user(self):
        user = self.cleaned_data["user"]
        if problem := coder_user_problem(user):
            raise ValidationError(problem)
        return user


@admin.register(Coder)
class CoderAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    """Who coded the study's descriptions: read with its rows; added, removed and made
    primary by those who configure it."""

    view_capability = Capability.READ_ROWS
    form = CoderForm
    list_display = ("user", "study", "is_primary", "primary_now", "n_codings", "added_at")
    list_filter = ("study",)
    list_select_related = ("user", "study")
    readonly_fields = ("is_primary", "added_at")
    actions = ("make_primary", "delete_selected")

    def get_readonly_fields(self, request, obj=None):
        # A coder's codings are theirs: study and user stay.
        return ("study", "user", *self.readonly_fields) if obj is not None else self.readonly_fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(_n_codings=Count("codings"), primary_pk=Coder.objects.primary_pk())
        )

    @admin.display(description="codings", ordering="_n_codings")
    def n_codings(self, obj):
        return obj._n_codings

    @admin.display(description="primary coder", boolean=True)
    def primary_now(self, obj):
        """Coder.objects.primary: the one marked, else the study's first coder (one
        annotation on the page's query)."""
        return obj.primary_pk == obj.pk

    def has_delete_permission(self, request, obj=None):
        """A coder with codings stays: removing them would delete their codings."""
        if obj is not None and coder_is_used(coder=obj):
            return False
        return super().has_delete_permission(request, obj)

    @admin.action(description="Delete selected coders", permissions=["delete"])
    def delete_selected(self, request, queryset):
        """Django's delete action, refused (nothing deleted) while a chosen coder has
        codings."""
        coding = sorted(str(c) for c in coders_used(coders=queryset))
        if coding:
            self.message_user(
                request,
                f"Nothing was deleted: {', '.join(coding)} coded descriptions, and a coder "
                "with codings stays.",
                messages.ERROR,
            )
            return None
        return delete_selected(self, request, queryset)

    @admin.action(
        description="Make the selected coder the study's primary coder", permissions=["change"]
    )
    def make_primary(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one coder.", messages.WARNING)
            return
        if self.action_refused(request, queryset, Capability.CONFIGURE):
            return
        coder = coder_make_primary(coder=queryset.get())
        self.message_user(
            request,
            f"{coder.user} is now the primary coder of {coder.study.slug}.",
            messages.SUCCESS,
        )


@admin.register(DescriptionCoding)
class DescriptionCodingAdmin(ReadOnlyAdminMixin, PerStudyAdminMixin, admin.ModelAdmin):
    study_path = "coder__study"
    view_capability = Capability.READ_ROWS
    list_display = ("judgement", "coder", "code_list", "uninformative", "coded_at")
    list_filter = ("coder__study", "uninformative")
    list_select_related = ("coder__user", "coder__study", "judgement__assignment__annotator")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("codes")

    @admin.display(description="codes")
    def code_list(self, obj):
        return ", ".join(sorted(code.slug for code in obj.codes.all()))
