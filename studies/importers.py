"""Import of study materials (contexts, human/synthetic/attention-check reflections).

Two formats, both documented in the README with examples in ``docs/examples/``:

* JSON: ``{"contexts": [{"id", "turns", "human_reflection", "synthetic": [...],
  "attention_checks": [...]}]}``
* CSV: one row per reflection, columns ``annomi_dialogue_id, stage, dialogue_context,
  reflection_source, reflection`` and optionally ``kind, model, decoding, p,
  prompt_type, complexity``.

The import is all-or-nothing: the whole file is parsed and checked against the study
first, every problem is reported with its row (CSV, the header is row 1) or context
and field (JSON), and only a clean file is written, in one transaction. Importing the
same file again changes nothing.
"""

import csv
import io
import json
import random
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count

from .models import Batch, BatchItem, DialogueContext, Reflection, Study
from .protocol import ATTENTION_SOURCE, HUMAN_SOURCE, TURN_ROLES

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


@dataclass(frozen=True)
class ImportIssue:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class MaterialsImportError(Exception):
    def __init__(self, issues: list[ImportIssue]):
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


@dataclass
class ImportSummary:
    contexts_created: int = 0
    reflections_created: int = 0
    batches_created: int = 0
    batches_updated: int = 0
    attention_checks_generated: int = 0

    @property
    def changed(self) -> bool:
        return any(
            (
                self.contexts_created,
                self.reflections_created,
                self.batches_created,
                self.batches_updated,
            )
        )

    def __str__(self) -> str:
        if not self.changed:
            return "Nothing to import: the study already holds exactly these materials."
        return (
            f"{self.contexts_created} contexts, {self.reflections_created} reflections and "
            f"{self.batches_created} batches created; {self.batches_updated} batches updated; "
            f"attention checks generated: {self.attention_checks_generated}."
        )


@dataclass
class _Item:
    stage: str | None  # None: every stage (human rows, stage-less attention checks)
    source: str
    text: str
    kind: str
    generation: dict
    where: str  # "row 5" (CSV) or 'contexts[0] (id "x"), synthetic[1]' (JSON)


@dataclass
class _ContextSpec:
    external_id: str
    where: str
    fmt: str
    turns: list | None = None
    turns_invalid: bool = False
    human: _Item | None = None
    synthetic: list[_Item] = field(default_factory=list)
    attention: list[_Item] = field(default_factory=list)


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


def _loc(fmt: str, where: str, name: str) -> str:
    return f"{where}, {'column' if fmt == 'csv' else 'field'} '{_NAMES[fmt].get(name, name)}'"


# --- parsing ---------------------------------------------------------------------------


def parse_turns(value) -> tuple[list[dict] | None, str | None]:
    """Accept ``[{"role": r, "text": t}]`` or the published ``[{"therapist": t}]`` shape.

    Returns (turns as role/text dicts, None) or (None, error message).
    """
    if not isinstance(value, list) or not value:
        return None, "must be a non-empty JSON list of turns"
    turns = []
    for n, turn in enumerate(value, start=1):
        if isinstance(turn, dict) and set(turn) == {"role", "text"}:
            role, text = turn["role"], turn["text"]
        elif isinstance(turn, dict) and len(turn) == 1:
            ((role, text),) = turn.items()
        else:
            return None, (
                f'turn {n} must be {{"role": ..., "text": ...}} or a one-key object '
                'like {"client": "..."}'
            )
        if role not in TURN_ROLES:
            return None, f"turn {n} has unknown role {role!r} (expected therapist or client)"
        if not isinstance(text, str) or not text.strip():
            return None, f"turn {n} has empty text"
        turns.append({"role": role, "text": text})
    return turns, None


def _clean_text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def _parse_json(raw: str, issues: list[ImportIssue]) -> list[_ContextSpec]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        issues.append(
            ImportIssue(f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}")
        )
        return []
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list):
        issues.append(ImportIssue("file", 'expected an object with a "contexts" list'))
        return []
    specs = []
    for index, raw_ctx in enumerate(data["contexts"]):
        where = f"contexts[{index}]"
        if not isinstance(raw_ctx, dict):
            issues.append(ImportIssue(where, "must be an object"))
            continue
        external_id = raw_ctx.get("id")
        if isinstance(external_id, int):
            external_id = str(external_id)
        if not isinstance(external_id, str) or not external_id.strip():
            issues.append(ImportIssue(_loc("json", where, "id"), "missing or empty dialogue id"))
            continue
        external_id = external_id.strip()
        where = f'{where} (id "{external_id}")'
        spec = _ContextSpec(external_id=external_id, where=where, fmt="json")
        spec.turns, error = parse_turns(raw_ctx.get("turns"))
        if error:
            spec.turns_invalid = True
            issues.append(ImportIssue(_loc("json", where, "turns"), error))
        if "human_reflection" in raw_ctx:
            spec.human = _Item(
                None, HUMAN_SOURCE, _clean_text(raw_ctx["human_reflection"]), "human", {}, where
            )
        for key, kind in (("synthetic", "synthetic"), ("attention_checks", "attention_check")):
            raw_items = raw_ctx.get(key, [])
            if not isinstance(raw_items, list):
                issues.append(ImportIssue(_loc("json", where, key), "must be a list"))
                continue
            for n, raw_item in enumerate(raw_items):
                item_where = f"{where}, {key}[{n}]"
                if not isinstance(raw_item, dict):
                    issues.append(ImportIssue(item_where, "must be an object"))
                    continue
                generation = raw_item.get("generation") or {}
                if not isinstance(generation, dict):
                    issues.append(
                        ImportIssue(_loc("json", item_where, "generation"), "must be an object")
                    )
                    continue
                item = _Item(
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


def _parse_csv(raw: str, issues: list[ImportIssue]) -> list[_ContextSpec]:
    reader = csv.DictReader(io.StringIO(raw, newline=""))
    try:
        header = reader.fieldnames or []
        missing = [c for c in CSV_REQUIRED_COLUMNS if c not in header]
        if missing:
            issues.append(ImportIssue("row 1 (header)", f"missing column(s): {', '.join(missing)}"))
            return []
        rows = list(reader)
    except csv.Error as exc:
        issues.append(ImportIssue(f"line {reader.line_num}", f"unreadable CSV: {exc}"))
        return []
    specs: dict[str, _ContextSpec] = {}
    context_rows: dict[str, int] = {}
    for n, row in enumerate(rows, start=2):
        at = f"row {n}"
        if None in row:
            issues.append(ImportIssue(at, "more cells than header columns"))
            continue
        external_id = (row["annomi_dialogue_id"] or "").strip()
        if not external_id:
            issues.append(ImportIssue(_loc("csv", at, "annomi_dialogue_id"), "empty dialogue id"))
            continue
        spec = specs.get(external_id)
        if spec is None:
            spec = specs[external_id] = _ContextSpec(
                external_id, f'dialogue "{external_id}" (first in {at})', "csv"
            )

        context_cell = (row["dialogue_context"] or "").strip()
        if context_cell:
            try:
                turns, error = parse_turns(json.loads(context_cell))
            except json.JSONDecodeError as exc:
                turns, error = None, f"invalid JSON: {exc.msg}"
            if error:
                spec.turns_invalid = True
                issues.append(ImportIssue(_loc("csv", at, "dialogue_context"), error))
            elif spec.turns is None:
                spec.turns = turns
                context_rows[external_id] = n
            elif turns != spec.turns:
                issues.append(
                    ImportIssue(
                        _loc("csv", at, "dialogue_context"),
                        f'differs from the context of dialogue "{external_id}" in row '
                        f"{context_rows[external_id]}",
                    )
                )

        source = (row["reflection_source"] or "").strip()
        kind = (row.get("kind") or "").strip() or (
            "human" if source == HUMAN_SOURCE else "synthetic"
        )
        if kind not in KINDS:
            issues.append(
                ImportIssue(
                    _loc("csv", at, "kind"), f"unknown kind {kind!r} (expected {', '.join(KINDS)})"
                )
            )
            continue
        if kind == "attention_check":
            source = source or ATTENTION_SOURCE
        generation = {}
        for column in GENERATION_COLUMNS:
            value = (row.get(column) or "").strip()
            if value and column == "p":
                try:
                    generation["p"] = float(value)
                except ValueError:
                    issues.append(ImportIssue(_loc("csv", at, "p"), f"not a number: {value!r}"))
            elif value:
                generation[column] = value
        item = _Item(
            (row["stage"] or "").strip() or None,
            source,
            (row["reflection"] or "").strip(),
            kind,
            generation,
            at,
        )
        if kind == "human":
            if spec.human is None:
                spec.human = item
            elif item.text != spec.human.text:
                issues.append(
                    ImportIssue(
                        _loc("csv", at, "reflection"),
                        f'a second, different human reflection for dialogue "{external_id}" '
                        f"({spec.human.where} has another)",
                    )
                )
        elif kind == "synthetic":
            spec.synthetic.append(item)
        else:
            spec.attention.append(item)
    for spec in specs.values():
        if spec.turns is None and not spec.turns_invalid:
            issues.append(ImportIssue(spec.where, "no row gives its dialogue_context"))
    return list(specs.values())


# --- checking against the study ----------------------------------------------------------


def _check(study: Study, specs: list[_ContextSpec], issues: list[ImportIssue]) -> dict[str, int]:
    """Check parsed specs against each other and the study; append every problem."""
    stages = dict(study.stages.order_by("position").values_list("name", "id"))
    if not stages:
        issues.append(
            ImportIssue("study", f'"{study.slug}" has no stages; add them in the admin first')
        )
    if not specs:
        issues.append(ImportIssue("file", "contains no contexts"))
    existing = {
        c.external_id: c
        for c in DialogueContext.objects.filter(
            study=study, external_id__in=[s.external_id for s in specs]
        ).prefetch_related("reflections")
    }
    first_seen: dict[str, str] = {}
    for spec in specs:
        fmt = spec.fmt
        if spec.external_id in first_seen:
            issues.append(
                ImportIssue(
                    spec.where, f"duplicate dialogue id (also {first_seen[spec.external_id]})"
                )
            )
        first_seen.setdefault(spec.external_id, spec.where)
        if spec.human is None:
            issues.append(
                ImportIssue(
                    _loc(fmt, spec.where, "human") if fmt == "json" else spec.where,
                    "missing human reflection"
                    + (" (a row with source Human)" if fmt == "csv" else ""),
                )
            )
        elif not spec.human.text:
            issues.append(ImportIssue(_loc(fmt, spec.human.where, "human"), "empty text"))
        if not spec.synthetic:
            issues.append(ImportIssue(spec.where, "has no synthetic reflection in any stage"))

        checked: list[_Item] = [spec.human] if spec.human and spec.human.text else []
        for item in spec.synthetic + spec.attention:
            if not item.text:
                issues.append(ImportIssue(_loc(fmt, item.where, "text"), "empty text"))
                continue
            if item.kind == "synthetic":
                if not item.stage:
                    issues.append(
                        ImportIssue(
                            _loc(fmt, item.where, "stage"), "a synthetic reflection needs a stage"
                        )
                    )
                if not item.source:
                    issues.append(ImportIssue(_loc(fmt, item.where, "source"), "empty source"))
            if item.source == HUMAN_SOURCE:
                issues.append(
                    ImportIssue(
                        _loc(fmt, item.where, "source"),
                        f'"{HUMAN_SOURCE}" is reserved for the human reflection',
                    )
                )
            if item.stage and stages and item.stage not in stages:
                issues.append(
                    ImportIssue(
                        _loc(fmt, item.where, "stage"),
                        f"unknown stage {item.stage!r} (the study has: {', '.join(stages)})",
                    )
                )
            # Two equal texts in one batch would make the items indistinguishable.
            clash = next(
                (
                    other
                    for other in checked
                    if other.text == item.text
                    and (other.stage is None or item.stage is None or other.stage == item.stage)
                ),
                None,
            )
            if clash is not None:
                issues.append(
                    ImportIssue(
                        _loc(fmt, item.where, "text"),
                        f"duplicate reflection (same text as {clash.where})",
                    )
                )
            else:
                checked.append(item)
        attention_stages = [a.stage for a in spec.attention]
        for stage in sorted(set(attention_stages), key=str):
            if attention_stages.count(stage) > 1:
                issues.append(
                    ImportIssue(
                        spec.where,
                        "more than one attention check for "
                        + (f"stage {stage!r}" if stage else "all stages"),
                    )
                )
        context = existing.get(spec.external_id)
        if context is not None:
            if spec.turns is not None and context.turns != spec.turns:
                issues.append(
                    ImportIssue(
                        spec.where,
                        "this dialogue id is already in the study with a different context",
                    )
                )
            old_human = next(
                (r for r in context.reflections.all() if r.kind == Reflection.Kind.HUMAN), None
            )
            if old_human and spec.human and spec.human.text and old_human.text != spec.human.text:
                issues.append(
                    ImportIssue(
                        spec.where,
                        "this dialogue is already in the study with a different human reflection",
                    )
                )
    return stages


# --- writing -----------------------------------------------------------------------------


def _attention_pool(study: Study, specs: list[_ContextSpec]) -> list[tuple[str, str]]:
    """Human reflections of every dialogue in the study or the file, sorted, so the
    generated attention checks depend only on the study's seed and contents."""
    pool = dict(
        Reflection.objects.filter(context__study=study, kind=Reflection.Kind.HUMAN).values_list(
            "context__external_id", "text"
        )
    )
    for spec in specs:
        pool[spec.external_id] = spec.human.text
    return sorted(pool.items())


def materials_import(*, study: Study, content: bytes | str, fmt: str) -> ImportSummary:
    """Import a materials file into ``study``; see the module docstring.

    Raises MaterialsImportError listing every problem; then nothing is written.
    Locks the study row for the write, so two imports into one study run one after
    the other.
    """
    issues: list[ImportIssue] = []
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise MaterialsImportError(
                [ImportIssue("file", f"not UTF-8 text (byte {exc.start}): save it as UTF-8")]
            ) from None
    if fmt == "json":
        specs = _parse_json(content, issues)
    elif fmt == "csv":
        specs = _parse_csv(content, issues)
    else:
        raise MaterialsImportError(
            [ImportIssue("file", f"unknown format {fmt!r}: use json or csv")]
        )
    if issues and not specs:
        raise MaterialsImportError(issues)

    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        # Check everything that parsed too, so one attempt lists every problem.
        stages = _check(study, specs, issues)
        if issues:
            raise MaterialsImportError(issues)
        summary = ImportSummary()
        pool = _attention_pool(study, specs)
        for spec in specs:
            _write_context(study, spec, stages, pool, summary, issues)
        if issues:
            # Raised inside the transaction: everything written so far is rolled back.
            raise MaterialsImportError(issues)
    return summary


def _get_reflection(context: DialogueContext, item: _Item, summary: ImportSummary) -> Reflection:
    reflection, created = Reflection.objects.get_or_create(
        context=context,
        source=item.source,
        text=item.text,
        defaults={"kind": item.kind, "generation": item.generation},
    )
    if created:
        summary.reflections_created += 1
    return reflection


def _write_context(
    study: Study,
    spec: _ContextSpec,
    stages: dict[str, int],
    pool: list[tuple[str, str]],
    summary: ImportSummary,
    issues: list[ImportIssue],
) -> None:
    context, created = DialogueContext.objects.get_or_create(
        study=study, external_id=spec.external_id, defaults={"turns": spec.turns}
    )
    summary.contexts_created += created
    human = _get_reflection(context, spec.human, summary)

    attention_all = next((a for a in spec.attention if a.stage is None), None)
    attention_by_stage = {a.stage: a for a in spec.attention if a.stage}
    stage_names = [name for name in stages if any(s.stage == name for s in spec.synthetic)]
    for stage_name in stage_names:
        batch, batch_created = Batch.objects.get_or_create(
            stage_id=stages[stage_name], context=context
        )
        synthetic = [
            _get_reflection(context, s, summary) for s in spec.synthetic if s.stage == stage_name
        ]
        given = attention_by_stage.get(stage_name) or attention_all
        if given is not None:
            attention = _get_reflection(context, given, summary)
        else:
            attention = _existing_or_generated_attention(study, context, batch, spec, pool, summary)
            if attention is None:
                issues.append(
                    ImportIssue(
                        spec.where,
                        "cannot generate an attention check: it is taken from another dialogue's "
                        "human reflection, and there is none; add one explicitly",
                    )
                )
                return
        wanted = [human.pk, *(r.pk for r in synthetic), attention.pk]
        current = list(batch.items.order_by("position").values_list("reflection_id", flat=True))
        if current == wanted:
            continue
        if batch.assignments.exists():
            issues.append(
                ImportIssue(
                    spec.where,
                    f"the batch for stage {stage_name!r} already has annotators; its reflections "
                    "cannot change",
                )
            )
            return
        batch.items.all().delete()
        BatchItem.objects.bulk_create(
            BatchItem(batch=batch, reflection_id=rid, position=pos)
            for pos, rid in enumerate(wanted, 1)
        )
        if batch_created:
            summary.batches_created += 1
        else:
            summary.batches_updated += 1
    # Reflections that an earlier version of the file put in a batch and this one dropped.
    (
        Reflection.objects.filter(context=context)
        .exclude(kind=Reflection.Kind.HUMAN)
        .annotate(n_items=Count("batch_items"), n_judgements=Count("judgements"))
        .filter(n_items=0, n_judgements=0)
        .delete()
    )


def _existing_or_generated_attention(
    study: Study,
    context: DialogueContext,
    batch: Batch,
    spec: _ContextSpec,
    pool: list[tuple[str, str]],
    summary: ImportSummary,
) -> Reflection | None:
    # The batch's own check, else one generated earlier for this context. A check the
    # file gave for one stage is never reused in another.
    existing = (
        batch.reflections.filter(kind=Reflection.Kind.ATTENTION_CHECK).first()
        or context.reflections.filter(
            kind=Reflection.Kind.ATTENTION_CHECK, generation__has_key="taken_from_dialogue"
        )
        .order_by("id")
        .first()
    )
    if existing is not None:
        return existing
    own_texts = {spec.human.text, *(s.text for s in spec.synthetic)}
    candidates = [
        (eid, text) for eid, text in pool if eid != spec.external_id and text not in own_texts
    ]
    if not candidates:
        return None
    rng = random.Random(f"{study.seed}/attention/{spec.external_id}")
    donor_id, text = rng.choice(candidates)
    summary.attention_checks_generated += 1
    summary.reflections_created += 1
    return Reflection.objects.create(
        context=context,
        source=ATTENTION_SOURCE,
        text=text,
        kind=Reflection.Kind.ATTENTION_CHECK,
        generation={"generated": "off-topic attention check", "taken_from_dialogue": donor_id},
    )


def materials_format_for(filename: str) -> str | None:
    name = filename.lower()
    if name.endswith(".json"):
        return "json"
    if name.endswith(".csv"):
        return "csv"
    return None
