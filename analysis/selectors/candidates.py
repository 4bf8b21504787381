"""The candidate selections behind a study's stages, for the report: each stage's latest
finished selection (its record) and the members of its drawn clusters."""

from __future__ import annotations

import pandas as pd
from django.db.models import BooleanField, ExpressionWrapper, F, Q, TextField
from django.db.models.functions import Cast

from ..models import CandidateSelection, ClusterMember


def _latest_selection_ids(study_id: int) -> list[int]:
    """Per stage, its latest finished selection whose candidates the stage still holds
    (a stage emptied and filled again, by a selection or an import, is not the first
    selection's any more)."""
    return list(
        CandidateSelection.objects.filter(
            study_id=study_id,
            status=CandidateSelection.Status.DONE,
            stage__isnull=False,
            clusters__selected=True,
            clusters__reflection__batch_items__batch__stage=F("stage"),
        )
        .order_by("stage_id", "-created_at", "-id")
        .distinct("stage_id")
        .values_list("id", flat=True)
    )


def stage_selections(*, study_id: int) -> dict[str, dict]:
    """{stage name: ``selection_id``, ``seed``, ``parameters``, ``counts``, ``diversity``}
    of each stage's latest finished selection."""
    rows = CandidateSelection.objects.filter(pk__in=_latest_selection_ids(study_id)).values(
        "id", "stage__name", "stage__position", "seed", "parameters", "counts", "diversity"
    )
    return {
        row["stage__name"]: {
            "selection_id": row["id"],
            "seed": row["seed"],
            "parameters": row["parameters"],
            "counts": row["counts"],
            "diversity": row["diversity"],
        }
        for row in sorted(rows, key=lambda r: r["stage__position"])
    }


def spread_members(*, study_id: int) -> pd.DataFrame:
    """One row per member of a drawn cluster of each stage's latest selection whose
    representative is still in the stage: ``stage``, ``item`` (the representative's
    reflection id), ``member`` (pool candidate id), ``representative`` and
    ``generation`` (JSON text)."""
    qs = (
        ClusterMember.objects.filter(
            cluster__selection_id__in=_latest_selection_ids(study_id),
            cluster__selected=True,
            cluster__reflection__batch_items__batch__stage=F("cluster__selection__stage"),
        )
        .annotate(
            is_representative=ExpressionWrapper(
                Q(candidate_id=F("cluster__representative_id"), duplicate=False),
                output_field=BooleanField(),
            )
        )
        .order_by()
        .values_list(
            "cluster__selection__stage__name",
            "cluster__reflection_id",
            "candidate_id",
            "is_representative",
            Cast("candidate__generation", TextField()),
        )
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000),
        columns=["stage", "item", "member", "representative", "generation"],
    )
