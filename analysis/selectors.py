"""The one place ORM rows become a DataFrame (one query, no per-row Python)."""

import pandas as pd
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from studies.models import (
    AnnotatorGroup,
    Assignment,
    Batch,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
)

from .models import AutomaticScore
from .report import Category

JUDGEMENT_COLUMNS = {
    "id": "judgement_id",
    "assignment__batch__stage__name": "stage",
    "assignment__batch__stage__position": "stage_position",
    "assignment__annotator__group__name": "group",
    "assignment__annotator__pseudonym": "annotator",
    "assignment__annotator_id": "annotator_id",
    "assignment__batch__context__external_id": "dialogue_id",
    "reflection_id": "reflection_id",
    "reflection__source": "source",
    "reflection__kind": "kind",
    "coherent": "coherent",
    "error_flags": "error_flags",
    "most_evident_bit": "most_evident_bit",
    "empathy": "empathy",
    "assignment__is_recurring": "is_recurring",
    "assignment__status": "assignment_status",
}


def report_categories(*, study_id: int) -> list[Category]:
    """The study's error categories in display order, as the report names them."""
    rows = ErrorCategory.objects.filter(study_id=study_id).order_by("order", "bit")
    return [
        Category(slug, label, bit) for slug, label, bit in rows.values_list("slug", "label", "bit")
    ]


def judgements_frame(
    *, study_id: int, include_expired: bool = False, exclude_sources: tuple[str, ...] = ()
) -> pd.DataFrame:
    """The judgements that count for analysis (``Judgement.objects.analysed``)."""
    qs = (
        Judgement.objects.analysed(
            include_expired=include_expired, excluded_sources=exclude_sources
        )
        .filter(assignment__batch__stage__study_id=study_id)
        .order_by()
        .values_list(*JUDGEMENT_COLUMNS)
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(JUDGEMENT_COLUMNS.values())
    )


AUTOMATIC_SCORE_COLUMNS = {
    "stage__name": "stage",
    "reflection_id": "reflection_id",
    "evaluator": "evaluator",
    "score": "score",
}


def automatic_scores_frame(*, study_id: int) -> pd.DataFrame:
    """Automatic-evaluator scores of the study's analysed items, one row per (stage,
    reflection, evaluator); ``stage`` is the stage name, as in ``judgements_frame``.

    Only a reflection still in its stage's batch counts (a materials re-import may have
    rebuilt the batch since the scores were imported); attention checks never do.
    """
    qs = (
        AutomaticScore.objects.filter(
            study_id=study_id, reflection__batch_items__batch__stage_id=F("stage_id")
        )
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by("stage__position", "evaluator", "reflection_id")
        .values_list(*AUTOMATIC_SCORE_COLUMNS)
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(AUTOMATIC_SCORE_COLUMNS.values())
    )


def study_progress(*, study_id: int) -> dict:
    """Where the data collection stands, for the dashboard, in three aggregate queries.

    ``stages``: per stage (in order) its ``n_batches``, how many are filled
    (``n_filled``: k submitted assignments in every group of the study), its ``slots``
    (batches × k) and ``cells``, one per group in ``groups`` order: the group's submitted
    batches and their judgements, attention checks not counted (rejected and expired
    work never counts). ``groups``: the group names. ``k``: the study's overlap.
    """
    submitted = Assignment.Status.SUBMITTED
    # Submitted assignments of one group (the outer row) in one batch (the row outside it).
    in_batch = (
        Assignment.objects.filter(
            batch_id=OuterRef(OuterRef("pk")), group_id=OuterRef("pk"), status=submitted
        )
        .order_by()
        .values("group_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    short_group = (
        AnnotatorGroup.objects.filter(study_id=study_id)
        .annotate(n=Coalesce(Subquery(in_batch, output_field=IntegerField()), 0))
        .filter(n__lt=F("study__overlap_k"))
    )
    filled = (
        Batch.objects.filter(stage_id=OuterRef("pk"))
        .filter(~Exists(short_group))
        .order_by()
        .values("stage_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    stages = list(
        Stage.objects.filter(study_id=study_id)
        .order_by("position")
        .annotate(
            n_batches=Count("batches"),
            n_filled=Coalesce(Subquery(filled, output_field=IntegerField()), 0),
            k=F("study__overlap_k"),
        )
        .values("pk", "name", "position", "n_batches", "n_filled", "k")
    )
    groups = list(
        AnnotatorGroup.objects.filter(study_id=study_id).order_by("name").values("pk", "name")
    )
    counts = (
        Assignment.objects.filter(stage__study_id=study_id, status=submitted)
        .order_by()
        .values("stage_id", "group_id")
        .annotate(
            n_batches=Count("pk", distinct=True),
            n_judgements=Count(
                "judgements",
                filter=Q(
                    judgements__reflection__kind__in=[
                        Reflection.Kind.HUMAN,
                        Reflection.Kind.SYNTHETIC,
                    ]
                ),
            ),
        )
    )
    found = {(row["stage_id"], row["group_id"]): row for row in counts}
    for stage in stages:
        stage["slots"] = stage["n_batches"] * stage["k"]
        stage["cells"] = [
            {
                "group": group["name"],
                "batches": found.get((stage["pk"], group["pk"]), {}).get("n_batches", 0),
                "judgements": found.get((stage["pk"], group["pk"]), {}).get("n_judgements", 0),
            }
            for group in groups
        ]
    return {
        "k": stages[0]["k"] if stages else None,
        "groups": [group["name"] for group in groups],
        "stages": stages,
    }


# --- the REST API (analysis/apis.py) -----------------------------------------------------


def analysis_run_list(*, study_id: int):
    """The study's runs, newest first, without their (large) reports."""
    from .models import AnalysisRun

    return (
        AnalysisRun.objects.filter(study_id=study_id)
        .select_related("study")
        .defer("result")
        .order_by("-created_at", "-id")
    )


def analysis_run_get(*, run_id: int):
    """One run with its report, or None."""
    from .models import AnalysisRun

    return AnalysisRun.objects.select_related("study").filter(pk=run_id).first()
