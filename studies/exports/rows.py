"""The exported rows: the header and one list of cells per judgement, streamed from
one query."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ..columns import (
    FULL_COLUMNS_HEAD,
    FULL_COLUMNS_TAIL,
    GATE_COLUMN,
    GATE_DECIDED_COLUMN,
    PRIMARY_CODES_COLUMN,
)
from ..datafiles.published.columns import (
    DESCRIPTION_COLUMN,
    EMPATHY_COLUMN,
    GROUP_COLUMN,
    MOST_EVIDENT_COLUMN,
    NO,
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    YES,
)
from ..datafiles.spreadsheet import cell_escape, cell_exact
from ..models import (
    CrowdEntry,
    DescriptionCoding,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from ..protocol import category_selected
from .annotator_columns import annotator_cells, annotator_columns
from .codes import primary_codes_by_judgement
from .contexts import CHUNK_SIZE, published_contexts
from .gates import gate_decision_times, gate_labels
from .options import ExportOptions, export_instruments


def _categories(study: Study) -> list[tuple[str, int]]:
    """(slug, bit) in export column order: the published columns first (in
    their published order), then any other category of the study in display order."""
    rows = list(
        ErrorCategory.objects.filter(study=study)
        .order_by("order", "bit")
        .values_list("slug", "bit")
    )
    by_slug = dict(rows)
    published = [(slug, by_slug[slug]) for slug in PUBLISHED_CATEGORY_COLUMNS if slug in by_slug]
    others = [(slug, bit) for slug, bit in rows if slug not in PUBLISHED_CATEGORY_COLUMNS]
    return published + others


def _has_descriptions(study: Study) -> bool:
    """Whether any answer of the study has a description (its exports then end with
    the ``error_description`` column)."""
    return (
        Judgement.objects.filter(assignment__stage__study=study)
        .exclude(error_description="")
        .exists()
    )


def _has_codings(study: Study) -> bool:
    """Whether the study's descriptions were coded (its full export then ends with the
    primary coder's codes, ``description_codes``)."""
    return DescriptionCoding.objects.filter(coder__study=study).exists()


def export_header(*, study: Study, options: ExportOptions) -> list[str]:
    slugs = [slug for slug, _ in _categories(study)]
    described = [DESCRIPTION_COLUMN] if _has_descriptions(study) else []
    gated = (
        [GATE_COLUMN]
        if gate_labels(study=study, options=options, instrument=Stage.Instrument.COHERENCE)
        else []
    )
    if options.fmt == "full":
        coded = [PRIMARY_CODES_COLUMN] if described and _has_codings(study) else []
        per_annotator = [name for columns in annotator_columns() for name in columns.names]
        gated += [GATE_DECIDED_COLUMN] if gated else []
        return [
            *FULL_COLUMNS_HEAD,
            *slugs,
            *FULL_COLUMNS_TAIL,
            *per_annotator,
            *gated,
            *described,
            *coded,
        ]
    extra = [s for s in slugs if s not in PUBLISHED_CATEGORY_COLUMNS]
    header = [*PUBLISHED_COLUMNS, *extra]
    if options.extended:
        header += [GROUP_COLUMN, MOST_EVIDENT_COLUMN, EMPATHY_COLUMN]
    return header + gated + described


_FIELDS = (
    "assignment__stage__name",
    "assignment__stage__position",
    "assignment__batch_id",
    "assignment__batch__context_id",
    "assignment__batch__context__external_id",
    "reflection_id",
    "reflection__source",
    "reflection__kind",
    "reflection__text",
    "assignment__annotator__pseudonym",
    "assignment__group__name",
    "coherent",
    "error_flags",
    "most_evident_bit",
    "empathy",
    "error_description",
)
_FULL_FIELDS = (
    "reflection__generation",
    "assignment_id",
    "assignment__status",
    "assignment__is_recurring",
    "assignment__order",
    "seconds_spent",
    "created_at",
    "updated_at",
    "assignment__assigned_at",
    "assignment__submitted_at",
    "assignment__attention_passed",
    "id",
)


def coherence_judgements(*, study: Study, options: ExportOptions):
    """The judgements the coherence protocol's file has a row for."""
    qs = Judgement.objects.coherence().filter(
        assignment__stage__study=study, assignment__status__in=options.statuses
    )
    if options.fmt == "published":
        qs = qs.exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
    if options.stages:
        qs = qs.filter(assignment__stage__name__in=options.stages)
    if options.groups:
        qs = qs.filter(assignment__group__name__in=options.groups)
    if options.sources:
        qs = qs.filter(reflection__source__in=options.sources)
    return qs


def _queryset(*, study: Study, options: ExportOptions):
    fields = _FIELDS + (_FULL_FIELDS if options.fmt == "full" else ())
    return (
        coherence_judgements(study=study, options=options)
        .order_by(
            "assignment__stage__position",
            "assignment__batch__context__external_id",
            "assignment__group__name",
            "assignment__annotator__number",
            "reflection_id",
        )
        .values_list(*fields)
    )


def _crowd_outcomes(study: Study) -> dict[tuple[str, int], str]:
    """(pseudonym, stage position) → the crowd worker's outcome in that stage."""
    return {
        (pseudonym, position): outcome
        for pseudonym, position, outcome in CrowdEntry.objects.filter(
            stage__study=study
        ).values_list("annotator__pseudonym", "stage__position", "outcome")
    }


def _iso(value) -> str:
    return value.isoformat().replace("+00:00", "Z") if value is not None else ""


def export_rows(
    *, study: Study, options: ExportOptions, instrument: str | None = None
) -> Iterator[list[str]]:
    """The header, then one list of cells per judgement, streamed from the database.
    Texts are exact, or escaped for a spreadsheet when ``options.spreadsheet_safe``.
    The training format has rows of its own (``studies.exports.training``), and so
    has the published format of Likert stages (``studies.exports.likert``), and of
    pairwise and ranking stages (``studies.exports.comparisons``):
    ``instrument`` names the file of an export that has several
    (``export_instruments``); without it the export must have one."""
    if instrument is None:
        instruments = export_instruments(study=study, options=options)
        if len(instruments) > 1:
            raise ValueError("The export has a file per instrument: name one.")
        instrument = instruments[0]
    if options.fmt == "training":
        from .training import training_export_rows

        yield from training_export_rows(study=study, options=options)
        return
    if instrument == Stage.Instrument.LIKERT:
        from .likert import likert_export_rows

        yield from likert_export_rows(study=study, options=options)
        return
    if instrument == Stage.Instrument.PAIRWISE:
        from .comparisons import pairwise_export_rows

        yield from pairwise_export_rows(study=study, options=options)
        return
    if instrument == Stage.Instrument.RANKING:
        from .comparisons import ranking_export_rows

        yield from ranking_export_rows(study=study, options=options)
        return
    text_cell = cell_escape if options.spreadsheet_safe else cell_exact
    categories = _categories(study)
    slug_of_bit = {bit: slug for slug, bit in categories}
    scale = study.empathy_scale
    header = export_header(study=study, options=options)
    described = DESCRIPTION_COLUMN in header
    gates = (
        gate_labels(study=study, options=options, instrument=Stage.Instrument.COHERENCE)
        if GATE_COLUMN in header
        else None
    )
    decided = gate_decision_times(study=study) if GATE_DECIDED_COLUMN in header else {}
    coded = primary_codes_by_judgement(study=study) if PRIMARY_CODES_COLUMN in header else None
    yield header
    contexts = published_contexts(study) if options.fmt == "published" else {}
    # One cell per category column of the header: the published format always has
    # its five category columns, empty where the study lacks that category.
    bits = dict(categories)
    annotator = annotator_cells(study=study, options=options) if options.fmt == "full" else None
    crowd_outcomes = _crowd_outcomes(study) if options.fmt == "full" else {}
    column_categories = (
        categories
        if options.fmt == "full"
        else [
            *((slug, bits.get(slug)) for slug in PUBLISHED_CATEGORY_COLUMNS),
            *((s, b) for s, b in categories if s not in PUBLISHED_CATEGORY_COLUMNS),
        ]
    )
    for row in _queryset(study=study, options=options).iterator(chunk_size=CHUNK_SIZE):
        (
            stage,
            position,
            batch_id,
            context_id,
            dialogue,
            reflection_id,
            source,
            kind,
            text,
            pseudonym,
            group,
            coherent,
            flags,
            mee_bit,
            empathy,
            description,
        ) = row[: len(_FIELDS)]
        tail = [text_cell(description)] if described else []
        if gates is not None:
            gate = [text_cell(gates.get(stage, ""))]
            if options.fmt == "full":
                gate.append(_iso(decided.get((stage, reflection_id))))
            tail = gate + tail
        chosen = [
            YES if bit is not None and category_selected(flags, bit) else ""
            for _, bit in column_categories
        ]
        answer = YES if coherent else NO
        mee = slug_of_bit.get(mee_bit, "") if mee_bit is not None else ""
        if options.fmt == "published":
            cells = [
                text_cell(dialogue),
                text_cell(stage),
                contexts[context_id],
                text_cell(source),
                text_cell(text),
                text_cell(pseudonym),
                answer,
                *chosen,
            ]
            if options.extended:
                cells += [text_cell(group), mee, str(empathy) if empathy else ""]
            yield cells + tail
            continue
        (
            generation,
            assignment_id,
            status,
            recurring,
            order,
            seconds,
            created,
            updated,
            assigned,
            submitted,
            attention,
            judgement_id,
        ) = row[len(_FIELDS) :]
        if coded is not None:
            tail.append(coded.get(judgement_id, ""))
        item_position = order.index(reflection_id) + 1 if reflection_id in order else ""
        yield [
            text_cell(study.slug),
            text_cell(stage),
            str(position),
            str(batch_id),
            text_cell(dialogue),
            str(reflection_id),
            text_cell(source),
            kind,
            json.dumps(generation, ensure_ascii=False, sort_keys=True) if generation else "",
            text_cell(text),
            text_cell(pseudonym),
            text_cell(group),
            str(assignment_id),
            status,
            YES if recurring else NO,
            str(item_position),
            answer,
            *chosen,
            mee,
            str(empathy) if empathy else "",
            scale.get(empathy, "") if empathy else "",
            "" if seconds is None else f"{seconds:g}",
            _iso(created),
            _iso(updated),
            _iso(assigned),
            _iso(submitted),
            "" if attention is None else (YES if attention else NO),
            crowd_outcomes.get((pseudonym, position), ""),
            *annotator(pseudonym),
            *tail,
        ]
