"""Reads of a study's candidate pool."""

from __future__ import annotations

import pandas as pd

from studies.models import PoolCandidate


def pool_frame(*, study_id: int) -> pd.DataFrame:
    """The study's pool candidates in import order: ``id``, ``context_id``,
    ``dialogue_id``, ``source``, ``text``, ``generation``."""
    rows = (
        PoolCandidate.objects.filter(context__study_id=study_id)
        .order_by("context__external_id", "id")
        .values_list("id", "context_id", "context__external_id", "source", "text", "generation")
    )
    return pd.DataFrame.from_records(
        rows.iterator(chunk_size=20_000),
        columns=["id", "context_id", "dialogue_id", "source", "text", "generation"],
    )


def pool_settings(*, study_id: int) -> list[str]:
    """The generation settings (metadata keys) the study's pool candidates carry."""
    keys: set[str] = set()
    for generation in (
        PoolCandidate.objects.filter(context__study_id=study_id)
        .order_by()
        .values_list("generation", flat=True)
        .distinct()
    ):
        keys.update(generation)
    return sorted(keys)
