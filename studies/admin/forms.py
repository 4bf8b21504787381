"""The study admin's forms: locked fields once annotation started, category checks."""

from django import forms
from django.core.exceptions import ValidationError

from ..datafiles.admin import DataFileUploadForm
from ..datafiles.materials import FORMATS as MATERIALS_FORMATS
from ..models import (
    AnnotatorGroup,
    ErrorCategory,
    Stage,
    Study,
)
from ..selectors import error_category_is_used
from ..services import (
    error_category_next_bit,
)
from .common import LockedOnceUsedForm


class StageForm(LockedOnceUsedForm):
    locked_fields = ("position", "no_answer", "empathy_after_yes")
    locked_reason = "annotators already work in this stage"

    class Meta:
        model = Stage
        fields = (
            "study",
            "position",
            "name",
            "min_wait",
            "no_answer",
            "empathy_after_yes",
            "join_key",
            "completion_code",
            "screened_out_code",
            "platform_task_ids",
        )

    def is_locked(self) -> bool:
        return self.instance.assignments.exists()


class AnnotatorGroupForm(LockedOnceUsedForm):
    locked_fields = ("pseudonym_prefix",)
    locked_reason = "the group's annotators are already named with it"

    class Meta:
        model = AnnotatorGroup
        fields = ("study", "name", "pseudonym_prefix")

    def is_locked(self) -> bool:
        return self.instance.annotators.exists()


class ErrorCategoryForm(LockedOnceUsedForm):
    locked_fields = ("slug", "catches_attention_check")
    locked_reason = "judgements already chose this category"

    class Meta:
        model = ErrorCategory
        fields = (
            "study", "slug", "label", "order", "definition", "example_reflection",
            "example_explanation", "catches_attention_check",
        )  # fmt: skip

    def is_locked(self) -> bool:
        return error_category_is_used(category=self.instance)


class ErrorCategoryFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        for form in self.deleted_forms:
            if form.instance.pk and error_category_is_used(category=form.instance):
                raise ValidationError(
                    f'"{form.instance.label}" cannot be deleted: judgements already chose it.'
                )


def _save_categories(formset, study: Study) -> None:
    """New categories get the next free storage bit (never reused)."""
    for obj in formset.save(commit=False):
        if obj.pk is None:
            obj.study = study
            obj.bit = error_category_next_bit(study=study)
        obj.save()
    for obj in formset.deleted_objects:
        obj.delete()


class ImportMaterialsForm(DataFileUploadForm):
    extensions = tuple(f".{fmt}" for fmt in MATERIALS_FORMATS)
    file = forms.FileField(help_text="A .json or .csv materials file (see the README).")


class CreateAnnotatorsForm(forms.Form):
    group = forms.ModelChoiceField(queryset=AnnotatorGroup.objects.none())
    count = forms.IntegerField(
        min_value=1, max_value=1000, initial=10, label="Number of annotators"
    )

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = study.groups.select_related("study")
