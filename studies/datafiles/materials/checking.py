"""Checks of parsed materials across contexts and against the study (its stages, the
contexts it already holds)."""

from ...limits import MATERIAL_TEXT_MAX_LENGTH
from ...models import DialogueContext, Reflection, Study
from ...protocol import HUMAN_SOURCE
from .. import Problems, storable_problem
from .parsing import SOURCE_MAX_LENGTH, ContextSpec, Item, generation_clash, loc, same_generation


def materials_check(
    study: Study, specs: list[ContextSpec], problems: Problems, *, pool: bool = False
) -> dict[str, int]:
    """Add every problem of ``specs`` to ``problems``; returns the study's stages
    (name -> id, in order). ``pool``: the synthetic reflections are a candidate pool,
    in no stage (:func:`_check_pool_items`)."""
    stages = dict(study.stages.order_by("position").values_list("name", "id"))
    if not stages and not pool:
        problems.add("study", f'"{study.slug}" has no stages; add them in the admin first')
    if not specs:
        problems.add("file", "contains no contexts")

    gated = set(
        study.stages.filter(gate__isnull=False).values_list("name", flat=True)
    )  # their items come from their gates

    def unknown_stage(where: str, row: int | None, stage: str) -> None:
        if stages and stage not in stages:
            problems.add(
                where, f"unknown stage {stage!r} (the study has: {', '.join(stages)})", row=row
            )
        elif stage in gated:
            problems.add(
                where,
                f"stage {stage!r} is gated: its items are the ones its gate lets through from "
                "an earlier stage, so it takes no materials of its own",
                row=row,
            )

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
            problems.add(
                spec.where,
                f"duplicate dialogue id (also {first_seen[spec.external_id]})",
                row=spec.row,
            )
        first_seen.setdefault(spec.external_id, spec.where)
        human = spec.human
        if human is None:
            problems.add(
                loc(fmt, spec.where, "human") if fmt == "json" else spec.where,
                "missing human reflection" + (" (a row with source Human)" if fmt == "csv" else ""),
                row=spec.row,
            )
        elif not human.text:
            problems.add(loc(fmt, human.where, "human"), "empty text", row=human.row)
        elif problem := storable_problem(human.text, MATERIAL_TEXT_MAX_LENGTH):
            problems.add(loc(fmt, human.where, "human"), problem, row=human.row)
        for where, row, stage in [] if pool else spec.human_stages:
            unknown_stage(where, row, stage)
        if pool:
            _check_pool_items(spec, problems)
        elif not spec.synthetic:
            problems.add(spec.where, "has no synthetic reflection in any stage", row=spec.row)
        else:
            _check_items(spec, problems, unknown_stage)
        attention_stages = [a.stage for a in spec.attention]
        for stage in sorted(set(attention_stages), key=str):
            if attention_stages.count(stage) > 1:
                problems.add(
                    spec.where,
                    "more than one attention check for "
                    + (f"stage {stage!r}" if stage else "all stages"),
                    row=spec.row,
                )
        context = existing.get(spec.external_id)
        if context is not None:
            _check_existing(spec, context, problems)
    return stages


def _check_items(spec: ContextSpec, problems: Problems, unknown_stage) -> None:
    """The synthetic reflections and attention checks of one context."""
    fmt = spec.fmt
    checked: list[Item] = [spec.human] if spec.human and spec.human.text else []
    # (source, text) -> where the file first gives that reflection
    given: dict[tuple[str, str], Item] = {(i.source, i.text): i for i in checked}
    for item in spec.synthetic + spec.attention:

        def add(name: str, message: str, item=item) -> None:
            problems.add(loc(fmt, item.where, name), message, row=item.row)

        if not item.text:
            add("text", "empty text")
            continue
        if problem := storable_problem(item.text, MATERIAL_TEXT_MAX_LENGTH):
            add("text", problem)
        if item.kind == "synthetic":
            if not item.stage:
                add("stage", "a synthetic reflection needs a stage")
            if not item.source:
                add("source", "empty source")
        if item.source and (problem := storable_problem(item.source, SOURCE_MAX_LENGTH)):
            add("source", problem)
        if item.source == HUMAN_SOURCE:
            add("source", f'"{HUMAN_SOURCE}" is reserved for the human reflection')
        if item.stage:
            unknown_stage(loc(fmt, item.where, "stage"), item.row, item.stage)
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
            add("text", f"duplicate reflection (same text as {clash.where})")
        else:
            checked.append(item)
            first = given.setdefault((item.source, item.text), item)
            if not same_generation(item.generation, first.generation):
                generation_clash(item, first, fmt, problems)


def _check_pool_items(spec: ContextSpec, problems: Problems) -> None:
    """The candidates of one context's pool: unlike a stage's reflections, equal texts
    are allowed (two decoding settings may give the same text; the selection removes
    duplicates and counts them), and none is in a stage."""
    fmt = spec.fmt
    if not spec.synthetic:
        problems.add(spec.where, "has no candidate for the pool", row=spec.row)
    for item in spec.attention:
        problems.add(
            item.where,
            "a candidate pool takes no attention checks: they are added when the "
            "selection puts the chosen candidates in a stage",
            row=item.row,
        )
    for item in spec.synthetic:

        def add(name: str, message: str, item=item) -> None:
            problems.add(loc(fmt, item.where, name), message, row=item.row)

        if not item.text:
            add("text", "empty text")
        elif problem := storable_problem(item.text, MATERIAL_TEXT_MAX_LENGTH):
            add("text", problem)
        if item.stage:
            add(
                "stage",
                "a pool candidate is in no stage: leave it empty (the selection puts the "
                "chosen candidates in the stage you pick)",
            )
        if not item.source:
            add("source", "empty source")
        elif problem := storable_problem(item.source, SOURCE_MAX_LENGTH):
            add("source", problem)
        elif item.source == HUMAN_SOURCE:
            add("source", f'"{HUMAN_SOURCE}" is reserved for the human reflection')


def _check_existing(spec: ContextSpec, context: DialogueContext, problems: Problems) -> None:
    """A context the study already holds keeps its turns and its human reflection."""
    if spec.turns is not None and context.turns != spec.turns:
        problems.add(
            spec.where,
            "this dialogue id is already in the study with a different context",
            row=spec.row,
        )
    old_human = next(
        (r for r in context.reflections.all() if r.kind == Reflection.Kind.HUMAN), None
    )
    if old_human and spec.human and spec.human.text and old_human.text != spec.human.text:
        problems.add(
            spec.where,
            "this dialogue is already in the study with a different human reflection",
            row=spec.row,
        )
