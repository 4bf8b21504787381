"""The Likert stages' ratings as a DataFrame (one query) and their dimensions."""

import pandas as pd

from studies.models import Judgement, LikertDimension, LikertRating

from ..report.likert import LikertData

_FIELDS = {
    "judgement__assignment__group__name": "group",
    "judgement__assignment__stage__name": "stage",
    "judgement__reflection__source": "source",
    "dimension__name": "dimension",
    "judgement__reflection_id": "item",
    "judgement__assignment__annotator_id": "rater",
    "value": "value",
    "cannot_judge": "cannot_judge",
}


def likert_data(
    *, study_id: int, include_expired: bool = False, exclude_sources: tuple[str, ...] = ()
) -> LikertData:
    """The ratings that count (those of answers that count for analysis,
    ``Judgement.analysed_q``: the attention check's are left out) and every Likert
    stage's dimensions."""
    rows = (
        LikertRating.objects.filter(
            Judgement.analysed_q(
                prefix="judgement__",
                include_expired=include_expired,
                excluded_sources=exclude_sources,
            ),
            judgement__assignment__stage__study_id=study_id,
        )
        .order_by()
        .values_list(*_FIELDS)
    )
    ratings = pd.DataFrame.from_records(
        rows.iterator(chunk_size=20_000), columns=list(_FIELDS.values())
    ).astype({"value": float, "cannot_judge": bool})
    dimensions: dict[str, list[dict]] = {}
    for dimension in (
        LikertDimension.objects.filter(stage__study_id=study_id)
        .select_related("stage")
        .order_by("stage__position", "position")
    ):
        dimensions.setdefault(dimension.stage.name, []).append(
            {
                "name": dimension.name,
                "statement": dimension.statement,
                "scale": dimension.scale,
                "points": dimension.points,
                "labels": dimension.labels,
            }
        )
    return LikertData(ratings=ratings, dimensions=dimensions)
