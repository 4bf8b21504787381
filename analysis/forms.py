from django import forms
from django.core.exceptions import ValidationError

from studies.models import Reflection

from .services import DEFAULT_PARAMETERS, MAX_BOOTSTRAP_RESAMPLES, analysis_parameters_clean

MAX_RESAMPLES = MAX_BOOTSTRAP_RESAMPLES


class RunParametersForm(forms.Form):
    """The parameters of a dashboard-started analysis run. The service's
    ``analysis_parameters_clean`` has the last word; its messages land on the fields."""

    excluded_sources = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Leave out these synthetic sources",
    )
    include_expired = forms.BooleanField(
        required=False, label="Also count batches that expired before submission"
    )
    bootstrap_resamples = forms.IntegerField(
        label="Bootstrap resamples",
        help_text=f"For the 95% intervals; 0 turns them off. At most {MAX_RESAMPLES:,}.",
        max_value=MAX_RESAMPLES,
        widget=forms.NumberInput(attrs={"min": 0, "step": 1}),
    )
    seed = forms.IntegerField(
        label="Bootstrap seed",
        widget=forms.NumberInput(attrs={"min": 0, "step": 1}),
    )

    def __init__(self, *args, study, initial: dict | None = None, **kwargs):
        initial = {**DEFAULT_PARAMETERS, **(initial or {})}
        super().__init__(*args, initial=initial, **kwargs)
        sources = (
            Reflection.objects.filter(context__study=study, kind=Reflection.Kind.SYNTHETIC)
            .order_by("source")
            .values_list("source", flat=True)
            .distinct()
        )
        self.fields["excluded_sources"].choices = [(s, s) for s in sources]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            data["parameters"] = analysis_parameters_clean(
                {
                    "excluded_sources": list(data.get("excluded_sources") or []),
                    "include_expired": bool(data.get("include_expired")),
                    "bootstrap_resamples": data.get("bootstrap_resamples"),
                    "seed": data.get("seed"),
                }
            )
        except ValidationError as exc:
            for key, messages in exc.message_dict.items():
                self.add_error(key if key in self.fields else None, messages)
        return data
