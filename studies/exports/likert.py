"""The published Likert format: one row per (candidate, annotator, dimension) of a
study's Likert stages (``studies.columns.LIKERT_COLUMNS``), streamed from one query,
attention-check candidates left out as in the coherence format. ``annotator_group``
is added when the groups do not follow from the pseudonyms (a group named otherwise
than its pseudonyms' prefix) or when asked (``extended``), so the import rebuilds the
same groups."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import F

from ..columns import GATE_COLUMN, LIKERT_COLUMNS, NO, SLIDER_SCALE, YES
from ..datafiles.published.columns import GROUP_COLUMN
from ..datafiles.spreadsheet import cell_escape, cell_exact
from ..models import LikertRating, Reflection, Stage, Study
from .contexts import CHUNK_SIZE, published_contexts
from .gates import gate_labels
from .options import ExportOptions

_FIELDS = (
    "judgement__assignment__batch__context__external_id",
    "judgement__assignment__stage__name",
    "judgement__assignment__batch__context_id",
    "judgement__reflection__source",
    "judgement__reflection__text",
    "judgement__assignment__annotator__pseudonym",
    "judgement__assignment__group__name",
    "dimension__name",
    "dimension__points",
    "value",
    "cannot_judge",
)


def groups_follow_pseudonyms(study: Study) -> bool:
    """Whether every group of ``study`` is named as its pseudonyms' prefix (an import
    without ``annotator_group`` makes the prefix the group)."""
    return not study.groups.exclude(name=F("pseudonym_prefix")).exists()


def likert_export_header(*, study: Study, options: ExportOptions) -> list[str]:
    group = options.extended or not groups_follow_pseudonyms(study)
    gated = gate_labels(study=study, options=options, instrument=Stage.Instrument.LIKERT)
    return [*LIKERT_COLUMNS, *([GROUP_COLUMN] if group else []), *([GATE_COLUMN] if gated else [])]


def likert_ratings(*, study: Study, options: ExportOptions):
    """The ratings the Likert file has a row for."""
    judgement = "judgement__"
    qs = LikertRating.objects.filter(
        **{
            f"{judgement}assignment__stage__study": study,
            f"{judgement}assignment__stage__instrument": Stage.Instrument.LIKERT,
            f"{judgement}assignment__status__in": options.statuses,
        }
    ).exclude(**{f"{judgement}reflection__kind": Reflection.Kind.ATTENTION_CHECK})
    if options.stages:
        qs = qs.filter(**{f"{judgement}assignment__stage__name__in": options.stages})
    if options.groups:
        qs = qs.filter(**{f"{judgement}assignment__group__name__in": options.groups})
    if options.sources:
        qs = qs.filter(**{f"{judgement}reflection__source__in": options.sources})
    return qs


def _queryset(*, study: Study, options: ExportOptions):
    judgement = "judgement__"
    return (
        likert_ratings(study=study, options=options)
        .order_by(
            f"{judgement}assignment__stage__position",
            f"{judgement}assignment__batch__context__external_id",
            f"{judgement}assignment__group__name",
            f"{judgement}assignment__annotator__number",
            f"{judgement}reflection_id",
            "dimension__position",
        )
        .values_list(*_FIELDS)
    )


def likert_export_rows(*, study: Study, options: ExportOptions) -> Iterator[list[str]]:
    """The header, then one row per rating (see the module docstring)."""
    text_cell = cell_escape if options.spreadsheet_safe else cell_exact
    header = likert_export_header(study=study, options=options)
    with_group = GROUP_COLUMN in header
    gates = (
        gate_labels(study=study, options=options, instrument=Stage.Instrument.LIKERT)
        if GATE_COLUMN in header
        else None
    )
    yield header
    contexts = published_contexts(study)
    for row in _queryset(study=study, options=options).iterator(chunk_size=CHUNK_SIZE):
        (
            dialogue, stage, context_id, source, text, pseudonym, group, dimension, points,
            value, cannot_judge,
        ) = row  # fmt: skip
        cells = [
            text_cell(dialogue),
            text_cell(stage),
            contexts[context_id],
            text_cell(source),
            text_cell(text),
            text_cell(pseudonym),
            dimension,
            SLIDER_SCALE if points is None else str(points),
            "" if cannot_judge else str(value),
            YES if cannot_judge else NO,
        ]
        if with_group:
            cells.append(text_cell(group))
        if gates is not None:
            cells.append(text_cell(gates.get(stage, "")))
        yield cells
