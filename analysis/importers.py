"""Import of automatic-evaluator scores (BRIEF §5, "Automatic evaluators").

A CSV file, UTF-8 with or without a byte-order mark, one row per score, with the
columns ``stage``, ``annomi_dialogue_id``, ``reflection``, ``evaluator`` and ``score``
(in any order; other columns are ignored and named in the summary). A row names an
item the way published data does (BRIEF §6): the stage by its name, the context by its
dialogue id, the reflection by its text, which must be one of the items of that stage's
batch for that context. Texts, like everything the materials import stores, are
compared after trimming surrounding spaces. Attention-check items are refused: they
are never analysed.

The import follows ``studies.importers``: all-or-nothing, every problem reported with
its row (the header is row 1), nothing written unless the whole file is clean, one
transaction. A score already stored for the same (stage, reflection, evaluator) is
replaced, so importing a corrected file updates its values and importing the same file
again changes nothing. Scores the file does not mention are left alone.

The study's stages, contexts, reflections and batch items are read once, so the number
of queries does not grow with the file.
"""

import csv
import io
import math
import re
from dataclasses import dataclass
from typing import IO

from django.db import transaction
from django.utils import timezone

from studies.importers import ImportIssue, ImportIssuesError
from studies.models import BatchItem, DialogueContext, Reflection, Stage, Study
from studies.published import cell_unescape

from .models import AutomaticScore

COLUMNS = ("stage", "annomi_dialogue_id", "reflection", "evaluator", "score")
EVALUATOR_MAX_LENGTH = AutomaticScore._meta.get_field("evaluator").max_length
WRITE_BATCH_SIZE = 1000

_EMPTY = {
    "stage": "empty stage",
    "annomi_dialogue_id": "empty dialogue id",
    "reflection": "empty text",
    "evaluator": "empty evaluator name",
    "score": "empty score",
}
_SURROGATE = re.compile("[\ud800-\udfff]")
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")
_ROW = re.compile(r"row (\d+)")


class AutomaticScoresImportError(ImportIssuesError):
    pass


@dataclass
class ScoresImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    ignored_columns: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated)

    def __str__(self) -> str:
        if self.changed:
            text = (
                f"{self.created} scores created, {self.updated} updated, "
                f"{self.unchanged} unchanged."
            )
        else:
            text = (
                f"Nothing to import: the study already holds exactly these {self.unchanged} scores."
            )
        if self.ignored_columns:
            text += f" Ignored columns: {', '.join(self.ignored_columns)}."
        return text


@dataclass
class _Row:
    number: int
    stage: str | None  # None: the cell had a problem, already reported
    dialogue_id: str | None
    text: str | None
    evaluator: str | None
    score: float | None


def _loc(number: int, column: str) -> str:
    return f"row {number}, column '{column}'"


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else f"{value[:40]}...")


def _text_problem(value: str, max_length: int | None = None) -> str | None:
    """Why the database cannot store (or never stored) ``value`` as text, or None."""
    if "\x00" in value:
        return "contains a NUL character"
    if match := _SURROGATE.search(value):
        return f"contains an unpaired surrogate (\\u{ord(match.group()):04x})"
    if max_length is not None and len(value) > max_length:
        return f"longer than {max_length} characters"
    return None


def _in_row_order(issues: list[ImportIssue]) -> list[ImportIssue]:
    """File-wide problems first, then by row; a row's own problems keep their order."""

    def row(issue: ImportIssue) -> int:
        match = _ROW.match(issue.where)
        return int(match.group(1)) if match else 0

    return sorted(issues, key=row)


def _parse_score(value: str) -> tuple[float | None, str | None]:
    try:
        score = float(value)
    except ValueError:
        hint = " (use a dot as the decimal separator)" if _DECIMAL_COMMA.fullmatch(value) else ""
        return None, f"not a number: {_shown(value)}{hint}"
    if not math.isfinite(score):
        return None, f"not a finite number: {_shown(value)}"
    return score, None


# --- parsing ---------------------------------------------------------------------------


def _decode(file: bytes | str | IO) -> str:
    content = file.read() if hasattr(file, "read") else file
    if isinstance(content, str):
        return content.removeprefix("\ufeff")
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AutomaticScoresImportError(
            [ImportIssue("file", f"not UTF-8 text (byte {exc.start}): save it as UTF-8")]
        ) from None


def _parse(text: str, issues: list[ImportIssue]) -> tuple[list[_Row], tuple[str, ...]]:
    """Rows of the file (problems in single cells appended to ``issues``) and the names
    of the ignored columns. Row numbers count every record, blank ones included, so
    they match a spreadsheet's."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        records = list(reader)
    except csv.Error as exc:
        issues.append(ImportIssue(f"line {reader.line_num}", f"unreadable CSV: {exc}"))
        return [], ()
    header_index = next(
        (i for i, record in enumerate(records) if any(c.strip() for c in record)), None
    )
    if header_index is None:
        issues.append(
            ImportIssue("file", f"is empty: expected a header row with {', '.join(COLUMNS)}")
        )
        return [], ()
    header = [name.strip() for name in records[header_index]]
    where = f"row {header_index + 1} (header)"
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        issues.append(ImportIssue(where, f"missing columns: {', '.join(missing)}"))
    twice = [c for c in COLUMNS if header.count(c) > 1]
    if twice:
        issues.append(ImportIssue(where, f"columns given more than once: {', '.join(twice)}"))
    if missing or twice:
        return [], ()
    ignored = tuple(
        name or f"column {n} (no name)" for n, name in enumerate(header, 1) if name not in COLUMNS
    )
    positions = {c: header.index(c) for c in COLUMNS}

    rows: list[_Row] = []
    first_seen: dict[tuple[str, str, str, str], int] = {}
    for number, record in enumerate(records[header_index + 1 :], start=header_index + 2):
        if not any(cell.strip() for cell in record):
            continue  # a blank line, or a spreadsheet's empty row
        if len(record) > len(header):
            issues.append(ImportIssue(f"row {number}", "more cells than header columns"))
            continue
        cells = {c: (record[i] if i < len(record) else "").strip() for c, i in positions.items()}
        # The text is matched as stored: the published import keeps it exactly, and an
        # export escaped formula-like cells (studies.published.cell_escape).
        raw_text = (
            cell_unescape(record[positions["reflection"]])
            if len(record) > positions["reflection"]
            else ""
        )
        values: dict[str, str | None] = {}
        for column in ("stage", "annomi_dialogue_id", "reflection", "evaluator"):
            value = cells[column]
            max_length = EVALUATOR_MAX_LENGTH if column == "evaluator" else None
            problem = _EMPTY[column] if not value else _text_problem(value, max_length)
            if problem:
                issues.append(ImportIssue(_loc(number, column), problem))
            values[column] = None if problem else value
        score, problem = (
            (None, _EMPTY["score"]) if not cells["score"] else _parse_score(cells["score"])
        )
        if problem:
            issues.append(ImportIssue(_loc(number, "score"), problem))
        row = _Row(
            number,
            values["stage"],
            values["annomi_dialogue_id"],
            raw_text if values["reflection"] is not None else None,
            values["evaluator"],
            score,
        )
        key = (row.stage, row.dialogue_id, row.text, row.evaluator)
        if None not in key:
            if key in first_seen:
                issues.append(
                    ImportIssue(
                        f"row {number}",
                        f"row {first_seen[key]} already gives a score for this stage, dialogue, "
                        "reflection and evaluator",
                    )
                )
            first_seen.setdefault(key, number)
        rows.append(row)
    if not rows and not issues:
        issues.append(ImportIssue("file", "contains no scores, only a header"))
    return rows, ignored


# --- checking against the study ----------------------------------------------------------


def _resolve(
    study: Study, rows: list[_Row], issues: list[ImportIssue]
) -> list[tuple[_Row, int, int]]:
    """(row, stage id, reflection id) for each row that names an analysed item of the
    study; a problem for every row that does not."""
    stages = dict(Stage.objects.filter(study=study).order_by("position").values_list("name", "id"))
    if not stages:
        issues.append(
            ImportIssue("study", f'"{study.slug}" has no stages; add them in the admin first')
        )
    contexts = dict(
        DialogueContext.objects.filter(study=study).order_by().values_list("external_id", "id")
    )
    # Every (context, text) of the study, to tell "no such text" from "not in this stage".
    texts: set[tuple[int, str]] = set()
    reflections: dict[int, tuple[int, str, str]] = {}
    for pk, context_id, text, kind in (
        Reflection.objects.filter(context__study=study)
        .order_by()
        .values_list("pk", "context_id", "text", "kind")
    ):
        reflections[pk] = (context_id, text, kind)
        texts.add((context_id, text))
    # Texts are unique within a batch (the materials import refuses repeats).
    items: dict[tuple[int, int, str], tuple[int, str]] = {}
    batches: set[tuple[int, int]] = set()
    for stage_id, reflection_id in (
        BatchItem.objects.filter(batch__stage__study=study)
        .order_by()
        .values_list("batch__stage_id", "reflection_id")
    ):
        context_id, text, kind = reflections[reflection_id]
        items[(stage_id, context_id, text)] = (reflection_id, kind)
        batches.add((stage_id, context_id))

    resolved = []
    for row in rows:
        stage_id = context_id = None
        if row.stage is not None:
            stage_id = stages.get(row.stage)
            if stage_id is None and stages:
                issues.append(
                    ImportIssue(
                        _loc(row.number, "stage"),
                        f"unknown stage {row.stage!r} (the study has: {', '.join(stages)})",
                    )
                )
        if row.dialogue_id is not None:
            context_id = contexts.get(row.dialogue_id)
            if context_id is None:
                issues.append(
                    ImportIssue(
                        _loc(row.number, "annomi_dialogue_id"),
                        f'unknown dialogue id "{row.dialogue_id}": no context of the study has it',
                    )
                )
        if stage_id is None or context_id is None or row.text is None:
            continue
        where = _loc(row.number, "reflection")
        # Exactly as stored, else without surrounding spaces (materials imports trim).
        text = row.text if (context_id, row.text) in texts else row.text.strip()
        found = items.get((stage_id, context_id, text))
        if found is None:
            if (context_id, text) not in texts:
                message = f'no reflection of dialogue "{row.dialogue_id}" has this text'
            elif (stage_id, context_id) not in batches:
                message = f'dialogue "{row.dialogue_id}" has no batch in stage {row.stage!r}'
            else:
                message = (
                    f'this reflection of dialogue "{row.dialogue_id}" is not in its batch '
                    f"for stage {row.stage!r}"
                )
            issues.append(ImportIssue(where, message))
            continue
        reflection_id, kind = found
        if kind == Reflection.Kind.ATTENTION_CHECK:
            issues.append(
                ImportIssue(
                    where, "an attention-check item: it is not analysed, so it takes no score"
                )
            )
            continue
        if row.evaluator is not None and row.score is not None:
            resolved.append((row, stage_id, reflection_id))
    return resolved


# --- the service -------------------------------------------------------------------------


def automatic_scores_import(*, study: Study, file: bytes | str | IO) -> ScoresImportSummary:
    """Import a scores CSV (bytes, text, or an open file such as an upload) into
    ``study``; see the module docstring.

    Raises AutomaticScoresImportError listing every problem; then nothing is written.
    Locks the study row for the write, so imports into one study (of scores or of
    materials, which may change batches) run one after the other.
    """
    issues: list[ImportIssue] = []
    rows, ignored = _parse(_decode(file), issues)
    if issues and not rows:
        raise AutomaticScoresImportError(_in_row_order(issues))

    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        # Check every row that parsed too, so one attempt lists every problem.
        resolved = _resolve(study, rows, issues)
        if issues:
            raise AutomaticScoresImportError(_in_row_order(issues))

        summary = ScoresImportSummary(ignored_columns=ignored)
        existing = {
            (stage_id, reflection_id, evaluator): (pk, score)
            for pk, stage_id, reflection_id, evaluator, score in AutomaticScore.objects.filter(
                study=study, evaluator__in={row.evaluator for row, _, _ in resolved}
            )
            .order_by()
            .values_list("pk", "stage_id", "reflection_id", "evaluator", "score")
        }
        now = timezone.now()
        to_create, to_update = [], []
        for row, stage_id, reflection_id in resolved:
            stored = existing.get((stage_id, reflection_id, row.evaluator))
            if stored is None:
                to_create.append(
                    AutomaticScore(
                        study=study,
                        stage_id=stage_id,
                        reflection_id=reflection_id,
                        evaluator=row.evaluator,
                        score=row.score,
                        imported_at=now,
                    )
                )
            elif stored[1] != row.score:
                to_update.append(AutomaticScore(pk=stored[0], score=row.score, imported_at=now))
            else:
                summary.unchanged += 1
        AutomaticScore.objects.bulk_create(to_create, batch_size=WRITE_BATCH_SIZE)
        AutomaticScore.objects.bulk_update(
            to_update, ["score", "imported_at"], batch_size=WRITE_BATCH_SIZE
        )
        summary.created, summary.updated = len(to_create), len(to_update)
    return summary
