"""The candidate selection in the admin: a study's pool, the form that starts a
selection (run on the worker), the selections with their progress, each one's page
with its counts and diversity, and its clusters as CSV."""

import json

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from studies.admin.per_study import PerStudyAdminMixin, study_page
from studies.exports.csvtext import csv_chunks
from studies.models import Stage, Study
from studies.permissions import Capability, user_may

from .candidates.clustering import LINKAGES, METRICS
from .candidates.parameters import MAX_PER_CONTEXT, SelectionParameters
from .candidates.pool import pool_settings
from .candidates.selection import candidate_selection_create, candidate_selections_expire
from .candidates.views import clusters_rows, diversity_rows, pool_summary
from .metrics.diversity import SELF_BLEU_ORDERS
from .models import CandidateSelection
from .services import candidate_selection_enqueue

DEFAULTS = SelectionParameters()


class CandidateSelectionForm(forms.Form):
    stage = forms.ModelChoiceField(
        queryset=Stage.objects.none(),
        help_text="The selected candidates become this stage's synthetic reflections. Only "
        "stages without batches (and not gated) are listed.",
    )
    per_context = forms.IntegerField(
        min_value=1,
        max_value=MAX_PER_CONTEXT,
        initial=DEFAULTS.per_context,
        label="Clusters per context",
    )
    threshold = forms.FloatField(
        initial=DEFAULTS.threshold,
        label="Distance threshold",
        help_text="Clusters merge while their linkage distance is below it.",
    )
    metric = forms.ChoiceField(choices=[(m, m) for m in METRICS], initial=DEFAULTS.metric)
    linkage = forms.ChoiceField(choices=[(m, m) for m in LINKAGES], initial=DEFAULTS.linkage)
    stratify_by = forms.ChoiceField(
        required=False,
        label="Stratify by",
        help_text="Draw the clusters in turn across the values of this generation setting "
        "of their representatives.",
    )
    model = forms.ChoiceField(
        initial=DEFAULTS.model,
        label="Embedding model",
        help_text="The packaged default, or a model the server's operator offers "
        "(CANDIDATE_EMBEDDING_MODELS).",
    )
    pool_pairs = forms.IntegerField(
        required=False,
        min_value=1,
        initial=DEFAULTS.pool_pairs_per_context,
        label="Pool pairs per context",
        help_text="The pool's Self-BLEU is scored on a seeded sample of this many pairs "
        "per context; leave it empty to score them all.",
    )
    seed = forms.IntegerField(
        required=False, min_value=0, help_text="Leave it empty for the study's seed."
    )

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["stage"].queryset = study.stages.filter(
            batches__isnull=True, gate__isnull=True
        ).order_by("position")
        self.fields["stratify_by"].choices = [("", "(none)")] + [
            (key, key) for key in pool_settings(study_id=study.pk)
        ]
        self.fields["seed"].help_text = f"Leave it empty for the study's seed ({study.seed})."
        models = dict.fromkeys([DEFAULTS.model, *settings.CANDIDATE_EMBEDDING_MODELS])
        self.fields["model"].choices = [(m, m) for m in models]

    def parameters(self) -> SelectionParameters:
        data = self.cleaned_data
        return SelectionParameters(
            model=data["model"],
            threshold=data["threshold"],
            metric=data["metric"],
            linkage=data["linkage"],
            per_context=data["per_context"],
            stratify_by=data["stratify_by"],
            pool_pairs_per_context=data["pool_pairs"],
        )


def _diversity_table(selection: CandidateSelection) -> str:
    return render_to_string(
        "admin/analysis/candidateselection/diversity_table.html",
        {"rows": diversity_rows(selection.diversity), "orders": SELF_BLEU_ORDERS},
    )


@admin.register(CandidateSelection)
class CandidateSelectionAdmin(PerStudyAdminMixin, admin.ModelAdmin):
    """Selections are started from a study's *Candidate selection* page; here they are
    read (and deleted by those who configure the study: the stage keeps its batches)."""

    add_capability = change_capability = None
    list_display = ("__str__", "study", "stage", "status", "seed", "created_at")
    list_filter = ("status", "study")
    readonly_fields = (
        "study",
        "stage",
        "status",
        "progress",
        "error",
        "seed",
        "parameters_pretty",
        "counts_pretty",
        "diversity_pretty",
        "clusters_file",
        "requested_by",
        "created_at",
        "finished_at",
    )
    exclude = ("parameters", "counts", "diversity")

    @admin.display(description="parameters")
    def parameters_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.parameters, indent=2))

    @admin.display(description="counts")
    def counts_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.counts, indent=2))

    @admin.display(description="diversity")
    def diversity_pretty(self, obj):
        return _diversity_table(obj) if obj.diversity else ""

    @admin.display(description="clusters")
    def clusters_file(self, obj):
        if obj.status != CandidateSelection.Status.DONE:
            return ""
        url = reverse("admin:analysis_candidateselection_clusters", args=[obj.study_id, obj.pk])
        return format_html('<a href="{}">Download the clusters and their members (CSV)</a>', url)

    def get_urls(self):
        return [
            path(
                "study/<int:study_id>/",
                self.admin_site.admin_view(self.candidates_view),
                name="analysis_candidateselection_study",
            ),
            path(
                "study/<int:study_id>/<int:selection_id>/clusters.csv",
                self.admin_site.admin_view(self.clusters_view),
                name="analysis_candidateselection_clusters",
            ),
            *super().get_urls(),
        ]

    @study_page(Capability.SEE)
    def candidates_view(self, request: HttpRequest, study: Study):
        may_select = user_may(request.user, study, Capability.CONFIGURE)
        form = CandidateSelectionForm(
            request.POST if request.method == "POST" else None, study=study
        )
        if request.method == "POST":
            if not may_select:
                messages.error(request, "Your role in this study may not change its materials.")
            elif form.is_valid():
                try:
                    selection = candidate_selection_create(
                        study=study,
                        stage=form.cleaned_data["stage"],
                        parameters=form.parameters(),
                        seed=form.cleaned_data["seed"],
                        user=request.user,
                    )
                except ValidationError as exc:
                    _add_errors(form, exc)
                else:
                    candidate_selection_enqueue(selection)
                    messages.success(
                        request,
                        f"Selection {selection.pk} started: it fills stage "
                        f"{selection.stage.name!r}; this page shows its progress.",
                    )
                    return HttpResponseRedirect(request.path)
        candidate_selections_expire()  # a lost one stops the page's refreshing
        selections = list(
            CandidateSelection.objects.filter(study=study).select_related("stage")[:50]
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Candidate selection: {study.title}",
            "study": study,
            "pool": pool_summary(study=study),
            "form": form,
            "may_select": may_select,
            "selections": selections,
            "busy": any(
                s.status in (CandidateSelection.Status.QUEUED, CandidateSelection.Status.RUNNING)
                for s in selections
            ),
            "latest": next(
                (s for s in selections if s.status == CandidateSelection.Status.DONE), None
            ),
        }
        if request.GET.get("part") == "selections":  # the list's own refresh
            return TemplateResponse(
                request,
                "admin/analysis/candidateselection/selections.html",
                {**context, "part": True},
            )
        if context["latest"] is not None:
            context["latest_rows"] = diversity_rows(context["latest"].diversity)
            context["orders"] = SELF_BLEU_ORDERS
        return TemplateResponse(
            request, "admin/analysis/candidateselection/candidates.html", context
        )

    @study_page(Capability.SEE)
    def clusters_view(self, request: HttpRequest, study: Study, selection_id: int):
        selection = get_object_or_404(
            CandidateSelection, pk=selection_id, study=study, status=CandidateSelection.Status.DONE
        )
        response = StreamingHttpResponse(
            csv_chunks(clusters_rows(selection)), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{study.slug}-selection-{selection.pk}-clusters.csv"'
        )
        return response


def _add_errors(form: forms.Form, exc: ValidationError) -> None:
    """The service's refusals on the form: by field where the form has it."""
    for field, errors in exc.message_dict.items():
        field = "pool_pairs" if field == "pool_pairs_per_context" else field
        form.add_error(field if field in form.fields else None, errors)
