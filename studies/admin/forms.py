"""The study admin's forms: locked fields once annotation started, category checks."""

from django import forms
from django.core.exceptions import ValidationError

from ..datafiles.admin import DataFileUploadForm
from ..datafiles.materials import FORMATS as MATERIALS_FORMATS
from ..models import (
    TUTORIAL_FIELDS,
    WORDING_FIELDS,
    AnnotatorGroup,
    ErrorCategory,
    LikertDimension,
    Stage,
    StageGate,
    Study,
    new_crowd_code,
)
from ..protocol import LIKERT_POINTS_MAX
from ..services import (
    error_category_next_bit,
)
from ..services.crowd import stage_codes_validate
from ..services.gates import RULE_FIELDS, gate_change_validate, gate_validate, stage_gates_validate
from ..services.in_use import error_category_delete_validate, locked_reason, stage_is_locked
from ..services.stages import stage_categories_validate, stage_groups_validate
from ..validators import validate_likert_labels
from .common import LockedOnceUsedForm


class StageForm(LockedOnceUsedForm):
    """A stage; its completion code (and a new stage's partial-completion code) made up
    when left empty, on saving: a value made up when the page is drawn would be copied
    by every row added with "Add another stage". Its new or changed codes differ from
    those of the study's other stages (``stage_codes_validate``; the inline's formset
    compares the rows of one save with each other instead)."""

    #: Whether ``clean`` compares the codes with the stored stages (not in the inline).
    codes_against_stored = True

    class Meta:
        model = Stage
        fields = (
            "study",
            "position",
            "name",
            "min_wait",
            "groups",
            "overlap_k",
            "batches_per_stage",
            "instrument",
            "no_answer",
            "empathy_after_yes",
            "allows_ties",
            "asks_reason",
            "pairs_per_context",
            "join_key",
            "completion_code",
            "partial_completion_code",
            "screened_out_code",
            "platform_task_ids",
            "categories_from_coding",
            "categories",
            *WORDING_FIELDS,
            *TUTORIAL_FIELDS,
        )
        widgets = {
            "categories": forms.CheckboxSelectMultiple,
            "groups": forms.CheckboxSelectMultiple,
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "instrument" in self.fields:  # (a form posted without it keeps the stage's)
            self.fields["instrument"].help_text = INSTRUMENT_HELP
            self.fields["instrument"].required = False
        if "categories" in self.fields:
            # A saved stage lists its own study's categories only; a new one every
            # study's, checked against the study chosen (``clean_categories``).
            field = self.fields["categories"]
            if self.instance.study_id:
                field.queryset = ErrorCategory.objects.filter(study_id=self.instance.study_id)
            field.queryset = field.queryset.select_related("study").order_by(
                "study", "order", "bit"
            )
            if not self.instance.study_id:  # several studies' categories: say whose
                field.label_from_instance = lambda c: f"{c.label} ({c.study.slug})"
            field.error_messages["invalid_choice"] = (
                "A stage offers only its own study's error categories; %(value)s is not one "
                "of them."
            )
        if "groups" in self.fields:
            # As the categories: a saved stage lists its own study's groups only.
            field = self.fields["groups"]
            if self.instance.study_id:
                field.queryset = AnnotatorGroup.objects.filter(study_id=self.instance.study_id)
            field.queryset = field.queryset.select_related("study").order_by("study", "name")
            if not self.instance.study_id:
                field.label_from_instance = lambda g: f"{g.name} ({g.study.slug})"
            field.error_messages["invalid_choice"] = (
                "A stage takes only its own study's groups; %(value)s is not one of them."
            )
        for name in MADE_UP_CODES:
            if name not in self.fields:  # read-only: a role that may not change the stage
                continue
            field = self.fields[name]
            field.required = False
            field.initial = None
            field.show_hidden_initial = False
            if name == "completion_code" or self.instance.pk is None:
                field.help_text += " Left empty, a new code is made up when you save."
            else:  # a stage from before these codes: none made up behind the platform's back
                field.help_text += (
                    " Left empty, the stage has none, and its crowd workers wait for a "
                    "batch to come free instead."
                )

    def clean(self):
        cleaned = super().clean()
        for name in MADE_UP_CODES:
            if name in cleaned and not cleaned[name]:
                made_up = name == "completion_code" or self.instance.pk is None
                cleaned[name] = new_crowd_code() if made_up else ""
        return cleaned

    def clean_instrument(self):
        return self.cleaned_data.get("instrument") or self.instance.instrument

    def codes_changed(self) -> list[str]:
        """The codes this form sets anew: all of a new stage's, else the changed ones."""
        if self.instance.pk is None or "study" in self.changed_data:
            return list(Stage.CODE_FIELDS)
        return [name for name in Stage.CODE_FIELDS if name in self.changed_data]

    def clean_categories(self):
        """The chosen categories, all of the stage's own study (the queryset offers only
        those of the stored study; this names any other, e.g. after a change of study)."""
        categories = self.cleaned_data["categories"]
        study = self.cleaned_data.get("study") or getattr(self.instance, "study", None)
        if study is not None:
            try:
                stage_categories_validate(stage=Stage(study=study), categories=categories)
            except ValidationError as exc:
                raise ValidationError(exc.message_dict["categories"]) from None
        return categories

    def clean_groups(self):
        """The groups taking part: of the stage's own study, keeping every group that
        already works in it (``stage_groups_validate``)."""
        groups = self.cleaned_data["groups"]
        study = self.cleaned_data.get("study") or getattr(self.instance, "study", None)
        if study is not None:
            stage = self.instance if self.instance.pk else Stage(study=study)
            try:
                stage_groups_validate(stage=stage, groups=groups)
            except ValidationError as exc:
                raise ValidationError(exc.message_dict["groups"]) from None
        return groups

    def chosen_groups(self) -> dict[int, list[int]]:
        """The groups the saved stage will have (by its id), when the form edits them."""
        if self.instance.pk is None or "groups" not in self.cleaned_data:
            return {}
        return {self.instance.pk: [g.pk for g in self.cleaned_data["groups"]]}

    def gate_problems_add(self, problems: dict[str, list[str]]) -> None:
        """``stage_gates_validate``'s problems, on their fields (or the form's, for a
        field the page does not show)."""
        for name, errors in problems.items():
            self.add_error(name if name in self.fields else None, errors)

    def _post_clean(self):
        super()._post_clean()
        if self.codes_against_stored and self.instance.pk and not self.errors:
            problems = stage_gates_validate(stages=[self.instance], groups=self.chosen_groups())
            self.gate_problems_add(problems.get(self.instance.pk, {}))
        if self.codes_against_stored and self.instance.study_id and not self.errors:
            others = Stage.objects.filter(study_id=self.instance.study_id).exclude(
                pk=self.instance.pk
            )
            try:
                stage_codes_validate(
                    stage=self.instance, others=others, fields=self.codes_changed()
                )
            except ValidationError as exc:
                self._update_errors(exc)


INSTRUMENT_HELP = (
    "The coherence protocol asks Yes or No, then what the settings beside it ask. Likert "
    "ratings rate each candidate on the stage's dimensions, set on the stage's own page. "
    "Pairwise preference shows two candidates of a context side by side and asks which is "
    "better (ties and a reason as set beside it). Ranking puts all of a context's "
    "candidates in order, best first. The error-category and agreement settings apply to "
    "the coherence protocol only. The training quiz practises the coherence protocol: a "
    "study with practice items needs a coherence first stage."
)


#: Codes the stage form makes up when left empty (a new stage's only, for the partial one).
MADE_UP_CODES = ("completion_code", "partial_completion_code")


class StageInlineForm(StageForm):
    codes_against_stored = False


class StageFormSet(forms.BaseInlineFormSet):
    """The stages of one study saved together: their new or changed codes differ from
    every other code of the study as it will be after the save."""

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        kept = [f for f in self.forms if f.has_changed() or f.instance.pk]
        kept = [f for f in kept if f not in self.deleted_forms and f.cleaned_data]
        in_forms = {f.instance.pk for f in self.forms if f.instance.pk}
        stored = (
            list(Stage.objects.filter(study_id=self.instance.pk).exclude(pk__in=in_forms))
            if self.instance.pk
            else []
        )
        # The gates between the stages, as the save will leave them.
        saved = [f for f in kept if f.instance.pk]
        problems = stage_gates_validate(
            stages=[f.instance for f in saved],
            groups={k: v for f in saved for k, v in f.chosen_groups().items()},
            deleted=[f.instance.pk for f in self.deleted_forms if f.instance.pk],
        )
        for form in saved:
            form.gate_problems_add(problems.get(form.instance.pk, {}))
        for form in kept:
            others = [f.instance for f in kept if f is not form] + stored
            try:
                stage_codes_validate(
                    stage=form.instance, others=others, fields=form.codes_changed()
                )
            except ValidationError as exc:
                for name, errors in exc.message_dict.items():
                    form.add_error(name, errors)


class LikertLabelsField(forms.CharField):
    """A dimension's labels typed one per line (the stored JSON list); the lines
    between the first and the last may be empty."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 40})

    def __init__(self, **kwargs):
        super().__init__(strip=False, **kwargs)

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        text = super().to_python(value)
        return [line.strip() for line in text.strip().splitlines()] if text.strip() else []

    def has_changed(self, initial, data):
        return self.to_python(initial or []) != self.to_python(data)


def likert_labels_expanded(labels: list[str], points: int | None) -> list[str]:
    """The two end labels of a scale of more points, with empty labels between."""
    if points is not None and points > 2 and len(labels) == 2:
        return [labels[0], *[""] * (points - 2), labels[1]]
    return labels


class LikertDimensionForm(LockedOnceUsedForm):
    """A dimension of a Likert stage, its labels typed one per line (or just the two
    ends)."""

    labels = LikertLabelsField(
        help_text=f"One label per line: as many lines as points (up to {LIKERT_POINTS_MAX}), "
        "the first and last not empty, those between may be; or just the two end labels. "
        "A slider: its two end labels (0, then 100)."
    )

    class Meta:
        model = LikertDimension
        fields = (
            "position", "name", "statement", "points", "labels", "offers_cannot_judge",
            "checks_attention", "attention_pass_min", "attention_pass_max",
        )  # fmt: skip
        widgets = {"statement": forms.Textarea(attrs={"rows": 2, "cols": 60})}

    def clean(self):
        cleaned = super().clean()
        labels, points = cleaned.get("labels"), cleaned.get("points")
        if labels is None or "points" in self.errors:
            return cleaned
        labels = cleaned["labels"] = likert_labels_expanded(labels, points)
        try:
            validate_likert_labels(labels, points)
        except ValidationError:
            n = "two" if points is None else str(points)
            self.add_error(
                "labels",
                "Give the slider's two end labels, one per line: the one at 0, then the one at 100."
                if points is None
                else f"Give {n} labels, one per line from point 1 to point {n} (the first "
                "and last not empty, those between may be), or just the two end labels.",
            )
        return cleaned


class LikertDimensionFormSet(forms.BaseInlineFormSet):
    """A stage's dimensions saved together: one of them at most checks attention (the
    database's rule, said before it is broken), and none added or removed once
    annotators work in the stage (their answers rate every dimension it had)."""

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        added = [
            f
            for f in self.extra_forms
            if f.has_changed() and f not in self.deleted_forms and f.cleaned_data
        ]
        removed = [f for f in self.deleted_forms if f.instance.pk]
        if (added or removed) and self.instance.pk and stage_is_locked(stage=self.instance):
            raise ValidationError(
                f"Dimensions cannot be added or removed: {locked_reason(model=Stage)}."
            )
        checks = [
            f
            for f in self.forms
            if f.cleaned_data
            and f not in self.deleted_forms
            and f.cleaned_data.get("checks_attention")
        ]
        if len(checks) > 1:
            raise ValidationError(
                "Only one dimension of a stage checks attention: untick all but one."
            )


class AnnotatorGroupForm(LockedOnceUsedForm):
    class Meta:
        model = AnnotatorGroup
        fields = ("study", "name", "pseudonym_prefix")


class ErrorCategoryForm(LockedOnceUsedForm):
    class Meta:
        model = ErrorCategory
        fields = (
            "study", "slug", "label", "order", "definition", "example_reflection",
            "example_explanation", "catches_attention_check",
        )  # fmt: skip


class ErrorCategoryFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        for form in self.deleted_forms:
            error_category_delete_validate(category=form.instance)


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
    file = forms.FileField(help_text="A .json or .csv materials file, in a format linked above.")
    pool = forms.BooleanField(
        required=False,
        label="A candidate pool",
        help_text="The synthetic reflections are each context's pool of generated candidates, "
        "in no stage (leave their stage empty): a candidate selection chooses from them.",
    )


class CreateAnnotatorsForm(forms.Form):
    group = forms.ModelChoiceField(queryset=AnnotatorGroup.objects.none())
    count = forms.IntegerField(
        min_value=1, max_value=1000, initial=10, label="Number of annotators"
    )

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = study.groups.select_related("study")


class StageGateForm(forms.ModelForm):
    """A stage's gate: checked as a whole (``gate_validate``: an earlier stage of the
    instrument the rule reads, its groups and category or dimension), and refused once
    the gated stage has a claimed batch (``gate_change_validate``)."""

    class Meta:
        model = StageGate
        fields = (
            "source_stage", "rule", "deciding_group", "other_group", "min_votes", "threshold",
            "category", "dimension", "min_passed",
        )  # fmt: skip

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        gate = self.instance
        for name in self.Meta.fields:
            if name in cleaned:
                setattr(gate, name, cleaned[name])
        gate_change_validate(gate=gate, changed=self.changed_data)
        if gate.stage_id and gate.source_stage_id:
            gate_validate(gate=gate)  # (its errors by field)
        return cleaned


class StageGateFormSet(forms.BaseInlineFormSet):
    """A gate is removed only before its stage has work (its decisions stand after)."""

    def clean(self):
        super().clean()
        for form in self.deleted_forms:
            if form.instance.pk:
                try:
                    gate_change_validate(gate=form.instance, changed=RULE_FIELDS)
                except ValidationError as exc:
                    raise ValidationError(
                        "The gate cannot be removed: " + exc.messages[0]
                    ) from None
