"""Import of automatic-evaluator scores.

A CSV file, UTF-8 with or without a byte-order mark, one row per score, with the
columns ``stage``, ``annomi_dialogue_id``, ``reflection``, ``evaluator`` and ``score``
(in any order; other columns are ignored and named in the summary). A row names an
item the way published data does: the stage by its name, the context by its
dialogue id, the reflection by its text, which must be one of the items of that stage's
batch for that context. Texts, like everything the materials import stores, are
compared after trimming surrounding spaces. Attention-check items are refused: they
are never analysed.

The import is a thin format on ``studies.datafiles`` (the reader, the header check,
the problem collector): all-or-nothing, every problem reported with its row (the
header is row 1), nothing written unless the whole file is clean, one transaction. A score already stored for the same (stage, reflection, evaluator) is
replaced, so importing a corrected file updates its values and importing the same file
again changes nothing. Scores the file does not mention are left alone.

The evaluator names ``bleu`` and ``rouge_l`` (ignoring case) are the metrics computed
here (``analysis.computed_scores``): a file using one is refused unless the caller asks
to replace, which deletes the computed scores of that metric.

The study's stages, contexts, reflections and batch items are read once, so the number
of queries does not grow with the file.
"""

import io
import math
import re
from dataclasses import dataclass
from typing import IO

from django.db import transaction
from django.utils import timezone

from studies.datafiles import (
    CsvRecords,
    DataFileError,
    Problems,
    cell_unescape,
    header_check,
    read_text,
    storable_problem,
)
from studies.locks import studies_locked
from studies.models import BatchItem, DialogueContext, Reflection, Stage, Study

from .computed_scores import automatic_scores_make_room
from .metrics.overlap import computed_metric_named
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
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")


class AutomaticScoresImportError(DataFileError):
    pass


@dataclass
class ScoresImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    computed_deleted: int = 0
    ignored_columns: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.computed_deleted)

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
        if self.computed_deleted:
            text += f" {self.computed_deleted} computed scores of the same metric were deleted."
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


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else f"{value[:40]}...")


def _parse_score(value: str) -> tuple[float | None, str | None]:
    try:
        score = float(value)
    except ValueError:
        hint = " (use a dot as the decimal separator)" if _DECIMAL_COMMA.fullmatch(value) else ""
        return None, f"not a number: {_shown(value)}{hint}"
    if not math.isfinite(score):
        return None, f"not a finite number: {_shown(value)}"
    return score, None


def _metric_name_problem(evaluator: str) -> str | None:
    metric = computed_metric_named(evaluator)
    if metric is None:
        return None
    return (
        f"{_shown(evaluator)} is the name of a metric computed here ({metric}): rename the "
        "evaluator, or import with replace to use these scores instead of the computed ones"
    )


# --- parsing ---------------------------------------------------------------------------


def _parse(text: str, problems: Problems, *, replace: bool) -> tuple[list[_Row], tuple[str, ...]]:
    """Rows of the file (problems in single cells go to ``problems``) and the names
    of the ignored columns. The header is the first non-blank row. Without
    ``replace``, an evaluator named like a metric computed here is refused."""
    records = CsvRecords(io.StringIO(text, newline=""), problems)
    rows_in = iter(records)
    first = next(rows_in, None)
    if first is None:
        if not problems:
            problems.add("file", f"is empty: expected a header row with {', '.join(COLUMNS)}")
        return [], ()
    header = header_check(*first, problems, required=COLUMNS)
    if header is None:
        return [], ()

    rows: list[_Row] = []
    first_seen: dict[tuple[str, str, str, str], int] = {}
    for number, record in rows_in:
        raw = header.cells(number, record, problems)
        if raw is None:
            continue
        cells = {column: value.strip() for column, value in raw.items()}
        values: dict[str, str | None] = {}
        for column in ("stage", "annomi_dialogue_id", "reflection", "evaluator"):
            value = cells[column]
            max_length = EVALUATOR_MAX_LENGTH if column == "evaluator" else None
            problem = _EMPTY[column] if not value else storable_problem(value, max_length)
            if not problem and column == "evaluator" and not replace:
                problem = _metric_name_problem(value)
            if problem:
                problems.at_cell(number, column, problem)
            values[column] = None if problem else value
        score, problem = (
            (None, _EMPTY["score"]) if not cells["score"] else _parse_score(cells["score"])
        )
        if problem:
            problems.at_cell(number, "score", problem)
        row = _Row(
            number,
            values["stage"],
            values["annomi_dialogue_id"],
            # Kept as written: matched against the stored texts in _resolve.
            raw["reflection"] if values["reflection"] is not None else None,
            values["evaluator"],
            score,
        )
        key = (row.stage, row.dialogue_id, row.text, row.evaluator)
        if None not in key:
            if key in first_seen:
                problems.at_row(
                    number,
                    f"row {first_seen[key]} already gives a score for this stage, dialogue, "
                    "reflection and evaluator",
                )
            first_seen.setdefault(key, number)
        rows.append(row)
    if not rows and not problems:
        problems.add("file", "contains no scores, only a header")
    return rows, header.ignored


# --- checking against the study ----------------------------------------------------------


def _resolve(study: Study, rows: list[_Row], problems: Problems) -> list[tuple[_Row, int, int]]:
    """(row, stage id, reflection id) for each row that names an analysed item of the
    study; a problem for every row that does not."""
    stages = dict(Stage.objects.filter(study=study).order_by("position").values_list("name", "id"))
    if not stages:
        problems.add("study", f'"{study.slug}" has no stages; add them in the admin first')
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
                problems.at_cell(
                    row.number,
                    "stage",
                    f"unknown stage {row.stage!r} (the study has: {', '.join(stages)})",
                )
        if row.dialogue_id is not None:
            context_id = contexts.get(row.dialogue_id)
            if context_id is None:
                problems.at_cell(
                    row.number,
                    "annomi_dialogue_id",
                    f'unknown dialogue id "{row.dialogue_id}": no context of the study has it',
                )
        if stage_id is None or context_id is None or row.text is None:
            continue
        # Exactly as stored; else as a spreadsheet-safe export wrote it (one apostrophe
        # before a formula-like text: studies.datafiles.spreadsheet); else without
        # surrounding spaces (materials imports trim).
        unescaped = cell_unescape(row.text)
        candidates = (row.text, unescaped, unescaped.strip(), row.text.strip())
        text = next((t for t in candidates if (context_id, t) in texts), unescaped.strip())
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
            problems.at_cell(row.number, "reflection", message)
            continue
        reflection_id, kind = found
        if kind == Reflection.Kind.ATTENTION_CHECK:
            problems.at_cell(
                row.number,
                "reflection",
                "an attention-check item: it is not analysed, so it takes no score",
            )
            continue
        if row.evaluator is not None and row.score is not None:
            resolved.append((row, stage_id, reflection_id))
    return resolved


# --- the service -------------------------------------------------------------------------


def automatic_scores_import(
    *, study: Study, file: bytes | str | IO, replace: bool = False
) -> ScoresImportSummary:
    """Import a scores CSV (bytes, text, or an open file such as an upload) into
    ``study``; see the module docstring. An evaluator named like a metric computed here
    (``bleu``, ``rouge_l``, ignoring case) is refused unless ``replace``, which deletes
    the computed scores of that metric (``analysis.computed_scores``).

    Raises AutomaticScoresImportError listing every problem; then nothing is written.
    Locks the study row for the write, so imports into one study (of scores or of
    materials, which may change batches) run one after the other.
    """
    problems = Problems(AutomaticScoresImportError)
    text = read_text(file, problems)
    problems.raise_if_any()
    rows, ignored = _parse(text, problems, replace=replace)
    if problems and not rows:
        problems.raise_if_any()

    # All or nothing, and never part of a larger transaction (which would hold the
    # study's lock and the written rows beyond the import).
    with transaction.atomic(durable=True):
        study = studies_locked().get(pk=study.pk)
        # Check every row that parsed too, so one attempt lists every problem.
        resolved = _resolve(study, rows, problems)
        problems.raise_if_any()

        summary = ScoresImportSummary(ignored_columns=ignored)
        summary.computed_deleted = automatic_scores_make_room(
            study=study,
            metrics={computed_metric_named(row.evaluator) for row, _, _ in resolved} - {None},
            origin=AutomaticScore.Origin.IMPORTED,
        )
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
