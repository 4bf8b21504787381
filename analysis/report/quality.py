"""The annotators' quality (the report's ``quality`` block) computed in one place:
:func:`analysis.report.build.report_build` calls it for the dashboard's quality panel and
:mod:`analysis.export_columns` for the full export's annotator columns."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..metrics.protocol.quality import (
    DEFAULT_AGREEMENT_FLOOR,
    DEFAULT_FAST_SECONDS,
    annotator_quality,
)


def quality_block(
    *, judgements: pd.DataFrame, assignments: pd.DataFrame | None, parameters: Mapping
) -> dict:
    """``{group: {annotator: {...}}}`` as :func:`annotator_quality` computes it, with the
    run's thresholds (``fast_seconds``, ``agreement_floor``; the defaults when absent).
    ``judgements`` as the report reads them (``rater``, ``item``, ...); empty without
    any assignment."""
    if assignments is None or assignments.empty:
        return {}
    return annotator_quality(
        judgements=judgements,
        assignments=assignments,
        fast_seconds=float(parameters.get("fast_seconds", DEFAULT_FAST_SECONDS)),
        agreement_floor=float(parameters.get("agreement_floor", DEFAULT_AGREEMENT_FLOOR)),
    )
