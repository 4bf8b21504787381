"""The item-level export: one CSV row per (stage, item, group) of the judgements the
report analyses, the file people feed to metric studies (README "Item-level export").

The judgements are the report's (``selectors.judgements_frame``, i.e.
``Judgement.objects.analysed`` with the same parameters: excluded sources, expired
batches; never attention checks) and the per-item numbers are the report's item table
(``metrics.protocol.items.item_table``, the one home of the majority rule). This module
only names the columns, orders the rows and writes them: a chunk of rows at a time, so
a response streams while the rest is still being written. The command, the dashboard
download (linked from the admin's export page) and the API all call
``items_csv_chunks``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator

import pandas as pd
from django.core.exceptions import ValidationError

from studies.models import Reflection, Study

from .metrics.protocol.items import item_table
from .report import judgements_with_categories
from .selectors import judgements_frame, report_categories
from .services import analysis_parameters_clean

COLUMNS = (
    "stage",
    "annomi_dialogue_id",
    "reflection_source",
    "reflection",
    "group",
    "n_raters",
    "coherence_score",
    "majority_label",
    "majority_mee",
    "empathy_mean",
    "n_descriptions",
)
ROWS_PER_WRITE = 500


def items_parameters_clean(
    *, study: Study, excluded_sources: Iterable[str] = (), include_expired=False
) -> dict:
    """The report's parameters that choose the judgements (``excluded_sources``,
    ``include_expired``), checked as a run's are (each excluded source must be one of
    the study's). ``ValidationError`` per field."""
    try:
        cleaned = analysis_parameters_clean(
            {"excluded_sources": list(excluded_sources), "include_expired": include_expired},
            study=study,
        )
    except ValidationError as exc:
        raise ValidationError(exc.message_dict) from None
    return {key: cleaned[key] for key in ("excluded_sources", "include_expired")}


def items_frame(*, study: Study, parameters: dict) -> pd.DataFrame:
    """The rows of the export with ``COLUMNS``, in its order: stage order, dialogue id,
    source, reflection text, group (the report's group order: ``str`` order)."""
    frame = judgements_frame(
        study_id=study.pk,
        include_expired=parameters["include_expired"],
        exclude_sources=tuple(parameters["excluded_sources"]),
    )
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    categories = report_categories(study_id=study.pk)
    table = item_table(
        judgements=judgements_with_categories(frame, categories),
        categories=[category.slug for category in categories],
    )
    texts = dict(
        Reflection.objects.filter(context__study=study).order_by().values_list("pk", "text")
    )
    table = table.assign(
        reflection=table["item"].map(texts),
        group_key=table["group"].map(str),
    ).sort_values(
        ["stage_position", "dialogue_id", "source", "reflection", "group_key"], kind="stable"
    )
    table = table.rename(
        columns={"dialogue_id": "annomi_dialogue_id", "source": "reflection_source"}
    )
    return table[list(COLUMNS)].reset_index(drop=True)


def _cell(value) -> object:
    """Missing values (no empathy rating, no majority MEE) are empty cells."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def items_csv_chunks(*, study: Study, parameters: dict) -> Iterator[str]:
    """The CSV (RFC 4180, ``\\r\\n``, texts exactly as stored) in chunks of a few hundred
    rows, header first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    yield buffer.getvalue()
    table = items_frame(study=study, parameters=parameters)
    for start in range(0, len(table), ROWS_PER_WRITE):
        buffer.seek(0)
        buffer.truncate()
        chunk = table.iloc[start : start + ROWS_PER_WRITE]
        writer.writerows(
            [_cell(value) for value in row] for row in chunk.itertuples(index=False, name=None)
        )
        yield buffer.getvalue()


def items_filename(*, study: Study) -> str:
    return f"{study.slug}-items.csv"
