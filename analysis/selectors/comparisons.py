"""The pairwise and ranking stages' answers as DataFrames (one query each)."""

import pandas as pd

from studies.models import Judgement, Stage

from ..report.comparisons import PAIRWISE_COLUMNS, RANKING_COLUMNS, ComparisonData

_PAIRWISE_PATHS = {
    "group": "assignment__group__name",
    "stage": "assignment__stage__name",
    "context": "assignment__batch__context__external_id",
    "first": "reflection_id",
    "second": "opponent_id",
    "first_source": "reflection__source",
    "second_source": "opponent__source",
    "rater": "assignment__annotator_id",
    "choice": "choice",
    "swapped": "shown_swapped",
}
_RANKING_PATHS = {
    "group": "assignment__group__name",
    "stage": "assignment__stage__name",
    "context": "assignment__batch__context__external_id",
    "rater": "assignment__annotator_id",
    "candidate": "reflection_id",
    "source": "reflection__source",
    "rank": "rank",
}


def _frame(qs, paths: dict, columns: list[str]) -> pd.DataFrame:
    rows = qs.order_by().values_list(*(paths[column] for column in columns))
    return pd.DataFrame.from_records(rows.iterator(chunk_size=20_000), columns=columns)


def comparison_data(
    *, study_id: int, include_expired: bool = False, exclude_sources: tuple[str, ...] = ()
) -> ComparisonData:
    """The answers that count (``Judgement.analysed_q``: the attention checks' are left
    out, and a pair with an excluded source on either side) of the study's pairwise
    and ranking stages, and whether each such stage allowed ties."""
    counted = Judgement.objects.filter(
        Judgement.analysed_q(include_expired=include_expired, excluded_sources=exclude_sources),
        assignment__stage__study_id=study_id,
    )
    pairwise = _frame(
        counted.filter(
            assignment__stage__instrument=Stage.Instrument.PAIRWISE, opponent__isnull=False
        ),
        _PAIRWISE_PATHS,
        PAIRWISE_COLUMNS,
    ).astype({"swapped": bool})
    ranking = _frame(
        counted.filter(assignment__stage__instrument=Stage.Instrument.RANKING, rank__isnull=False),
        _RANKING_PATHS,
        RANKING_COLUMNS,
    )
    ties = dict(
        Stage.objects.filter(
            study_id=study_id,
            instrument__in=[Stage.Instrument.PAIRWISE, Stage.Instrument.RANKING],
        )
        .order_by("position")
        .values_list("name", "allows_ties")
    )
    return ComparisonData(pairwise=pairwise, ranking=ranking, ties=ties)
