"""The published pairwise and ranking formats (``studies.columns.PAIRWISE_COLUMNS``,
``RANKING_COLUMNS``), each streamed from one query; attention checks left out as in
the coherence format (the attention pair, the off-topic candidate's rank), and
``annotator_group`` added as in the Likert format (``groups_follow_pseudonyms``).

Pairwise rows follow the stage, the dialogue, the annotator and the pair's two texts
(the lesser first, compared byte by byte), so a re-imported study, whose rows get new
ids, exports the same file; ranking rows follow the reflection as the coherence
format's do."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import F, Q
from django.db.models.functions import Collate, Greatest, Least

from ..columns import GATE_COLUMN, PAIRWISE_COLUMNS, RANKING_COLUMNS
from ..datafiles.published.columns import GROUP_COLUMN
from ..datafiles.spreadsheet import cell_escape, cell_exact
from ..models import Judgement, Reflection, Stage, Study
from .contexts import CHUNK_SIZE, published_contexts
from .gates import gate_labels
from .likert import groups_follow_pseudonyms
from .options import ExportOptions


def _header(columns, *, study: Study, options: ExportOptions, instrument: str) -> list[str]:
    group = options.extended or not groups_follow_pseudonyms(study)
    gated = gate_labels(study=study, options=options, instrument=instrument)
    return [*columns, *([GROUP_COLUMN] if group else []), *([GATE_COLUMN] if gated else [])]


def comparison_judgements(*, study: Study, options: ExportOptions, instrument: str):
    """The judgements a pairwise or ranking file has a row for: a pair's answer, a
    ranked candidate."""
    qs = Judgement.objects.filter(
        assignment__stage__study=study,
        assignment__stage__instrument=instrument,
        assignment__status__in=options.statuses,
    ).exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
    if options.stages:
        qs = qs.filter(assignment__stage__name__in=options.stages)
    if options.groups:
        qs = qs.filter(assignment__group__name__in=options.groups)
    if options.sources:
        qs = qs.filter(reflection__source__in=options.sources)
        if instrument == Stage.Instrument.PAIRWISE:  # both candidates of the pair
            qs = qs.filter(opponent__source__in=options.sources)
    if instrument == Stage.Instrument.PAIRWISE:
        return qs.filter(opponent__isnull=False)
    return qs.filter(~Q(rank=None))


_ORDER = (
    "assignment__stage__position",
    "assignment__batch__context__external_id",
    "assignment__group__name",
    "assignment__annotator__number",
)


def pairwise_export_header(*, study: Study, options: ExportOptions) -> list[str]:
    return _header(
        PAIRWISE_COLUMNS, study=study, options=options, instrument=Stage.Instrument.PAIRWISE
    )


def pairwise_export_rows(*, study: Study, options: ExportOptions) -> Iterator[list[str]]:
    """The header, then one row per pairwise answer, ``a`` the candidate shown on the
    left."""
    text_cell = cell_escape if options.spreadsheet_safe else cell_exact
    header = pairwise_export_header(study=study, options=options)
    with_group = GROUP_COLUMN in header
    gates = (
        gate_labels(study=study, options=options, instrument=Stage.Instrument.PAIRWISE)
        if GATE_COLUMN in header
        else None
    )
    yield header
    contexts = published_contexts(study)
    first, second = Collate("reflection__text", "C"), Collate("opponent__text", "C")
    rows = (
        comparison_judgements(study=study, options=options, instrument=Stage.Instrument.PAIRWISE)
        .order_by(*_ORDER, Least(first, second), Greatest(first, second))
        .values_list(
            "assignment__batch__context__external_id",
            "assignment__stage__name",
            "assignment__batch__context_id",
            "assignment__annotator__pseudonym",
            "reflection__source",
            "reflection__text",
            "opponent__source",
            "opponent__text",
            "shown_swapped",
            "choice",
            "reason",
            "assignment__group__name",
        )
    )
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        (dialogue, stage, context_id, pseudonym, *pair, swapped, choice, reason, group) = row
        left, right = (pair[2:], pair[:2]) if swapped else (pair[:2], pair[2:])
        cells = [
            text_cell(dialogue),
            text_cell(stage),
            contexts[context_id],
            text_cell(pseudonym),
            *(text_cell(v) for v in (*left, *right)),
            choice,
            text_cell(reason),
        ]
        if with_group:
            cells.append(text_cell(group))
        if gates is not None:
            cells.append(text_cell(gates.get(stage, "")))
        yield cells


def ranking_export_header(*, study: Study, options: ExportOptions) -> list[str]:
    return _header(
        RANKING_COLUMNS, study=study, options=options, instrument=Stage.Instrument.RANKING
    )


def ranking_export_rows(*, study: Study, options: ExportOptions) -> Iterator[list[str]]:
    """The header, then one row per ranked candidate."""
    text_cell = cell_escape if options.spreadsheet_safe else cell_exact
    header = ranking_export_header(study=study, options=options)
    with_group = GROUP_COLUMN in header
    gates = (
        gate_labels(study=study, options=options, instrument=Stage.Instrument.RANKING)
        if GATE_COLUMN in header
        else None
    )
    yield header
    contexts = published_contexts(study)
    rows = (
        comparison_judgements(study=study, options=options, instrument=Stage.Instrument.RANKING)
        .order_by(*_ORDER, F("reflection_id"))
        .values_list(
            "assignment__batch__context__external_id",
            "assignment__stage__name",
            "assignment__batch__context_id",
            "reflection__source",
            "reflection__text",
            "assignment__annotator__pseudonym",
            "rank",
            "assignment__group__name",
        )
    )
    for dialogue, stage, context_id, source, text, pseudonym, rank, group in rows.iterator(
        chunk_size=CHUNK_SIZE
    ):
        cells = [
            text_cell(dialogue),
            text_cell(stage),
            contexts[context_id],
            text_cell(source),
            text_cell(text),
            text_cell(pseudonym),
            str(rank),
        ]
        if with_group:
            cells.append(text_cell(group))
        if gates is not None:
            cells.append(text_cell(gates.get(stage, "")))
        yield cells
