"""The Likert stages' ratings as a DataFrame (one query) and their dimensions."""

import pandas as pd

from studies.models import Judgement, LikertDimension, LikertRating, Stage

from ..report.likert import LIKERT_COLUMNS, LikertData

# The ORM path of each of the frame's columns (``LIKERT_COLUMNS``, in that order).
_PATHS = {
    "group": "judgement__assignment__group__name",
    "stage": "judgement__assignment__stage__name",
    "source": "judgement__reflection__source",
    "dimension": "dimension__name",
    "item": "judgement__reflection_id",
    "rater": "judgement__assignment__annotator_id",
    "value": "value",
    "cannot_judge": "cannot_judge",
}


def likert_data(
    *, study_id: int, include_expired: bool = False, exclude_sources: tuple[str, ...] = ()
) -> LikertData:
    """The ratings that count (those of answers that count for analysis,
    ``Judgement.analysed_q``: the attention check's are left out) and every Likert
    stage's dimensions (a stage switched back to the coherence protocol has none)."""
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
        .values_list(*(_PATHS[column] for column in LIKERT_COLUMNS))
    )
    ratings = pd.DataFrame.from_records(
        rows.iterator(chunk_size=20_000), columns=LIKERT_COLUMNS
    ).astype({"value": float, "cannot_judge": bool})
    dimensions: dict[str, list[dict]] = {}
    for dimension in (
        LikertDimension.objects.filter(
            stage__study_id=study_id, stage__instrument=Stage.Instrument.LIKERT
        )
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
