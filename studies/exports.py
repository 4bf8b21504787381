"""Annotation exports: the published format (BRIEF §6) and the full audit format, as
CSV or as an Excel workbook.

Rows are streamed: one query read through a server-side cursor
(``iterator(chunk_size=...)``) and written a chunk at a time, so memory stays flat
however many judgements a study holds; only the study's dialogue contexts are held
(as the JSON text the published format writes). ``ExportOptions.file`` is one of
``FILES``: ``csv`` (RFC 4180, ``\\r\\n``, UTF-8 without BOM; every text exactly as
stored, so import_annotations, pandas and R read it back cell for cell),
``csv-spreadsheet-safe`` (formula-like cells prefixed with an apostrophe:
``studies.datafiles.spreadsheet``) or ``xlsx`` (text cells only:
``studies.datafiles.xlsx``). Annotators appear only by pseudonym: no e-mail,
platform ids or link tokens.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from .datafiles.published.columns import (
    EMPATHY_COLUMN,
    GROUP_COLUMN,
    MOST_EVIDENT_COLUMN,
    NO,
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    YES,
)
from .datafiles.spreadsheet import cell_escape, cell_exact
from .datafiles.xlsx import ExcelLimitError, xlsx_write
from .models import Assignment, DialogueContext, ErrorCategory, Judgement, Reflection, Study
from .protocol import EMPATHY_SCALE, category_selected

FORMATS = ("published", "full")
# The kinds of file, and how the admin page and the API describe them.
FILES = {
    "csv": "CSV, every text exactly as stored (for pandas, R and re-import)",
    "csv-spreadsheet-safe": (
        "CSV for a spreadsheet: a text starting with =, +, - or @ gets a leading apostrophe"
    ),
    "xlsx": "Excel workbook (.xlsx): every cell is text, nothing is evaluated",
}
CHUNK_SIZE = 5000
ROWS_PER_WRITE = 500


@dataclass(frozen=True)
class ExportOptions:
    """What to export. Default: every stage, group and source, judgements of submitted
    assignments only (as analysed), attention-check items only in the full format.
    ``extended`` adds the optional columns of the published format (group, most
    evident error, empathy) so that an import reproduces every answer. ``file`` is
    one of ``FILES`` (see the module docstring)."""

    fmt: str = "published"
    stages: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    include_expired: bool = False
    include_rejected: bool = False
    extended: bool = False
    file: str = "csv"
    statuses: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self):
        statuses = Assignment.counted_statuses(
            include_expired=self.include_expired, include_rejected=self.include_rejected
        )
        object.__setattr__(self, "statuses", statuses)

    @property
    def spreadsheet_safe(self) -> bool:
        return self.file == "csv-spreadsheet-safe"


def _truthy(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise ValidationError("Use true or false.")


def export_options_clean(*, study: Study, data: Mapping) -> ExportOptions:
    """Validate export parameters (from a query string, a form or a command line):
    ``format``, ``file`` (one of ``FILES``, default csv), ``stage`` / ``group`` /
    ``source`` (lists of names that must exist in the study), ``include_expired``,
    ``include_rejected``, ``extended``. Raises ``ValidationError`` with a message per
    field."""

    def values(key) -> tuple[str, ...]:
        raw = data.getlist(key) if hasattr(data, "getlist") else data.get(key, ())
        if isinstance(raw, str):
            raw = [raw]
        return tuple(dict.fromkeys(v.strip() for v in raw if v and v.strip()))

    errors: dict[str, str] = {}
    fmt = (data.get("format") or "published").strip() if hasattr(data, "get") else "published"
    if fmt not in FORMATS:
        errors["format"] = f'Choose "published" or "full", not "{fmt}".'
    file = (data.get("file") or "csv").strip() if hasattr(data, "get") else "csv"
    if file not in FILES:
        choices = ", ".join(f'"{name}"' for name in FILES)
        errors["file"] = f'Choose {choices}, not "{file}".'
    known = {
        "stage": set(study.stages.values_list("name", flat=True)),
        "group": set(study.groups.values_list("name", flat=True)),
        "source": set(
            Reflection.objects.filter(context__study=study)
            .values_list("source", flat=True)
            .distinct()
        ),
    }
    chosen = {}
    for key, names in known.items():
        chosen[key] = values(key)
        unknown = [v for v in chosen[key] if v not in names]
        if unknown:
            errors[key] = f"Not a {key} of this study: {', '.join(unknown)}."
    flags = {}
    for key in ("include_expired", "include_rejected", "extended"):
        try:
            flags[key] = _truthy(data.get(key, False))
        except ValidationError as exc:
            errors[key] = exc.messages[0]
    if errors:
        raise ValidationError(errors)
    return ExportOptions(
        fmt=fmt,
        file=file,
        stages=chosen["stage"],
        groups=chosen["group"],
        sources=chosen["source"],
        **flags,
    )


def _categories(study: Study) -> list[tuple[str, int]]:
    """(slug, bit) in export column order: the published columns first (BRIEF §6
    order), then any other category of the study in display order."""
    rows = list(
        ErrorCategory.objects.filter(study=study)
        .order_by("order", "bit")
        .values_list("slug", "bit")
    )
    by_slug = dict(rows)
    published = [(slug, by_slug[slug]) for slug in PUBLISHED_CATEGORY_COLUMNS if slug in by_slug]
    others = [(slug, bit) for slug, bit in rows if slug not in PUBLISHED_CATEGORY_COLUMNS]
    return published + others


FULL_COLUMNS_HEAD = (
    "study",
    "stage",
    "stage_position",
    "batch_id",
    "annomi_dialogue_id",
    "reflection_id",
    "reflection_source",
    "reflection_kind",
    "generation",
    "reflection",
    "annotator",
    "annotator_group",
    "assignment_id",
    "assignment_status",
    "is_recurring",
    "item_position",
    "coherent_and_context_consistent",
)
FULL_COLUMNS_TAIL = (
    "most_evident_error",
    "empathy",
    "empathy_label",
    "seconds_spent",
    "judged_at",
    "revised_at",
    "assigned_at",
    "submitted_at",
    "attention_check_passed",
)


def export_header(*, study: Study, options: ExportOptions) -> list[str]:
    slugs = [slug for slug, _ in _categories(study)]
    if options.fmt == "full":
        return [*FULL_COLUMNS_HEAD, *slugs, *FULL_COLUMNS_TAIL]
    extra = [s for s in slugs if s not in PUBLISHED_CATEGORY_COLUMNS]
    header = [*PUBLISHED_COLUMNS, *extra]
    if options.extended:
        header += [GROUP_COLUMN, MOST_EVIDENT_COLUMN, EMPATHY_COLUMN]
    return header


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
)


def _queryset(*, study: Study, options: ExportOptions):
    qs = Judgement.objects.filter(
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
    fields = _FIELDS + (_FULL_FIELDS if options.fmt == "full" else ())
    return qs.order_by(
        "assignment__stage__position",
        "assignment__batch__context__external_id",
        "assignment__group__name",
        "assignment__annotator__number",
        "reflection_id",
    ).values_list(*fields)


def _iso(value) -> str:
    return value.isoformat().replace("+00:00", "Z") if value is not None else ""


def export_rows(*, study: Study, options: ExportOptions) -> Iterator[list[str]]:
    """The header, then one list of cells per judgement, streamed from the database.
    Texts are exact, or escaped for a spreadsheet when ``options.spreadsheet_safe``."""
    text_cell = cell_escape if options.spreadsheet_safe else cell_exact
    categories = _categories(study)
    slug_of_bit = {bit: slug for slug, bit in categories}
    yield export_header(study=study, options=options)
    contexts: dict[int, str] = {}
    if options.fmt == "published":
        contexts = {
            pk: json.dumps([{t["role"]: t["text"]} for t in turns], ensure_ascii=False)
            for pk, turns in DialogueContext.objects.filter(study=study).values_list("id", "turns")
        }
    # One cell per category column of the header: the published format always has
    # the five columns of BRIEF §6, empty where the study lacks that category.
    bits = dict(categories)
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
        ) = row[: len(_FIELDS)]
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
            yield cells
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
        ) = row[len(_FIELDS) :]
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
            EMPATHY_SCALE.get(empathy, "") if empathy else "",
            "" if seconds is None else f"{seconds:g}",
            _iso(created),
            _iso(updated),
            _iso(assigned),
            _iso(submitted),
            "" if attention is None else (YES if attention else NO),
        ]


class _Line:
    """A write-only file for csv.writer that hands back what was written."""

    def write(self, value: str) -> str:
        return value


def export_csv_chunks(*, study: Study, options: ExportOptions) -> Iterator[str]:
    """The CSV text in chunks of a few hundred rows (for a streaming response or a file)."""
    writer = csv.writer(_Line(), lineterminator="\r\n")
    buffer: list[str] = []
    for cells in export_rows(study=study, options=options):
        buffer.append(writer.writerow(cells))
        if len(buffer) >= ROWS_PER_WRITE:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)


def export_xlsx_write(*, study: Study, options: ExportOptions, target) -> None:
    """Write the rows as an Excel workbook to ``target`` (a path or a binary file),
    in constant memory. Raises ValidationError (on ``file``) when the export does not
    fit in a worksheet; ``target`` then holds no usable workbook."""
    try:
        xlsx_write(
            rows=export_rows(study=study, options=options), target=target, sheet_name="annotations"
        )
    except ExcelLimitError as exc:
        raise ValidationError({"file": f"{exc}."}) from None


def export_filename(*, study: Study, options: ExportOptions) -> str:
    suffix = "" if options.fmt == "published" else "-full"
    extension = "xlsx" if options.file == "xlsx" else "csv"
    return f"{study.slug}-annotations{suffix}.{extension}"
