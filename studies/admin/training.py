"""The training quiz in the admin: its settings and practice items inline on the study
(locked once annotation started), and each annotator's attempts on their page."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.html import format_html_join

from ..models import (
    DialogueContext,
    ErrorCategory,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
    TrainingQuiz,
)
from ..permissions import Capability
from ..protocol import selected_categories
from ..services.training import (
    training_is_locked,
    training_item_categories_check,
    training_outcome,
)
from .common import ReadOnlyAdminMixin, category_labels
from .per_study import PerStudyInlineMixin

LOCKED_NOTE = (
    "Locked: annotation (or the quiz) has started, so every annotator answers the same quiz."
)


class _LockedOnceStartedInline:
    """Read-only, without adding or deleting, once the study's annotation started."""

    def _locked(self, obj) -> bool:
        return obj is not None and obj.pk is not None and training_is_locked(study=obj)

    def get_readonly_fields(self, request, obj=None):
        if self._locked(obj):
            return self.fields
        return super().get_readonly_fields(request, obj)

    def has_add_permission(self, request, obj=None):
        return not self._locked(obj) and super().has_add_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not self._locked(obj) and super().has_delete_permission(request, obj)


class TrainingQuizInline(_LockedOnceStartedInline, PerStudyInlineMixin, admin.TabularInline):
    model = TrainingQuiz
    fields = ("pass_mark", "attempts", "items_per_attempt")
    max_num = 1
    extra = 0
    verbose_name = (
        "training quiz settings (optional: 80 %, 2 attempts and every practice item in each "
        "attempt without)"
    )
    verbose_name_plural = verbose_name


class TrainingItemForm(forms.ModelForm):
    class Meta:
        model = TrainingItem
        fields = (
            "position", "context", "turns", "text", "expected_coherent", "required_categories",
            "wrong_categories", "explanation",
        )  # fmt: skip
        widgets = {
            "text": forms.Textarea(attrs={"rows": 2, "cols": 60}),
            "explanation": forms.Textarea(attrs={"rows": 3, "cols": 60}),
            "required_categories": forms.CheckboxSelectMultiple,
            "wrong_categories": forms.CheckboxSelectMultiple,
        }

    def __init__(self, *args, study=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.study = study
        if "context" in self.fields:
            self.fields["context"].queryset = (
                DialogueContext.objects.filter(study=study)
                if study
                else DialogueContext.objects.none()
            )
        for name in ("required_categories", "wrong_categories"):
            if name in self.fields:
                self.fields[name].queryset = (
                    ErrorCategory.objects.filter(study=study)
                    if study
                    else ErrorCategory.objects.none()
                )

    def clean_turns(self):
        """An empty box is no turns (the column holds a list, never null)."""
        turns = self.cleaned_data.get("turns")
        return [] if turns is None else turns

    def clean(self):
        cleaned = super().clean()
        if self.study is not None:
            try:
                training_item_categories_check(
                    study=self.study,
                    expected_coherent=bool(cleaned.get("expected_coherent")),
                    required=cleaned.get("required_categories") or [],
                    wrong=cleaned.get("wrong_categories") or [],
                )
            except ValidationError as exc:
                self.add_error(None, exc)
        return cleaned


class TrainingItemInline(_LockedOnceStartedInline, PerStudyInlineMixin, admin.StackedInline):
    model = TrainingItem
    form = TrainingItemForm
    extra = 0
    fields = TrainingItemForm.Meta.fields
    verbose_name = "practice item (training quiz)"
    verbose_name_plural = (
        "training quiz: practice items, answered after the tutorial and before the first batch "
        "(none: no quiz)"
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .prefetch_related("required_categories", "wrong_categories")
        )

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)

        class Bound(formset):
            def get_form_kwargs(self, index):
                return {**super().get_form_kwargs(index), "study": obj}

        return Bound


# --- the annotator's page -----------------------------------------------------------


class TrainingAttemptInline(ReadOnlyAdminMixin, PerStudyInlineMixin, admin.TabularInline):
    model = TrainingAttempt
    study_path = "annotator__study"
    view_capability = Capability.READ_ROWS
    extra = 0
    fields = ("number", "status", "score_display", "started_at", "finished_at", "answers_display")
    readonly_fields = fields
    verbose_name = "training quiz attempt"

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("answers__item", "annotator__study")

    @admin.display(description="score")
    def score_display(self, obj):
        if obj.n_right is None:
            return "—"
        return f"{obj.n_right} of {obj.n_items} ({obj.score:.0f} %)"

    @admin.display(description="answers (practice item: answer, right or wrong)")
    def answers_display(self, obj):
        labels = sorted(category_labels(obj.annotator.study_id).items())
        return format_html_join(
            "",
            "<div>{}: {} — {}</div>",
            (
                (a.item.position, _answer_text(a, labels), "right" if a.is_right else "wrong")
                for a in sorted(obj.answers.all(), key=lambda a: a.item.position)
            ),
        )


def _answer_text(answer: TrainingAnswer, labels) -> str:
    if answer.coherent:
        return "Yes" + (f" ({answer.empathy})" if answer.empathy else "")
    chosen = selected_categories(answer.error_flags, labels)
    return "No" + (f" ({', '.join(chosen)})" if chosen else "")


class TrainingOutcomeMixin:
    """The annotator page's "training quiz" field: the outcome and attempts used."""

    @admin.display(description="training quiz")
    def training_outcome_display(self, obj):
        outcome = training_outcome(annotator=obj) if obj is not None and obj.pk else None
        if outcome is None:
            return "No quiz in this study"
        return (
            f"{outcome.label} ({outcome.attempts_used} of {outcome.attempts_allowed} attempts "
            f"used; pass mark {outcome.pass_mark} %)"
        )
