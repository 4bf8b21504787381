"""The materials import service: parse, check, then write in one transaction."""

import random
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count

from ...locks import studies_locked
from ...models import (
    Batch,
    BatchItem,
    DialogueContext,
    PoolCandidate,
    Reflection,
    Study,
    pool_candidate_key,
)
from ...protocol import ATTENTION_SOURCE
from ...services.in_use import batch_is_locked
from ...signals import materials_written
from .. import DataFileError, Problems, read_text
from .checking import materials_check
from .parsing import ContextSpec, Item, parse_csv, parse_json, same_generation

FORMATS = ("json", "csv")


class MaterialsImportError(DataFileError):
    pass


@dataclass
class ImportSummary:
    contexts_created: int = 0
    reflections_created: int = 0
    batches_created: int = 0
    batches_updated: int = 0
    attention_checks_generated: int = 0
    reflections_updated: int = 0  # generation metadata replaced
    pool_candidates_created: int = 0

    @property
    def changed(self) -> bool:
        return any(
            (
                self.contexts_created,
                self.reflections_created,
                self.batches_created,
                self.reflections_updated,
                self.batches_updated,
                self.pool_candidates_created,
            )
        )

    def __str__(self) -> str:
        if not self.changed:
            return "Nothing to import: the study already holds exactly these materials."
        if self.pool_candidates_created:
            return (
                f"{self.contexts_created} contexts, {self.reflections_created} human "
                f"reflections and {self.pool_candidates_created} pool candidates created."
            )
        return (
            f"{self.contexts_created} contexts, {self.reflections_created} reflections and "
            f"{self.batches_created} batches created; "
            f"{self.reflections_updated} reflections updated; "
            f"{self.batches_updated} batches updated; "
            f"attention checks generated: {self.attention_checks_generated}."
        )


def materials_format_for(filename: str) -> str | None:
    """The format named by a file's extension (.json or .csv), or None."""
    name = filename.lower()
    return next((fmt for fmt in FORMATS if name.endswith(f".{fmt}")), None)


def materials_import(*, study: Study, content, fmt: str, pool: bool = False) -> ImportSummary:
    """Import a materials file (bytes, text, a path or an open file) into ``study``;
    see the package docstring. ``pool``: the synthetic reflections are candidates of
    each context's pool (:class:`PoolCandidate`), in no stage and with no attention
    check, for a candidate selection to choose from.

    Raises MaterialsImportError listing every problem; then nothing is written.
    Locks the study row for the write, so two imports into one study run one after
    the other.
    """
    problems = Problems(MaterialsImportError)
    if fmt not in FORMATS:
        problems.add("file", f"unknown format {fmt!r}: use json or csv")
        problems.raise_if_any()
    text = read_text(content, problems)
    problems.raise_if_any()
    specs = parse_json(text, problems) if fmt == "json" else parse_csv(text, problems, pool=pool)
    if problems and not specs:
        problems.raise_if_any()

    # All or nothing, and never part of a larger transaction (which would hold the
    # study's lock and the written rows beyond the import).
    with transaction.atomic(durable=True):
        # Check everything that parsed too, so one attempt lists every problem.
        summary = materials_write(study=study, specs=specs, pool=pool, problems=problems)
    if summary.changed:
        materials_written.send(sender=Study, study_id=study.pk)
    return summary


def materials_write(
    *, study: Study, specs: list[ContextSpec], pool: bool = False, problems: Problems | None = None
) -> ImportSummary:
    """Check parsed materials against the study and write them; inside the caller's
    transaction, which it leaves to roll back on MaterialsImportError (every problem
    listed). Locks the study row. A candidate selection writes its chosen candidates
    through here, as a file would give them."""
    problems = problems if problems is not None else Problems(MaterialsImportError)
    study = studies_locked().get(pk=study.pk)
    stages = materials_check(study, specs, problems, pool=pool)
    problems.raise_if_any()
    summary = ImportSummary()
    if pool:
        for spec in specs:
            _write_pool(study, spec, summary)
        return summary
    donors = _attention_pool(study, specs)
    for spec in specs:
        _write_context(study, spec, stages, donors, summary, problems)
    # Raised inside the transaction: everything written so far is rolled back.
    problems.raise_if_any()
    return summary


def _attention_pool(study: Study, specs: list[ContextSpec]) -> list[tuple[str, str]]:
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


def _get_reflection(context: DialogueContext, item: Item, summary: ImportSummary) -> Reflection:
    reflection, created = Reflection.objects.get_or_create(
        context=context,
        source=item.source,
        text=item.text,
        defaults={"kind": item.kind, "generation": item.generation},
    )
    if created:
        summary.reflections_created += 1
    elif not same_generation(reflection.generation, item.generation) and not (
        reflection.kind == Reflection.Kind.ATTENTION_CHECK
        and "taken_from_dialogue" in reflection.generation
    ):
        reflection.generation = item.generation
        reflection.save(update_fields=["generation"])
        summary.reflections_updated += 1
    return reflection


def _write_pool(study: Study, spec: ContextSpec, summary: ImportSummary) -> None:
    context, created = DialogueContext.objects.get_or_create(
        study=study, external_id=spec.external_id, defaults={"turns": spec.turns}
    )
    summary.contexts_created += created
    _get_reflection(context, spec.human, summary)
    wanted = {
        pool_candidate_key(item.source, item.text, item.generation): item for item in spec.synthetic
    }
    have = set(
        PoolCandidate.objects.filter(context=context, key__in=wanted).values_list("key", flat=True)
    )
    new = PoolCandidate.objects.bulk_create(
        PoolCandidate(
            context=context,
            source=item.source,
            text=item.text,
            generation={k: v for k, v in item.generation.items() if v is not None},
            key=key,
        )
        for key, item in wanted.items()
        if key not in have
    )
    summary.pool_candidates_created += len(new)


def _write_context(
    study: Study,
    spec: ContextSpec,
    stages: dict[str, int],
    pool: list[tuple[str, str]],
    summary: ImportSummary,
    problems: Problems,
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
                problems.add(
                    spec.where,
                    "cannot generate an attention check: it is taken from another dialogue's "
                    "human reflection, and there is none; add one explicitly",
                    row=spec.row,
                )
                return
        wanted = [human.pk, *(r.pk for r in synthetic), attention.pk]
        current = list(batch.items.order_by("position").values_list("reflection_id", flat=True))
        if current == wanted:
            continue
        if batch_is_locked(batch=batch):
            problems.add(
                spec.where,
                f"the batch for stage {stage_name!r} already has annotators; its reflections "
                "cannot change",
                row=spec.row,
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
    spec: ContextSpec,
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
