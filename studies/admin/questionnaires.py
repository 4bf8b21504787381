"""Questionnaires in the admin: a questionnaire with its questions inline, and each
question with its choices inline. Once a questionnaire has answers (a response, or
a screened-out count), its questions and choices can be neither changed, added nor
deleted: the form says so and nothing is written."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from ..models import Choice, Question, Questionnaire, Stage
from ..services.questionnaires import (
    LOCKED,
    choice_validate,
    question_validate,
    questionnaire_has_answers,
    questionnaire_lock,
    questionnaire_validate,
    questions_short_of_choices,
    short_of_choices_warning,
)
from .per_study import PerStudyAdminMixin, PerStudyInlineMixin


def _questionnaire_of(obj) -> Questionnaire | None:
    if isinstance(obj, Questionnaire):
        return obj if obj.pk else None
    return obj.questionnaire if obj is not None and obj.questionnaire_id else None


def is_locked(obj) -> bool:
    """The questionnaire of ``obj`` (a questionnaire or a question) has answers. Holds
    its row FOR UPDATE until the admin's transaction ends (the admin saves in one), so
    no answer arrives between this check and the save (``questionnaire_lock``)."""
    questionnaire = _questionnaire_of(obj)
    if questionnaire is None:
        return False
    if transaction.get_connection().in_atomic_block:
        questionnaire_lock(questionnaire=questionnaire, share=False)
    return questionnaire_has_answers(questionnaire=questionnaire)


class LockedFormSet(BaseInlineFormSet):
    """Questions (or choices) of a questionnaire with answers: no change at all."""

    def clean(self):
        super().clean()
        if not self.instance.pk or not is_locked(self.instance):
            return
        if any(f.has_changed() or self._should_delete_form(f) for f in self.forms):
            raise ValidationError(LOCKED)


class QuestionFormSet(LockedFormSet):
    """A questionnaire's questions: each changed one checked with its saved choices."""

    def clean(self):
        super().clean()
        for form in self.forms:
            if not form.has_changed() or self._should_delete_form(form):
                continue
            if not hasattr(form, "cleaned_data"):
                continue
            try:
                question_validate(question=form.instance)
            except ValidationError as exc:
                form.add_error(None, exc)


class ChoiceFormSet(LockedFormSet):
    def clean(self):
        super().clean()
        for form in self.forms:
            if not form.has_changed() and not form.instance.pk:
                continue
            if self._should_delete_form(form) or not hasattr(form, "cleaned_data"):
                continue
            try:
                choice_validate(
                    question=self.instance,
                    ends_participation=form.cleaned_data.get("ends_participation", False),
                )
            except ValidationError as exc:
                form.add_error(None, exc)


class StudyStageField(forms.ModelChoiceField):
    """The stage menu of one study. A stage of another study that is posted anyway is
    still found (not "not one of the available choices") among ``lookup_queryset``
    (the admin narrows it to the studies the user may configure, as the menu), so the
    questionnaire's rules (``questionnaire_validate``) can say whose stage it is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lookup_queryset = Stage.objects.all()

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return self.lookup_queryset.select_related("study").get(pk=value)
        except (ValueError, TypeError, Stage.DoesNotExist):
            raise ValidationError(
                self.error_messages["invalid_choice"], code="invalid_choice"
            ) from None


class QuestionnaireForm(forms.ModelForm):
    class Meta:
        model = Questionnaire
        fields = ("study", "name", "placement", "stage", "introduction")
        field_classes = {"stage": StudyStageField}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "stage" not in self.fields:
            return
        stages = Stage.objects.select_related("study").order_by("study__title", "position")
        study = self._study_id()
        if study is not None:
            stages = stages.filter(study_id=study)
            self.fields[
                "stage"
            ].help_text = "After a stage only: the stage of this study it follows."
        self.fields["stage"].queryset = stages

    def _study_id(self) -> int | None:
        """The study whose stages the menu lists: as posted, else the questionnaire's,
        else the add page's ``?study=`` (without one, every study's stages, each
        named with its study)."""
        value = self["study"].value() if "study" in self.fields else self.instance.study_id
        try:
            return int(value)
        except (TypeError, ValueError):
            return self.instance.study_id

    def clean(self):
        cleaned = super().clean()
        fixed = {"study", "placement", "stage"} & set(self.changed_data)
        if self.instance.pk and fixed and is_locked(self.instance):
            raise ValidationError(LOCKED)
        if cleaned.get("study") and cleaned.get("placement"):
            probe = Questionnaire(
                pk=self.instance.pk,
                study=cleaned["study"],
                stage=cleaned.get("stage"),
                placement=cleaned["placement"],
            )
            questionnaire_validate(questionnaire=probe)
        return cleaned


class QuestionForm(forms.ModelForm):
    class Meta:
        model = Question
        fields = (
            "questionnaire",
            "position",
            "text",
            "kind",
            "required",
            "scale_low",
            "scale_high",
        )

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk and is_locked(self.instance) and self.has_changed():
            raise ValidationError(LOCKED)
        questionnaire = cleaned.get("questionnaire")
        moved = not self.instance.pk or "questionnaire" in self.changed_data
        if moved and questionnaire is not None and is_locked(questionnaire):
            raise ValidationError(LOCKED)
        if questionnaire is not None and cleaned.get("kind"):
            probe = Question(pk=self.instance.pk, questionnaire=questionnaire, kind=cleaned["kind"])
            question_validate(question=probe)
        return cleaned


class QuestionInline(PerStudyInlineMixin, admin.TabularInline):
    model = Question
    study_path = "questionnaire__study"
    formset = QuestionFormSet
    extra = 1
    fields = ("position", "text", "kind", "required", "scale_low", "scale_high", "choices_link")
    readonly_fields = ("choices_link",)

    @admin.display(description="choices")
    def choices_link(self, obj):
        if obj is None or not obj.pk:
            return "Save first, then add choices."
        if not obj.has_choices:
            return "—"
        url = reverse("admin:studies_question_change", args=[obj.pk])
        return format_html('<a href="{}">{} choices: edit</a>', url, obj.choices.count())


class ChoiceInline(PerStudyInlineMixin, admin.TabularInline):
    model = Choice
    study_path = "question__questionnaire__study"
    formset = ChoiceFormSet
    extra = 2
    fields = ("position", "text", "ends_participation")


class RefuseLockedDeleteMixin:
    """Deleting a questionnaire or question with answers is refused with a message
    (bulk deletion is not offered); the change page warns while a choice question of
    the questionnaire has fewer than two choices (it is not asked until then)."""

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id) if request.method == "GET" else None
        questionnaire = _questionnaire_of(obj)
        if questionnaire is not None:
            short = list(questions_short_of_choices().filter(questionnaire=questionnaire))
            if short:
                self.message_user(request, short_of_choices_warning(short), messages.WARNING)
        return super().change_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        if obj is not None and is_locked(obj):
            self.message_user(request, LOCKED, messages.ERROR)
            opts = self.model._meta
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
            return HttpResponseRedirect(url)
        return super().delete_view(request, object_id, extra_context)


@admin.register(Questionnaire)
class QuestionnaireAdmin(RefuseLockedDeleteMixin, PerStudyAdminMixin, admin.ModelAdmin):
    form = QuestionnaireForm
    inlines = [QuestionInline]
    list_display = ("name", "study", "placement", "stage", "n_questions", "n_responses")
    list_filter = ("study", "placement")
    list_select_related = ("study", "stage")
    search_fields = ("name", "study__slug")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                _questions=Count("questions", distinct=True),
                _responses=Count(
                    "responses", filter=Q(responses__screened_out=False), distinct=True
                ),
            )
        )

    @admin.display(description="questions", ordering="_questions")
    def n_questions(self, obj):
        return obj._questions

    @admin.display(description="answered by", ordering="_responses")
    def n_responses(self, obj):
        return obj._responses


@admin.register(Question)
class QuestionAdmin(RefuseLockedDeleteMixin, PerStudyAdminMixin, admin.ModelAdmin):
    study_path = "questionnaire__study"
    form = QuestionForm
    inlines = [ChoiceInline]
    list_display = ("text", "questionnaire", "position", "kind", "required")
    list_filter = ("questionnaire__study", "kind")
    list_select_related = ("questionnaire",)
    search_fields = ("text",)

    def _back_to_questionnaire(self, obj):
        """Saving a question goes back to its questionnaire (where it was reached from
        by "n choices: edit"), not to the list of every study's questions."""
        return HttpResponseRedirect(
            reverse("admin:studies_questionnaire_change", args=[obj.questionnaire_id])
        )

    def response_post_save_change(self, request, obj):
        return self._back_to_questionnaire(obj)

    def response_post_save_add(self, request, obj):
        return self._back_to_questionnaire(obj)
