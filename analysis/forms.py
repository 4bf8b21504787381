from django import forms
from django.core.exceptions import ValidationError

from studies.selectors import study_analysed_sources, study_generation_keys

from .metrics.overlap import LABELS, METRICS
from .parameters import (
    DEFAULT_PARAMETERS,
    MAX_BOOTSTRAP_RESAMPLES,
    MAX_CROSSED_SETTINGS,
    analysis_parameters_clean,
)

MAX_RESAMPLES = MAX_BOOTSTRAP_RESAMPLES


class RunParametersForm(forms.Form):
    """The parameters of a dashboard-started analysis run. The service's
    ``analysis_parameters_clean`` has the last word; its messages land on the fields."""

    excluded_sources = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Leave out these sources",
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

    fast_seconds = forms.FloatField(
        label="Fast answer threshold (seconds)",
        help_text="Quality panel: an annotator answering most items faster is flagged.",
        required=False,
        min_value=0,
        widget=forms.NumberInput(attrs={"min": 0, "step": "any"}),
    )
    agreement_floor = forms.FloatField(
        label="Agreement floor",
        help_text="Quality panel: an annotator agreeing with their group's majority on "
        "fewer items than this share is flagged.",
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"min": 0, "max": 1, "step": "any"}),
    )

    crossed_settings = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Cross these generation settings",
        help_text="The label distribution per combination of their values (e.g. model × "
        f"prompt × p); at most {MAX_CROSSED_SETTINGS}.",
    )

    def __init__(self, *args, study, initial: dict | None = None, **kwargs):
        initial = {**DEFAULT_PARAMETERS, **(initial or {})}
        super().__init__(*args, initial=initial, **kwargs)
        self.study = study
        sources = study_analysed_sources(study=study)
        self.fields["excluded_sources"].choices = [(s, s) for s in sources]
        keys = study_generation_keys(study=study)
        self.fields["crossed_settings"].choices = [(k, k) for k in keys]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            data["parameters"] = analysis_parameters_clean(
                {
                    "excluded_sources": list(data.get("excluded_sources") or []),
                    "crossed_settings": list(data.get("crossed_settings") or []),
                    "include_expired": bool(data.get("include_expired")),
                    "bootstrap_resamples": data.get("bootstrap_resamples"),
                    "seed": data.get("seed"),
                    # Left empty (or not sent): the default.
                    **{
                        key: data[key]
                        for key in ("fast_seconds", "agreement_floor")
                        if data.get(key) is not None
                    },
                },
                study=self.study,
            )
        except ValidationError as exc:
            for key, messages in exc.message_dict.items():
                self.add_error(key if key in self.fields else None, messages)
        return data


class ComputeScoresForm(forms.Form):
    """Compute BLEU-4 / ROUGE-L scores of a study on the worker (dashboard). The service
    (``computed_scores.automatic_scores_compute_check``) says what refuses it."""

    metrics = forms.MultipleChoiceField(
        required=False,
        choices=[(metric, f"{LABELS[metric]} ({metric})") for metric in METRICS],
        widget=forms.CheckboxSelectMultiple,
        label="Metrics",
        initial=list(METRICS),
    )
    replace = forms.BooleanField(
        required=False,
        label="Replace scores imported under these names (they are deleted)",
    )
