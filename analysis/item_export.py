"""The item-level export: one CSV row per (stage, item, group) of the judgements the
report analyses, the file people feed to metric studies (docs/analysts/exports.md).

The judgements are the report's (``selectors.judgements_frame``, i.e.
``Judgement.objects.analysed`` with the same parameters: excluded sources, expired
batches; never attention checks) and the per-item numbers are the report's item table
(``metrics.protocol.items.item_table``, the one home of the majority rule). The Likert
stages' items have a file of their own (``instrument``: a row per item, group and
dimension, ``metrics.protocol.likert.likert_item_table``). This module
only names the columns, orders the rows and writes them: a chunk of rows at a time, so
a response streams while the rest is still being written. The command, the dashboard
download (linked from the admin's export page) and the API all call
``items_csv_chunks``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import pandas as pd
from django.core.exceptions import ValidationError

from studies.datafiles.spreadsheet import cell_escape, cell_exact
from studies.exports import csv_chunks, file_clean, file_extension
from studies.models import Reflection, Stage, Study

from .metrics.protocol.items import item_table
from .metrics.protocol.likert import likert_item_table
from .parameters import analysis_parameters_clean
from .report.build import judgements_with_categories
from .selectors.judgements import judgements_frame, report_categories, stage_offered_slugs
from .selectors.likert import likert_data

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
# Columns of text (the others are counts and scores): what a spreadsheet-safe file
# escapes, as the annotation export escapes its texts.
TEXT_COLUMNS = frozenset(
    (
        "stage",
        "annomi_dialogue_id",
        "reflection_source",
        "reflection",
        "group",
        "majority_label",
        "majority_mee",
    )
)


# The Likert stages' items: a row per (stage, item, group, dimension) of the ratings
# the report analyses (``analysis.metrics.protocol.likert.likert_item_table``).
LIKERT_COLUMNS = (
    "stage",
    "annomi_dialogue_id",
    "reflection_source",
    "reflection",
    "group",
    "dimension",
    "scale",
    "n_raters",
    "n_cannot_judge",
    "mean",
    "sd",
    "median",
)
LIKERT_TEXT_COLUMNS = frozenset(
    ("stage", "annomi_dialogue_id", "reflection_source", "reflection", "group", "dimension")
)
INSTRUMENTS = (Stage.Instrument.COHERENCE, Stage.Instrument.LIKERT)
#: The typed files' kinds of the columns that are counts and scores (the others are
#: text, or named in ``studies.columns``).
KINDS = {
    "n_raters": "integer",
    "n_descriptions": "integer",
    "n_cannot_judge": "integer",
    "coherence_score": "number",
    "empathy_mean": "number",
    "mean": "number",
    "sd": "number",
    "median": "number",
}


#: The analysis's parameter names as the item export's page, API and command spell them.
PARAMETER_NAMES = {"excluded_sources": "exclude_source"}


def items_parameters_clean(
    *,
    study: Study,
    excluded_sources: Iterable[str] = (),
    include_expired=False,
    file="csv",
    instrument="",
) -> dict:
    """The report's parameters that choose the judgements (``excluded_sources``,
    ``include_expired``), checked as a run's are (each excluded source must be one of
    the study's), the kind of file (``file``: one of the annotation export's
    ``FILES``) and the ``instrument`` whose items it holds (empty: the coherence
    protocol's, or the Likert stages' in a study with no other). ``ValidationError``
    per field."""
    errors = {}
    instrument = (instrument or "").strip()
    if not instrument:
        coherence = study.stages.filter(instrument=Stage.Instrument.COHERENCE).exists()
        likert = study.stages.filter(instrument=Stage.Instrument.LIKERT).exists()
        instrument = Stage.Instrument.LIKERT if likert and not coherence else "coherence"
    elif instrument not in INSTRUMENTS:
        errors["instrument"] = [f'Choose "coherence" or "likert", not "{instrument}".']
    try:
        cleaned = analysis_parameters_clean(
            {"excluded_sources": list(excluded_sources), "include_expired": include_expired},
            study=study,
        )
    except ValidationError as exc:
        # Named as the export's callers name it (?exclude_source=, --exclude-source).
        errors.update(
            {PARAMETER_NAMES.get(key, key): value for key, value in exc.message_dict.items()}
        )
    try:
        file = file_clean(file)
    except ValidationError as exc:
        errors["file"] = exc.messages
    if errors:
        raise ValidationError(errors)
    return {key: cleaned[key] for key in ("excluded_sources", "include_expired")} | {
        "file": file,
        "instrument": instrument,
    }


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
        offered=stage_offered_slugs(study_id=study.pk),
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


def likert_items_frame(*, study: Study, parameters: dict) -> pd.DataFrame:
    """The Likert rows with ``LIKERT_COLUMNS``, in the order of the coherence rows
    (stage order, dialogue id, source, text, group), then the dimensions' order."""
    data = likert_data(
        study_id=study.pk,
        include_expired=parameters["include_expired"],
        exclude_sources=tuple(parameters["excluded_sources"]),
    )
    if data.ratings.empty:
        return pd.DataFrame(columns=list(LIKERT_COLUMNS))
    table = likert_item_table(data.ratings, ["stage", "group", "source", "dimension"])
    reflections = {
        pk: (text, dialogue)
        for pk, text, dialogue in Reflection.objects.filter(context__study=study)
        .order_by()
        .values_list("pk", "text", "context__external_id")
    }
    order = {
        (stage, d["name"]): (position, place, d["scale"])
        for position, (stage, dimensions) in enumerate(data.dimensions.items())
        for place, d in enumerate(dimensions)
    }
    placed = [order[key] for key in zip(table["stage"], table["dimension"], strict=True)]
    table = table.assign(
        reflection=table["item"].map(lambda pk: reflections[pk][0]),
        annomi_dialogue_id=table["item"].map(lambda pk: reflections[pk][1]),
        reflection_source=table["source"],
        stage_position=[p[0] for p in placed],
        dimension_position=[p[1] for p in placed],
        scale=[p[2] for p in placed],
        group_key=table["group"].map(str),
    ).sort_values(
        [
            "stage_position", "annomi_dialogue_id", "reflection_source", "reflection",
            "group_key", "dimension_position",
        ],
        kind="stable",
    )  # fmt: skip
    return table[list(LIKERT_COLUMNS)].reset_index(drop=True)


def _cell(value) -> str:
    """Missing values (no empathy rating, no majority MEE) are empty cells; numbers are
    written as Python writes them (as the CSV module would)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def items_rows(*, study: Study, parameters: dict) -> Iterator[list[str]]:
    """The header, then a row of text cells per item and group; texts exact, or escaped
    for a spreadsheet when ``parameters["file"]`` is the spreadsheet-safe CSV."""
    text_cell = cell_escape if parameters.get("file") == "csv-spreadsheet-safe" else cell_exact
    if parameters.get("instrument") == Stage.Instrument.LIKERT:
        columns, text_columns = LIKERT_COLUMNS, LIKERT_TEXT_COLUMNS
        table = likert_items_frame(study=study, parameters=parameters)
    else:
        columns, text_columns = COLUMNS, TEXT_COLUMNS
        table = items_frame(study=study, parameters=parameters)
    yield list(columns)
    texts = [column in text_columns for column in columns]
    for row in table.itertuples(index=False, name=None):
        cells = map(_cell, row)
        yield [text_cell(cell) if text else cell for cell, text in zip(cells, texts, strict=True)]


def items_csv_chunks(*, study: Study, parameters: dict) -> Iterator[str]:
    """The CSV (RFC 4180, ``\\r\\n``) in chunks of a few hundred rows, header first."""
    return csv_chunks(items_rows(study=study, parameters=parameters))


def items_filename(*, study: Study, parameters: dict | None = None) -> str:
    extension = file_extension((parameters or {}).get("file") or "csv")
    likert = (parameters or {}).get("instrument") == Stage.Instrument.LIKERT
    return f"{study.slug}-items{'-likert' if likert else ''}.{extension}"
