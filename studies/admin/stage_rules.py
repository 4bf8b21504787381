"""A stage's page, on who works in it, for what and on which items: the groups' own
waits, their pay, and the gate that lets an earlier stage's items into it
(``studies.services.gates``)."""

from django.contrib import admin

from ..models import StageGate, StageGroupWait, StagePay
from ..selectors.gates import gate_flagged_decisions
from .common import HUMAN_DURATIONS
from .forms import StageGateForm, StageGateFormSet
from .per_study import PerStudyInlineMixin


class StageGroupWaitInline(PerStudyInlineMixin, admin.TabularInline):
    """Groups with a wait of their own before the stage, on the stage's page."""

    model = StageGroupWait
    study_path = "stage__study"
    extra = 0
    fields = ("group", "min_wait")
    formfield_overrides = HUMAN_DURATIONS
    verbose_name_plural = (
        "Groups' own waits (each listed group waits this long before the stage, the "
        "others the stage's minimum wait)"
    )

    def get_formset(self, request, obj=None, **kwargs):
        """The stage's own study's groups to choose from (the form class is made anew
        for each page)."""
        formset = super().get_formset(request, obj, **kwargs)
        group = formset.form.base_fields.get("group")
        if obj is not None and group is not None:
            group.queryset = group.queryset.filter(study_id=obj.study_id)
        return formset


class StagePayInline(PerStudyInlineMixin, admin.TabularInline):
    """What each group is paid for the stage, on the stage's page (the report's pay
    block reads it)."""

    model = StagePay
    study_path = "stage__study"
    extra = 0
    fields = ("group", "unit", "amount", "currency", "minimum_hourly_rate")
    verbose_name_plural = (
        "Pay (per group: per submitted batch or per hour of working time, in one currency; "
        "the report gives the cost and the hourly rate earned)"
    )

    def get_formset(self, request, obj=None, **kwargs):
        """The stage's own study's groups to choose from."""
        formset = super().get_formset(request, obj, **kwargs)
        group = formset.form.base_fields.get("group")
        if obj is not None and group is not None:
            group.queryset = group.queryset.filter(study_id=obj.study_id)
        return formset


class StageGateInline(PerStudyInlineMixin, admin.StackedInline):
    """The stage's gate, on its page: which earlier stage's items it takes, by which
    rule."""

    model = StageGate
    fk_name = "stage"
    form = StageGateForm
    formset = StageGateFormSet
    study_path = "stage__study"
    extra = 0
    max_num = 1
    fields = (
        ("source_stage", "rule"),
        ("deciding_group", "other_group"),
        ("min_votes", "threshold"),
        ("category", "dimension"),
        "min_passed",
        "decisions_made",
    )
    readonly_fields = ("decisions_made",)
    verbose_name = "gate"
    verbose_name_plural = (
        "Gate (a gated stage takes only the items of an earlier stage that pass its rule, "
        "each decided once all its ratings of the deciding group are in)"
    )

    def get_formset(self, request, obj=None, **kwargs):
        """Only the stage's own study's earlier stages, groups, categories and Likert
        dimensions to choose from."""
        formset = super().get_formset(request, obj, **kwargs)
        if obj is not None:
            fields = formset.form.base_fields
            narrow = {
                "source_stage": {"study_id": obj.study_id, "position__lt": obj.position},
                "deciding_group": {"study_id": obj.study_id},
                "other_group": {"study_id": obj.study_id},
                "category": {"study_id": obj.study_id},
                "dimension": {"stage__study_id": obj.study_id, "stage__position__lt": obj.position},
            }
            for name, lookup in narrow.items():
                if name in fields:
                    fields[name].queryset = fields[name].queryset.filter(**lookup)
        return formset

    @admin.display(description="decisions")
    def decisions_made(self, obj):
        if obj is None or not obj.pk:
            return "None yet: items are decided once all their ratings are in."
        passed = obj.decisions.filter(passed=True).count()
        total = obj.decisions.count()
        flagged = len(gate_flagged_decisions(obj))
        rejected = (
            f" {flagged} of them rest{'s' if flagged == 1 else ''} on a batch rejected since "
            "(the decision stands)."
            if flagged
            else ""
        )
        return f"{total} item{'s' if total != 1 else ''} decided, {passed} passed.{rejected}"
