"""The one place ORM rows become a DataFrame (one query, no per-row Python)."""

import pandas as pd

from studies.models import Assignment, Judgement, Reflection

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


def judgements_frame(
    *, study_id: int, include_expired: bool = False, exclude_sources: tuple[str, ...] = ()
) -> pd.DataFrame:
    """Judgements that count for analysis: from submitted assignments (and expired ones
    when asked), never rejected, never attention-check items; minus excluded sources."""
    statuses = [Assignment.Status.SUBMITTED]
    if include_expired:
        statuses.append(Assignment.Status.EXPIRED)
    qs = (
        Judgement.objects.filter(
            assignment__batch__stage__study_id=study_id, assignment__status__in=statuses
        )
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .exclude(reflection__source__in=exclude_sources)
        .order_by()
        .values_list(*JUDGEMENT_COLUMNS)
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(JUDGEMENT_COLUMNS.values())
    )
