"""The published annotation format (BRIEF §6) and its import into a new, closed study.

The format is a flat CSV, one row per (reflection, annotator), with the columns of
``PUBLISHED_COLUMNS``; ``annotator_group``, ``most_evident_error`` and ``empathy`` are
optional (``PUBLISHED_OPTIONAL_COLUMNS``) and let a richer export round-trip. Any other
column (a pandas index, notes) is ignored and reported. An export of the same format
imports the constants below.

``annotations_import`` rebuilds a study from such a file: stages in order of first
appearance (no waiting period), one context per dialogue id, one reflection per
(dialogue, source, text), one batch per (stage, dialogue) holding the reflections
judged there (the human one first), one submitted assignment per (annotator, stage,
dialogue) and one judgement per row. The study's k and m are the largest numbers of
annotators per batch and group and of batches per annotator and stage in the file, so
the database's slot rules hold. An assignment is recurring when its annotator judged
the dialogue's human reflection in an earlier stage (BRIEF §5, recurrence-free view).

Rules (the README's "Importing published annotations" says the same):

* Cells are read without their surrounding whitespace, except ``reflection`` and the
  turn texts of ``dialogue_context``, which are kept exactly. ``Yes`` and ``No`` are
  case-sensitive, as the format writes them. Blank rows are skipped (but counted).
* ``annotator`` must be ``<prefix> <number>`` (``Expert 4``; the number without
  leading zeros), also when ``annotator_group`` names the group: the pseudonym is
  stored exactly and its number becomes the annotator number. Without that column the
  group is the prefix; with it (an empty cell also means the prefix), all annotators
  of a group must share one prefix and two groups cannot share one, since a group
  names its annotators "<prefix> <number>".
* ``dialogue_context`` must be given on at least one row of each dialogue, and every
  row that gives it must give the same turns; the published one-key shape and the
  ``{"role", "text"}`` shape are both accepted (``importers.parse_turns``).
* A No row may select no category (published data can lack it). Without a
  ``most_evident_error`` cell, a single selected category is the most evident error,
  and several leave it empty. ``empathy`` is 1-5 (``4.0`` as pandas writes it is
  accepted), only on Yes rows.
* Imported annotators get access tokens like any annotator but are inactive (their
  links do not open: they are records of published work, not invitations) and have no
  consent record (the data was collected elsewhere; no database rule needs one).
  Assignments are stamped with the import time; their reflection order follows the
  same seeded recipe as ``assignment_shuffled_order``, since the shown order is not
  in the file.

All-or-nothing like the materials import: every problem is collected with its row
(the header is row 1) and column, and only a clean file is written, in one
transaction, with bulk inserts.
"""

import csv
import io
import operator
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..importers import (
    ID_MAX_LENGTH,
    SOURCE_MAX_LENGTH,
    ImportIssue,
    _InvalidJSON,
    _json_loads,
    _storable,
    parse_turns,
)
from ..models import (
    PREFIX_REGEX,
    STUDY_SLUG_REGEX,
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    BatchItem,
    DialogueContext,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from ..protocol import HUMAN_SOURCE, shuffled_order
from ..services import (
    Answer,
    EncodedAnswer,
    answer_encode,
    study_category_bits,
    study_create,
)
from .format import (
    ANNOTATOR_COLUMN,
    COHERENT_COLUMN,
    CONTEXT_COLUMN,
    DIALOGUE_ID_COLUMN,
    EMPATHY_COLUMN,
    GROUP_COLUMN,
    MOST_EVIDENT_COLUMN,
    NO,
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    PUBLISHED_OPTIONAL_COLUMNS,
    REFLECTION_COLUMN,
    SOURCE_COLUMN,
    STAGE_COLUMN,
    YES,
    cell_unescape,
)

MAX_REPORTED_ISSUES = 50
STAGE_MAX_LENGTH = Stage._meta.get_field("name").max_length
GROUP_MAX_LENGTH = AnnotatorGroup._meta.get_field("name").max_length
PREFIX_MAX_LENGTH = AnnotatorGroup._meta.get_field("pseudonym_prefix").max_length
PSEUDONYM_MAX_LENGTH = Annotator._meta.get_field("pseudonym").max_length
TITLE_MAX_LENGTH = Study._meta.get_field("title").max_length
SLUG_MAX_LENGTH = Study._meta.get_field("slug").max_length
SMALLINT_MAX = 32767  # k, m, slots and batch positions are PositiveSmallIntegerFields
INTEGER_MAX = 2**31 - 1  # annotator numbers
BULK_BATCH_SIZE = 5000

_PSEUDONYM = re.compile(r"(.+) ([1-9][0-9]*)")
_EMPATHY = re.compile(r"([1-5])(?:\.0*)?")


class AnnotationsImportError(Exception):
    """Every problem found (the first ``MAX_REPORTED_ISSUES``) and how many in all."""

    def __init__(self, issues: list[ImportIssue], total: int | None = None):
        self.issues = issues
        self.total = len(issues) if total is None else total
        lines = [str(i) for i in issues]
        if self.total > len(issues):
            lines.append(f"... and {self.total - len(issues)} more")
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class AnnotationsImportSummary:
    study_slug: str
    stages: int
    groups: int
    annotators: int
    contexts: int
    reflections: int
    batches: int
    assignments: int
    judgements: int
    overlap_k: int
    batches_per_stage: int
    ignored_columns: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = (
            f'Created the closed study "{self.study_slug}": {self.stages} stages, '
            f"{self.groups} groups, {self.annotators} annotators, {self.contexts} contexts, "
            f"{self.reflections} reflections, {self.batches} batches, "
            f"{self.assignments} assignments, {self.judgements} judgements "
            f"(k = {self.overlap_k}, m = {self.batches_per_stage})."
        )
        if self.ignored_columns:
            text += f" Ignored columns: {', '.join(self.ignored_columns)}."
        return text


class _Issues:
    def __init__(self):
        self.shown: list[ImportIssue] = []
        self.total = 0

    def add(self, where: str, message: str) -> None:
        self.total += 1
        if len(self.shown) < MAX_REPORTED_ISSUES:
            self.shown.append(ImportIssue(where, message))

    def raise_if_any(self) -> None:
        if self.total:
            raise AnnotationsImportError(self.shown, self.total)


def _at(row: int, column: str) -> str:
    return f"row {row}, column '{column}'"


# --- reading ---------------------------------------------------------------------------


class _Row(NamedTuple):
    number: int
    stage: str
    dialogue: str
    source: str
    text: str
    pseudonym: str
    coherent: bool
    categories: frozenset[str]
    most_evident: str | None
    empathy: int | None


@dataclass
class _Context:
    first_row: int
    raw: str | None = None  # the first dialogue_context cell that parsed, verbatim
    turns: list | None = None
    turns_row: int = 0
    invalid: bool = False
    human: tuple[str, int] | None = None  # (text, row)


@dataclass
class _Parsed:
    ignored_columns: tuple[str, ...]
    rows: list[_Row]
    stages: dict[str, None]  # in order of first appearance
    contexts: dict[str, _Context]
    annotators: dict[str, tuple[str, int, str]]  # pseudonym -> (group, number, prefix)
    groups: dict[str, str]  # group -> pseudonym prefix
    batches: dict[tuple[str, str], dict[str, str]]  # (stage, dialogue) -> {text: source}


def _open(path_or_file):
    """A text stream with universal-newline handling left to csv; UTF-8, BOM dropped.
    Also returns a way to re-read the bytes to locate a decoding error."""
    if isinstance(path_or_file, (str, os.PathLike)):
        path = path_or_file
        return open(path, encoding="utf-8-sig", newline=""), lambda: open(path, "rb")
    data = path_or_file.read()
    if isinstance(data, str):
        return io.StringIO(data.removeprefix("\ufeff"), newline=""), None
    return (
        io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=""),
        lambda: io.BytesIO(data),
    )


def _first_bad_byte(reopen) -> int | None:
    """Offset of the first byte that is not UTF-8 (the error path only)."""
    with reopen() as binary:
        offset, pending = 0, b""
        while chunk := binary.read(1 << 20):
            data = pending + chunk
            try:
                data.decode("utf-8")
                offset, pending = offset + len(data), b""
            except UnicodeDecodeError as exc:
                if exc.end == len(data) and exc.reason == "unexpected end of data":
                    offset, pending = offset + exc.start, data[exc.start :]
                else:
                    return offset + exc.start
        return offset if pending else None


class _Records:
    """(row number, cells) for every CSV record; stops with an issue on input that is
    not UTF-8 or not CSV, and then says so in ``stopped``."""

    def __init__(self, stream, reopen, issues: _Issues):
        self.reader = csv.reader(stream)
        self.reopen = reopen
        self.issues = issues
        self.stopped = False

    def __iter__(self):
        number = 0
        try:
            for number, cells in enumerate(self.reader, start=1):
                yield number, cells
        except UnicodeDecodeError:
            offset = _first_bad_byte(self.reopen) if self.reopen else None
            where = f"byte {offset}" if offset is not None else f"after row {number}"
            self.issues.add("file", f"not UTF-8 text ({where}): save it as UTF-8")
            self.stopped = True
        except csv.Error as exc:
            self.issues.add(f"row {number + 1}", f"unreadable CSV: {exc}")
            self.stopped = True


def _header(cells: list[str], issues: _Issues) -> tuple[dict[str, int], tuple[str, ...]]:
    """Column positions of the known columns, and the names of the ignored ones."""
    names = [c.strip() for c in cells]
    known = set(PUBLISHED_COLUMNS) | set(PUBLISHED_OPTIONAL_COLUMNS)
    missing = [c for c in PUBLISHED_COLUMNS if c not in names]
    if missing:
        issues.add("header", f"missing column(s): {', '.join(missing)}")
    for name in sorted(known):
        if names.count(name) > 1:
            issues.add("header", f"column '{name}' appears {names.count(name)} times")
    positions = {name: i for i, name in enumerate(names) if name in known}
    ignored = tuple(
        f"'{name}'" if name else f"(unnamed column {i})"
        for i, name in enumerate(names, start=1)
        if name not in known
    )
    return positions, ignored


def _pseudonym_parts(value: str) -> tuple[str, int] | None:
    match = _PSEUDONYM.fullmatch(value)
    if match is None or not re.fullmatch(PREFIX_REGEX, match.group(1)):
        return None
    number = int(match.group(2)) if len(match.group(2)) <= 10 else INTEGER_MAX + 1
    return match.group(1), number


def _most_evident_problem(value: str, answer: str, selected: set[str]) -> str | None:
    if answer == YES:
        return f"a most evident error is only given when {COHERENT_COLUMN} is {NO}"
    if value not in PUBLISHED_CATEGORY_COLUMNS:
        return (
            f"unknown category {value!r} (expected one of {', '.join(PUBLISHED_CATEGORY_COLUMNS)})"
        )
    if value not in selected:
        return f"{value!r} is not among the categories selected on this row"
    return None


class _Parser:
    """One pass over the records: checks each row, and across rows what must agree
    (a dialogue's context and human reflection, an annotator's group, a group's
    prefix, an item's source, one judgement per item and annotator)."""

    # The cells a row is read into, in this order (an absent optional column reads "").
    COLUMNS = (*PUBLISHED_COLUMNS, *PUBLISHED_OPTIONAL_COLUMNS)

    def __init__(self, positions: dict[str, int], width: int, issues: _Issues):
        self.positions = positions
        self.width = width
        # Rows are padded to width + 1 cells: the last one stands for absent columns.
        self.cells = operator.itemgetter(*(positions.get(c, width) for c in self.COLUMNS))
        self.issues = issues
        self.parsed = _Parsed((), [], {}, {}, {}, {}, {})
        self.annotator_rows: dict[str, int] = {}
        self.group_rows: dict[str, int] = {}
        self.prefix_groups: dict[str, tuple[str, int]] = {}  # prefix -> (group, row)
        self.item_rows: dict[tuple[str, str, str], int] = {}
        self.judged: dict[tuple[str, str, str, str], int] = {}
        self.category_sets: dict[frozenset, frozenset] = {}

    def add(self, n: int, column: str, message: str) -> None:
        self.issues.add(_at(n, column), message)

    def required(self, n: int, column: str, value: str, what: str, max_length: int):
        value = value.strip()
        problem = f"empty {what}" if not value else _storable(value, max_length)
        if problem:
            self.add(n, column, problem)
            return None
        return value

    def row(self, n: int, cells: list[str]) -> None:
        if not any(c.strip() for c in cells):
            return
        cells = [cell_unescape(c) for c in cells]
        if len(cells) > self.width:
            self.issues.add(
                f"row {n}", f"{len(cells)} cells but the header has {self.width} columns"
            )
            return
        before = self.issues.total
        (
            dialogue,
            stage,
            context,
            source,
            text,
            pseudonym,
            answer,
            *categories,
            group,
            most_evident,
            empathy,
        ) = self.cells(cells + [""] * (self.width + 1 - len(cells)))
        dialogue = self.required(n, DIALOGUE_ID_COLUMN, dialogue, "dialogue id", ID_MAX_LENGTH)
        stage = self.required(n, STAGE_COLUMN, stage, "stage", STAGE_MAX_LENGTH)
        source = self.required(n, SOURCE_COLUMN, source, "source", SOURCE_MAX_LENGTH)
        pseudonym = self.required(n, ANNOTATOR_COLUMN, pseudonym, "annotator", PSEUDONYM_MAX_LENGTH)
        # The reflection is kept exactly.
        problem = "empty reflection" if not text.strip() else _storable(text)
        if problem:
            self.add(n, REFLECTION_COLUMN, problem)
            text = None
        coherent, categories, most_evident, empathy = self.answer(
            n, answer.strip(), categories, most_evident.strip() or None, empathy.strip()
        )
        if dialogue is not None:
            self.context(n, dialogue, context.strip())
            if source == HUMAN_SOURCE and text is not None:
                self.human(n, dialogue, text)
        if pseudonym is not None:
            self.annotator(n, pseudonym, group.strip())
        if stage is not None:
            self.parsed.stages.setdefault(stage)
        if None not in (dialogue, stage, source, text):
            self.item(n, stage, dialogue, source, text, pseudonym)
        if self.issues.total == before:
            self.parsed.rows.append(
                _Row(
                    n,
                    stage,
                    dialogue,
                    source,
                    text,
                    pseudonym,
                    coherent,
                    categories,
                    most_evident,
                    empathy,
                )
            )

    def answer(
        self, n: int, answer: str, cells: list[str], most_evident: str | None, empathy: str
    ) -> tuple[bool, frozenset[str], str | None, int | None]:
        if answer not in (YES, NO):
            self.add(n, COHERENT_COLUMN, f"expected {YES} or {NO}, not {answer!r}")
        selected = set()
        for column, value in zip(PUBLISHED_CATEGORY_COLUMNS, cells, strict=True):
            value = value.strip()
            if value == YES:
                selected.add(column)
                if answer == YES:
                    self.add(
                        n, column, f"a category can only be {YES} when {COHERENT_COLUMN} is {NO}"
                    )
            elif value:
                self.add(n, column, f"expected {YES} or empty, not {value!r}")
        if most_evident is not None and (
            problem := _most_evident_problem(most_evident, answer, selected)
        ):
            self.add(n, MOST_EVIDENT_COLUMN, problem)
        rating = None
        if empathy:
            match = _EMPATHY.fullmatch(empathy)
            if match is None:
                self.add(n, EMPATHY_COLUMN, f"expected a whole number from 1 to 5, not {empathy!r}")
            elif answer == NO:
                self.add(
                    n,
                    EMPATHY_COLUMN,
                    f"the 1-5 rating is only given when {COHERENT_COLUMN} is {YES}",
                )
            else:
                rating = int(match.group(1))
        categories = frozenset(selected)
        return (
            answer == YES,
            self.category_sets.setdefault(categories, categories),
            most_evident,
            rating,
        )

    def context(self, n: int, dialogue: str, raw: str) -> None:
        context = self.parsed.contexts.get(dialogue)
        if context is None:
            context = self.parsed.contexts[dialogue] = _Context(first_row=n)
        if not raw or raw == context.raw:  # most rows repeat the cell: parse it once
            return
        try:
            turns, error = parse_turns(_json_loads(raw))
        except _InvalidJSON as exc:
            turns, error = None, f"invalid JSON: {exc.message}"
        if error:
            context.invalid = True
            self.add(n, CONTEXT_COLUMN, error)
        elif context.turns is None:
            context.raw, context.turns, context.turns_row = raw, turns, n
        elif turns != context.turns:
            self.add(
                n,
                CONTEXT_COLUMN,
                f'differs from the dialogue_context of dialogue "{dialogue}" in row '
                f"{context.turns_row}: a study stores one context per dialogue id",
            )

    def human(self, n: int, dialogue: str, text: str) -> None:
        context = self.parsed.contexts[dialogue]
        if context.human is None:
            context.human = (text, n)
        elif context.human[0] != text:
            self.add(
                n,
                REFLECTION_COLUMN,
                f'a second, different human reflection for dialogue "{dialogue}" '
                f"(row {context.human[1]} has another); a dialogue has one",
            )

    def annotator(self, n: int, pseudonym: str, group: str) -> None:
        known = self.parsed.annotators.get(pseudonym)
        if known is not None:
            group = group or known[2]
            if known[0] != group:
                self.add(
                    n,
                    GROUP_COLUMN,
                    f'annotator "{pseudonym}" is in group "{group}" here but in group '
                    f'"{known[0]}" in row {self.annotator_rows[pseudonym]}; an annotator '
                    "belongs to one group",
                )
            return
        parts = _pseudonym_parts(pseudonym)
        has_group = GROUP_COLUMN in self.positions
        if parts is None:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f'{pseudonym!r} is not "<name> <number>" like "Expert 4" (a number from 1 '
                "without leading zeros, after one space); "
                + (
                    "pseudonyms keep this shape when annotator_group names the group"
                    if has_group
                    else "the group is the name without the number"
                ),
            )
            return
        prefix, number = parts
        if number > INTEGER_MAX:
            self.add(n, ANNOTATOR_COLUMN, f"annotator number too large: {pseudonym!r}")
            return
        if len(prefix) > PREFIX_MAX_LENGTH:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f"the name before the number is longer than {PREFIX_MAX_LENGTH} characters",
            )
            return
        if group and (problem := _storable(group, GROUP_MAX_LENGTH)):
            self.add(n, GROUP_COLUMN, problem)
            return
        group = group or prefix
        group_prefix = self.parsed.groups.get(group)
        owner = self.prefix_groups.get(prefix)
        if group_prefix is not None and group_prefix != prefix:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f'group "{group}" names its annotators "{group_prefix} <number>" '
                f'(row {self.group_rows[group]}), not "{prefix} <number>": a group\'s '
                "pseudonyms share one prefix",
            )
        elif owner is not None and owner[0] != group:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f'the prefix "{prefix}" already names annotators of group '
                f'"{owner[0]}" (row {owner[1]}); two groups cannot share a prefix',
            )
        else:
            self.parsed.annotators[pseudonym] = (group, number, prefix)
            self.annotator_rows[pseudonym] = n
            if group not in self.parsed.groups:
                self.parsed.groups[group] = prefix
                self.group_rows[group] = n
                self.prefix_groups[prefix] = (group, n)

    def item(
        self, n: int, stage: str, dialogue: str, source: str, text: str, pseudonym: str | None
    ) -> None:
        known_source = self.parsed.batches.setdefault((stage, dialogue), {}).setdefault(
            text, source
        )
        key = (stage, dialogue, text)
        first_row = self.item_rows.setdefault(key, n)
        if known_source != source:
            self.add(
                n,
                SOURCE_COLUMN,
                f'the same reflection has the source "{known_source}" in row {first_row}: '
                "within a stage and dialogue a reflection is identified by its text",
            )
        elif pseudonym is not None:
            first_row = self.judged.setdefault((*key, pseudonym), n)
            if first_row != n:
                self.issues.add(
                    f"row {n}",
                    f"duplicate of row {first_row}: the same stage, dialogue, reflection "
                    "and annotator",
                )


def _parse(stream, reopen, issues: _Issues) -> _Parsed | None:
    reader = _Records(stream, reopen, issues)
    records = iter(reader)
    first = next(records, None)
    if first is None:
        if not issues.total:
            issues.add("file", "is empty: expected a header row and one row per judgement")
        return None
    positions, ignored = _header(first[1], issues)
    if issues.total:
        return None
    parser = _Parser(positions, len(first[1]), issues)
    parser.parsed.ignored_columns = ignored
    for n, cells in records:
        parser.row(n, cells)
    parsed = parser.parsed
    if reader.stopped:
        return parsed
    for dialogue, context in parsed.contexts.items():
        if context.turns is None and not context.invalid:
            issues.add(
                f'dialogue "{dialogue}" (first in row {context.first_row})',
                f"no row gives its {CONTEXT_COLUMN}",
            )
    if not parsed.contexts and not issues.total:
        issues.add("file", "has a header but no rows")
    return parsed


# --- planning ----------------------------------------------------------------------------


@dataclass
class _Assignment:
    pseudonym: str
    stage: str
    dialogue: str
    group_slot: int
    annotator_slot: int
    is_recurring: bool
    rows: list[_Row]


def _plan(parsed: _Parsed, issues: _Issues) -> list[_Assignment]:
    """Assignments with their slots and recurrence, in order of first appearance."""
    positions = {name: i for i, name in enumerate(parsed.stages, start=1)}
    by_key: dict[tuple[str, str, str], list[_Row]] = {}
    for row in parsed.rows:
        by_key.setdefault((row.pseudonym, row.stage, row.dialogue), []).append(row)
    human_stages: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in parsed.rows:
        if row.source == HUMAN_SOURCE:
            human_stages[row.pseudonym, row.dialogue].add(positions[row.stage])
    group_slots: dict[tuple[str, str, str], int] = defaultdict(int)
    annotator_slots: dict[tuple[str, str], int] = defaultdict(int)
    plan = []
    for (pseudonym, stage, dialogue), rows in by_key.items():
        group = parsed.annotators[pseudonym][0]
        group_slots[stage, dialogue, group] += 1
        annotator_slots[pseudonym, stage] += 1
        plan.append(
            _Assignment(
                pseudonym,
                stage,
                dialogue,
                group_slots[stage, dialogue, group],
                annotator_slots[pseudonym, stage],
                any(p < positions[stage] for p in human_stages.get((pseudonym, dialogue), ())),
                rows,
            )
        )
    limits = (
        ("annotators of one group on one stage's dialogue", max(group_slots.values(), default=0)),
        ("dialogues for one annotator in one stage", max(annotator_slots.values(), default=0)),
        ("reflections in one stage's dialogue", max(map(len, parsed.batches.values()), default=0)),
    )
    for what, count in limits:
        if count > SMALLINT_MAX:
            issues.add("file", f"{count} {what}: at most {SMALLINT_MAX} can be stored")
    return plan


# --- writing -----------------------------------------------------------------------------


def _write(study: Study, parsed: _Parsed, plan: list[_Assignment]) -> dict[str, int]:
    bulk = {"batch_size": BULK_BATCH_SIZE}
    stages = {
        name: (pk, position)
        for name, pk, position in study.stages.values_list("name", "id", "position")
    }
    bits = study_category_bits(study_id=study.pk)
    groups = AnnotatorGroup.objects.bulk_create(
        [
            AnnotatorGroup(study=study, name=name, pseudonym_prefix=prefix)
            for name, prefix in parsed.groups.items()
        ]
    )
    group_ids = {g.name: g.pk for g in groups}
    annotators = Annotator.objects.bulk_create(
        [
            Annotator(
                study=study,
                group_id=group_ids[group],
                number=number,
                pseudonym=pseudonym,
                is_active=False,
            )
            for pseudonym, (group, number, _prefix) in parsed.annotators.items()
        ],
        **bulk,
    )
    annotator_rows = {a.pseudonym: (a.pk, a.group_id) for a in annotators}
    contexts = DialogueContext.objects.bulk_create(
        [
            DialogueContext(study=study, external_id=dialogue, turns=c.turns)
            for dialogue, c in parsed.contexts.items()
        ],
        **bulk,
    )
    context_ids = {c.external_id: c.pk for c in contexts}
    reflection_keys = list(
        dict.fromkeys(
            (dialogue, source, text)
            for (_stage, dialogue), items in parsed.batches.items()
            for text, source in items.items()
        )
    )
    reflections = Reflection.objects.bulk_create(
        [
            Reflection(
                context_id=context_ids[dialogue],
                source=source,
                text=text,
                kind=Reflection.Kind.HUMAN if source == HUMAN_SOURCE else Reflection.Kind.SYNTHETIC,
            )
            for dialogue, source, text in reflection_keys
        ],
        **bulk,
    )
    reflection_ids = {key: r.pk for key, r in zip(reflection_keys, reflections, strict=True)}
    batches = Batch.objects.bulk_create(
        [
            Batch(stage_id=stages[stage][0], context_id=context_ids[dialogue])
            for stage, dialogue in parsed.batches
        ],
        **bulk,
    )
    batch_ids = {key: b.pk for key, b in zip(parsed.batches, batches, strict=True)}
    items, batch_order = [], {}
    for (stage, dialogue), texts in parsed.batches.items():
        # The human reflection first, as the materials import orders a batch.
        ordered = sorted(texts.items(), key=lambda item: item[1] != HUMAN_SOURCE)
        ids = [reflection_ids[dialogue, source, text] for text, source in ordered]
        batch_order[stage, dialogue] = ids
        items += [
            BatchItem(batch_id=batch_ids[stage, dialogue], reflection_id=rid, position=pos)
            for pos, rid in enumerate(ids, start=1)
        ]
    BatchItem.objects.bulk_create(items, **bulk)
    now = timezone.now()
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                annotator_id=annotator_rows[a.pseudonym][0],
                batch_id=batch_ids[a.stage, a.dialogue],
                group_id=annotator_rows[a.pseudonym][1],
                stage_id=stages[a.stage][0],
                group_slot=a.group_slot,
                annotator_slot=a.annotator_slot,
                order=shuffled_order(
                    batch_order[a.stage, a.dialogue],
                    seed=study.seed,
                    pseudonym=a.pseudonym,
                    stage_position=stages[a.stage][1],
                    dialogue=a.dialogue,
                ),
                status=Assignment.Status.SUBMITTED,
                is_recurring=a.is_recurring,
                assigned_at=now,
                expires_at=now + study.batch_time_limit,
                submitted_at=now,
            )
            for a in plan
        ],
        **bulk,
    )
    judgements = []
    encoded_answers: dict[tuple, EncodedAnswer] = {}  # few distinct answers: encode each once
    for assignment, planned in zip(assignments, plan, strict=True):
        for row in planned.rows:
            answer = (row.coherent, row.categories, row.most_evident, row.empathy)
            encoded = encoded_answers.get(answer)
            if encoded is None:
                encoded = encoded_answers[answer] = answer_encode(
                    answer=Answer(*answer), categories=bits, require_complete=False
                )
            judgements.append(
                Judgement(
                    assignment_id=assignment.pk,
                    reflection_id=reflection_ids[row.dialogue, row.source, row.text],
                    coherent=encoded.coherent,
                    error_flags=encoded.error_flags,
                    most_evident_bit=encoded.most_evident_bit,
                    empathy=encoded.empathy,
                )
            )
    Judgement.objects.bulk_create(judgements, **bulk)
    return {
        "groups": len(groups),
        "annotators": len(annotators),
        "contexts": len(contexts),
        "reflections": len(reflections),
        "batches": len(batches),
        "assignments": len(assignments),
        "judgements": len(judgements),
    }


def _study_problem(slug: str, title: str) -> ImportIssue | None:
    if not re.fullmatch(STUDY_SLUG_REGEX, slug) or len(slug) > SLUG_MAX_LENGTH:
        return ImportIssue(
            "study",
            f"{slug!r} is not a valid slug: lower-case letters, digits, - and _, starting with "
            f"a letter or digit, at most {SLUG_MAX_LENGTH} characters",
        )
    if not title.strip() or len(title) > TITLE_MAX_LENGTH:
        return ImportIssue("study", f"the title must have 1 to {TITLE_MAX_LENGTH} characters")
    if Study.objects.filter(slug=slug).exists():
        return ImportIssue(
            "study", f'a study with the slug "{slug}" already exists; the import creates a new one'
        )
    return None


def annotations_import(
    *, path_or_file, study_slug: str, title: str | None = None
) -> AnnotationsImportSummary:
    """Create the closed study ``study_slug`` from a published annotation CSV (a path,
    or a file object in binary or text mode); see the module docstring.

    Raises AnnotationsImportError listing every problem; then nothing is written. A
    taken slug is refused before the file is read.
    """
    title = study_slug if title is None else title
    if problem := _study_problem(study_slug, title):
        raise AnnotationsImportError([problem])
    issues = _Issues()
    stream, reopen = _open(path_or_file)
    with stream:
        parsed = _parse(stream, reopen, issues)
    issues.raise_if_any()
    plan = _plan(parsed, issues)
    issues.raise_if_any()
    overlap_k = max(a.group_slot for a in plan)
    batches_per_stage = max(a.annotator_slot for a in plan)
    with transaction.atomic():
        try:
            study = study_create(  # its own savepoint: a refusal leaves nothing behind
                slug=study_slug,
                title=title,
                stages=[(name, timedelta(0)) for name in parsed.stages],
                status=Study.Status.CLOSED,
                overlap_k=overlap_k,
                batches_per_stage=batches_per_stage,
            )
        except ValidationError as exc:  # checked above; only a concurrent import gets here
            raise AnnotationsImportError([ImportIssue("study", m) for m in exc.messages]) from None
        except IntegrityError:
            raise AnnotationsImportError(
                [ImportIssue("study", f'a study with the slug "{study_slug}" was just created')]
            ) from None
        counts = _write(study, parsed, plan)
    return AnnotationsImportSummary(
        study_slug=study.slug,
        stages=len(parsed.stages),
        overlap_k=overlap_k,
        batches_per_stage=batches_per_stage,
        ignored_columns=parsed.ignored_columns,
        **counts,
    )


__all__ = [
    "COHERENT_COLUMN",
    "EMPATHY_COLUMN",
    "GROUP_COLUMN",
    "MOST_EVIDENT_COLUMN",
    "NO",
    "PUBLISHED_CATEGORY_COLUMNS",
    "PUBLISHED_COLUMNS",
    "PUBLISHED_OPTIONAL_COLUMNS",
    "YES",
    "AnnotationsImportError",
    "AnnotationsImportSummary",
    "annotations_import",
]
