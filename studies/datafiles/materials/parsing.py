"""Reading a materials file (JSON or CSV) into context specs; problems in single
values are collected on the way, the checks across contexts and against the study
come after (:mod:`.checking`)."""

import io
import math
from dataclasses import dataclass, field

from ...models import DialogueContext, Reflection
from ...protocol import ATTENTION_SOURCE, HUMAN_SOURCE
from ...validators import generation_problem
from .. import (
    CsvRecords,
    InvalidJSON,
    Problems,
    header_check,
    json_loads_strict,
    json_value_problem,
    parse_turns,
    parse_turns_cell,
    storable_problem,
)

GENERATION_COLUMNS = ("model", "decoding", "p", "prompt_type", "complexity")
CSV_REQUIRED_COLUMNS = (
    "annomi_dialogue_id",
    "stage",
    "dialogue_context",
    "reflection_source",
    "reflection",
)
CSV_OPTIONAL_COLUMNS = ("kind", *GENERATION_COLUMNS)
KINDS = ("human", "synthetic", "attention_check")
ID_MAX_LENGTH = DialogueContext._meta.get_field("external_id").max_length
SOURCE_MAX_LENGTH = Reflection._meta.get_field("source").max_length
# Real metadata is a flat object; the cap keeps every later json.dumps of it (the
# JSONField, comparisons) far from Python's recursion limit.
METADATA_MAX_DEPTH = 20


@dataclass
class Item:
    stage: str | None  # None: every stage (human rows, stage-less attention checks)
    source: str
    text: str
    kind: str
    generation: dict
    where: str  # "row 5" (CSV) or 'contexts[0] (id "x"), synthetic[1]' (JSON)
    row: int | None = None  # CSV only


@dataclass
class ContextSpec:
    external_id: str
    where: str
    fmt: str
    row: int | None = None  # CSV: the dialogue's first row
    turns: list | None = None
    turns_invalid: bool = False
    human: Item | None = None
    # (where, row, stage name) of CSV human rows that name a stage; only checked to exist.
    human_stages: list[tuple[str, int, str]] = field(default_factory=list)
    synthetic: list[Item] = field(default_factory=list)
    attention: list[Item] = field(default_factory=list)


# Names of the same piece of information in the two formats.
_NAMES = {
    "csv": {
        "text": "reflection",
        "source": "reflection_source",
        "stage": "stage",
        "human": "reflection",
    },
    "json": {"text": "text", "source": "source", "stage": "stage", "human": "human_reflection"},
}


def loc(fmt: str, where: str, name: str) -> str:
    return f"{where}, {'column' if fmt == 'csv' else 'field'} '{_NAMES[fmt].get(name, name)}'"


def same_generation(a: dict, b: dict) -> bool:
    """Equal metadata; a null value counts as absent (an empty CSV cell)."""
    return {k: v for k, v in a.items() if v is not None} == {
        k: v for k, v in b.items() if v is not None
    }


def _clean_text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def parse_json(raw: str, problems: Problems) -> list[ContextSpec]:
    try:
        data = json_loads_strict(raw)
    except InvalidJSON as exc:
        problems.add(exc.where, f"invalid JSON: {exc.message}")
        return []
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list):
        problems.add("file", 'expected an object with a "contexts" list')
        return []
    specs = []
    for index, raw_ctx in enumerate(data["contexts"]):
        where = f"contexts[{index}]"
        if not isinstance(raw_ctx, dict):
            problems.add(where, "must be an object")
            continue
        external_id = raw_ctx.get("id")
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        if not isinstance(external_id, str) or not external_id.strip():
            problems.add(loc("json", where, "id"), "missing or empty dialogue id")
            continue
        external_id = external_id.strip()
        if problem := storable_problem(external_id, ID_MAX_LENGTH):
            problems.add(loc("json", where, "id"), problem)
            continue
        where = f'{where} (id "{external_id}")'
        spec = ContextSpec(external_id=external_id, where=where, fmt="json")
        spec.turns, error = parse_turns(raw_ctx.get("turns"))
        if error:
            spec.turns_invalid = True
            problems.add(loc("json", where, "turns"), error)
        if "human_reflection" in raw_ctx:
            spec.human = Item(
                None, HUMAN_SOURCE, _clean_text(raw_ctx["human_reflection"]), "human", {}, where
            )
        for key, kind in (("synthetic", "synthetic"), ("attention_checks", "attention_check")):
            raw_items = raw_ctx.get(key, [])
            if not isinstance(raw_items, list):
                problems.add(loc("json", where, key), "must be a list")
                continue
            for n, raw_item in enumerate(raw_items):
                item_where = f"{where}, {key}[{n}]"
                if not isinstance(raw_item, dict):
                    problems.add(item_where, "must be an object")
                    continue
                generation = raw_item.get("generation") or {}
                if not isinstance(generation, dict):
                    problems.add(loc("json", item_where, "generation"), "must be an object")
                    continue
                if kind == "synthetic" and (
                    problem := json_value_problem(generation, METADATA_MAX_DEPTH)
                    or generation_problem(generation)
                ):
                    problems.add(loc("json", item_where, "generation"), problem)
                item = Item(
                    _clean_text(raw_item.get("stage")) or None,
                    _clean_text(raw_item.get("source"))
                    if kind == "synthetic"
                    else ATTENTION_SOURCE,
                    _clean_text(raw_item.get("text")),
                    kind,
                    generation if kind == "synthetic" else {},
                    item_where,
                )
                (spec.synthetic if kind == "synthetic" else spec.attention).append(item)
        specs.append(spec)
    return specs


def _generation(n: int, row: dict[str, str], problems: Problems) -> dict:
    generation = {}
    for column in GENERATION_COLUMNS:
        value = row.get(column, "").strip()
        if problem := storable_problem(value):
            problems.at_cell(n, column, problem)
        elif value and column == "p":
            try:
                p = float(value)
            except ValueError:
                problems.at_cell(n, "p", f"not a number: {value!r}")
                continue
            if math.isfinite(p):
                generation["p"] = p
            else:
                problems.at_cell(n, "p", f"not a finite number: {value!r}")
        elif value:
            generation[column] = value
    if problem := generation_problem(generation):
        problems.at_row(n, f"the generation metadata ({', '.join(GENERATION_COLUMNS)}) {problem}")
    return generation


def parse_csv(raw: str, problems: Problems, *, pool: bool = False) -> list[ContextSpec]:
    """``pool``: a candidate pool, whose ``stage`` column may be left out."""
    records = CsvRecords(io.StringIO(raw, newline=""), problems)
    rows = iter(records)
    header_row, header_cells = next(rows, (1, []))
    header = header_check(
        header_row,
        header_cells,
        problems,
        required=tuple(c for c in CSV_REQUIRED_COLUMNS if not (pool and c == "stage")),
        optional=(*CSV_OPTIONAL_COLUMNS, "stage") if pool else CSV_OPTIONAL_COLUMNS,
    )
    if header is None:
        return []
    specs: dict[str, ContextSpec] = {}
    context_rows: dict[str, int] = {}
    for n, cells in rows:
        row = header.cells(n, cells, problems)
        if row is None:
            continue
        at = f"row {n}"
        external_id = row["annomi_dialogue_id"].strip()
        if not external_id:
            problems.at_cell(n, "annomi_dialogue_id", "empty dialogue id")
            continue
        if problem := storable_problem(external_id, ID_MAX_LENGTH):
            problems.at_cell(n, "annomi_dialogue_id", problem)
            continue
        spec = specs.get(external_id)
        if spec is None:
            spec = specs[external_id] = ContextSpec(
                external_id, f'dialogue "{external_id}" (first in {at})', "csv", n
            )

        if context_cell := row["dialogue_context"].strip():
            turns, error = parse_turns_cell(context_cell)
            if error:
                spec.turns_invalid = True
                problems.at_cell(n, "dialogue_context", error)
            elif spec.turns is None:
                spec.turns = turns
                context_rows[external_id] = n
            elif turns != spec.turns:
                problems.at_cell(
                    n,
                    "dialogue_context",
                    f'differs from the context of dialogue "{external_id}" in row '
                    f"{context_rows[external_id]}",
                )

        source = row["reflection_source"].strip()
        kind = row.get("kind", "").strip() or ("human" if source == HUMAN_SOURCE else "synthetic")
        if kind not in KINDS:
            problems.at_cell(n, "kind", f"unknown kind {kind!r} (expected {', '.join(KINDS)})")
            continue
        stage = row.get("stage", "").strip() or None
        if kind == "attention_check":
            source = source or ATTENTION_SOURCE
        elif kind == "human":
            if source not in ("", HUMAN_SOURCE):
                problems.at_cell(
                    n,
                    "reflection_source",
                    f'a human reflection must have the source "{HUMAN_SOURCE}"',
                )
            source = HUMAN_SOURCE
            if stage:
                spec.human_stages.append((loc("csv", at, "stage"), n, stage))
            stage = None  # in every stage's batch
        generation = _generation(n, row, problems)
        item = Item(stage, source, row["reflection"].strip(), kind, generation, at, n)
        if kind == "human":
            if spec.human is None:
                spec.human = item
            elif item.text != spec.human.text:
                problems.at_cell(
                    n,
                    "reflection",
                    f'a second, different human reflection for dialogue "{external_id}" '
                    f"({spec.human.where} has another)",
                )
            elif not same_generation(item.generation, spec.human.generation):
                generation_clash(item, spec.human, "csv", problems)
        elif kind == "synthetic":
            spec.synthetic.append(item)
        else:
            spec.attention.append(item)
    if records.stopped:  # the rest of the file is unread: its checks would mislead
        return []
    for spec in specs.values():
        if spec.turns is None and not spec.turns_invalid:
            problems.add(spec.where, "no row gives its dialogue_context", row=spec.row)
    return list(specs.values())


def generation_clash(item: Item, first: Item, fmt: str, problems: Problems) -> None:
    """``item`` repeats ``first`` with other generation metadata."""
    name = "generation"
    if fmt == "csv":
        name = next(
            (c for c in GENERATION_COLUMNS if item.generation.get(c) != first.generation.get(c)),
            name,
        )
    problems.add(
        loc(fmt, item.where, name),
        f"the same reflection is given with different generation metadata (also at {first.where})",
        row=item.row,
    )
