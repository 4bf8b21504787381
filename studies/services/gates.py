"""Gated stages: deciding the items of a gate's deciding stage, and the gated stage's
batches made of the items that passed.

* An item (a reflection of the deciding stage's batches, the attention check left
  out) is **decided** once all k ratings of each deciding group are in: that many
  judgements that count (``Judgement.analysed_q``, submitted batches) of the group in
  the deciding stage, k being that stage's (``Stage.k``). The rule
  (``protocol.gate_passes``) reads their votes; the ``GateDecision`` is recorded with
  the judgements it used and the time, and never changes.
* A context's **batch** of the gated stage forms once every item of that context is
  decided: its passed items in the deciding batch's order, then the deciding batch's
  attention check; a context with fewer passed items than the gate's least number
  (``StageGate.min_passed``) gets no batch.
* ``gate_decisions_make`` does both; it runs after each submission (``after_submit``)
  and every minute (``studies.decide_gates``), and is idempotent: it locks the gated
  stage's row, so two runs take turns.
* A gate whose rule changes before its stage has a claimed batch is decided afresh
  (``gate_rule_changed``); after, a change is refused (``gate_change_validate``).
"""

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime

from django.contrib.postgres.aggregates import ArrayAgg
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import DatabaseError, transaction
from django.db.models import Avg, Count, F, Q
from django.utils import timezone

from ..locks import stages_locked
from ..models import (
    Assignment,
    Batch,
    BatchItem,
    GateDecision,
    Judgement,
    LikertRating,
    Reflection,
    Stage,
    StageGate,
)
from ..protocol import (
    GATE_LIKERT_MEAN_AT_LEAST,
    GATE_MAJORITY_CATEGORY,
    GateVotes,
    gate_passes,
)
from ..selectors.gates import gate_decided_contexts, gate_items, gates_pending

logger = logging.getLogger(__name__)

#: The gate's settings whose change decides its items afresh (or is refused).
RULE_FIELDS = (
    "source_stage",
    "rule",
    "deciding_group",
    "other_group",
    "min_votes",
    "threshold",
    "category",
    "dimension",
    "min_passed",
)


def gate_decisions_make(
    *,
    study_id: int | None = None,
    source_stage_id: int | None = None,
    now: datetime | None = None,
) -> int:
    """Decide every item whose ratings are all in, and form the batches of contexts
    now fully decided, for each gate of the study (or fed by the deciding stage
    ``source_stage_id``). Only gates with items still undecided are looked at
    (``gates_pending``): a gate decides its items and forms their batches in one
    transaction, so one with every item decided has every batch it will have.
    Returns how many items were decided now."""
    gates = StageGate.objects.all()
    if study_id is not None:
        gates = gates.filter(stage__study_id=study_id)
    if source_stage_id is not None:
        gates = gates.filter(source_stage_id=source_stage_id)
    decided = 0
    for gate_id in gates_pending(gates).values_list("pk", flat=True):
        try:
            decided += _gate_decide(gate_id=gate_id, now=now or timezone.now())
        except DatabaseError:
            # (After a submission has committed, or in the job: the next run, within a
            # minute, decides what this one could not; the other gates go on.)
            logger.exception("Deciding the items of gate %s failed; the next run retries.", gate_id)
    return decided


def after_submit(*, assignment: Assignment, now: datetime) -> None:
    """After a submission's commit: the gates its stage decides (one query when none)."""
    if StageGate.objects.filter(source_stage_id=assignment.stage_id).exists():
        gate_decisions_make(source_stage_id=assignment.stage_id, now=now)


def gate_change_validate(*, gate: StageGate, changed) -> None:
    """A gate's rule may change only while its stage has no batch claimed: after that,
    decisions already made would no longer follow it."""
    if gate.pk is None or not set(changed) & set(RULE_FIELDS):
        return
    if Assignment.objects.filter(stage_id=gate.stage_id).exists():
        raise ValidationError(
            "Annotators have claimed batches of this gated stage, so its gate no longer "
            "changes: its decisions stand."
        )


def gate_validate(*, gate: StageGate) -> None:
    """What a gate's rows cannot say for themselves: its deciding stage is an earlier
    stage of the same study, of the instrument the rule reads; its groups take part in
    that stage; its category is offered there and its dimension is that stage's (the
    database's trigger refuses a later stage and another study's rows too); its
    majority of n raters is within that stage's k. Raises ``ValidationError`` by field."""
    errors: dict[str, str] = {}
    stage, source = gate.stage, gate.source_stage
    if source.study_id != stage.study_id or source.position >= stage.position:
        errors["source_stage"] = "Choose an earlier stage of the same study."
    elif StageGate.objects.filter(stage=source).exists():
        errors["source_stage"] = (
            f"{source.name} is gated itself: a gate decides on a stage with materials of its own."
        )
    else:
        likert = gate.rule == GATE_LIKERT_MEAN_AT_LEAST
        if likert and source.instrument != Stage.Instrument.LIKERT:
            errors["source_stage"] = "The Likert rule reads a Likert stage's ratings."
        if not likert and source.instrument != Stage.Instrument.COHERENCE:
            errors["source_stage"] = "This rule reads the coherence protocol's Yes and No."
        chosen = set(source.groups.values_list("pk", flat=True))
        for field in ("deciding_group", "other_group"):
            group = getattr(gate, field)
            if group is None:
                continue
            if group.study_id != stage.study_id:
                errors[field] = "Choose a group of this study."
            elif chosen and group.pk not in chosen:
                errors[field] = f"{group.name} does not take part in {source.name}."
        if gate.dimension is not None and gate.dimension.stage_id != source.pk:
            errors["dimension"] = f"Choose a dimension of {source.name}."
        if gate.category is not None and gate.category.study_id != stage.study_id:
            errors["category"] = "Choose a category of this study."
    k = source.k if source.study_id == stage.study_id else None
    if gate.min_votes and k is not None and gate.min_votes > k:
        errors["min_votes"] = (
            f"{source.name} has {k} raters per item (k): a majority of {gate.min_votes} "
            "could never be reached."
        )
    if gate.pk is None and Batch.objects.filter(stage_id=stage.pk).exists():
        errors[NON_FIELD_ERRORS] = (
            f"{stage.name} has batches of its own (imported materials): a gated stage takes "
            "its items from its gate. Use a stage without materials."
        )
    if errors:
        raise ValidationError(errors)


def stage_gates_validate(
    *,
    stages: Iterable[Stage],
    groups: Mapping[int, Iterable[int]] | None = None,
    deleted: Iterable[int] = (),
) -> dict[int, dict[str, list[str]]]:
    """What a change to saved stages would do to the gates between them: ``stages``
    as they will be saved (their ``position`` and ``overlap_k``; stages not given as
    stored), ``groups`` the groups each will have (by stage id; none: every group; a
    stage not given keeps its own). A gate's deciding stage stays before its gated
    stage, keeps the deciding groups taking part and keeps at least the gate's
    majority of raters per item. The gates of stages ``deleted`` in the same save go
    with them. Returns the problems by stage id and field."""
    given = {stage.pk: stage for stage in stages if stage.pk is not None}
    if not given:
        return {}
    gates = (
        StageGate.objects.filter(Q(stage_id__in=given) | Q(source_stage_id__in=given)).exclude(
            stage_id__in=list(deleted)
        )
    ).select_related("stage__study", "source_stage__study", "deciding_group", "other_group")
    problems: dict[int, dict[str, list[str]]] = {}

    def refuse(stage_id: int, field: str, message: str) -> None:
        problems.setdefault(stage_id, {}).setdefault(field, []).append(message)

    for gate in gates:
        gated = given.get(gate.stage_id, gate.stage)
        source = given.get(gate.source_stage_id, gate.source_stage)
        if source.position >= gated.position:
            at = gate.stage_id if gate.stage_id in given else gate.source_stage_id
            refuse(
                at,
                "position",
                f"The gate of {gated.name} decides on {source.name}'s answers: "
                f"{source.name} stays before {gated.name}.",
            )
        if source.pk not in given:
            continue
        chosen = set((groups or {}).get(source.pk, ()))
        if groups is not None and source.pk in groups and chosen:
            for group in (gate.deciding_group, gate.other_group):
                if group is not None and group.pk not in chosen:
                    refuse(
                        source.pk,
                        "groups",
                        f"{group.name} decides the gate of {gated.name}, so it keeps "
                        f"taking part in {source.name}.",
                    )
        if gate.min_votes and source.k < gate.min_votes:
            refuse(
                source.pk,
                "overlap_k",
                f"The gate of {gated.name} needs a majority of {gate.min_votes} raters: "
                f"{source.name} keeps at least {gate.min_votes} per item.",
            )
    return problems


@transaction.atomic
def gate_rule_changed(*, gate: StageGate, now: datetime | None = None) -> int:
    """The gate's rule changed before its stage had work: forget its decisions and
    batches (none claimed), and decide afresh. Returns the items decided now."""
    gate_change_validate(gate=gate, changed=RULE_FIELDS)
    stages_locked().filter(pk=gate.stage_id).first()
    gate.decisions.all().delete()
    BatchItem.objects.filter(batch__stage_id=gate.stage_id).delete()
    Batch.objects.filter(stage_id=gate.stage_id).delete()
    return _gate_decide(gate_id=gate.pk, now=now or timezone.now())


# --- deciding -----------------------------------------------------------------------------


def _votes(gate: StageGate, group_id: int, reflection_ids) -> dict[int, tuple[GateVotes, list]]:
    """Per item: what the rule reads of ``group_id``'s judgements that count in the
    deciding stage, and their ids."""
    counted = Judgement.objects.filter(
        Judgement.analysed_q(),
        assignment__stage_id=gate.source_stage_id,
        assignment__group_id=group_id,
        reflection_id__in=reflection_ids,
        opponent__isnull=True,
    )
    extra = {}
    if gate.rule == GATE_MAJORITY_CATEGORY:
        bit = 1 << gate.category.bit
        extra["flagged"] = Count("id", filter=Q(error_flags__gt=0) & Q(_flag__gt=0))
        counted = counted.annotate(_flag=F("error_flags").bitand(bit))
    rows = counted.values("reflection_id").annotate(
        raters=Count("id"),
        yes=Count("id", filter=Q(coherent=True)),
        ids=ArrayAgg("id", order_by="id"),
        **extra,
    )
    means = {}
    if gate.rule == GATE_LIKERT_MEAN_AT_LEAST:
        means = dict(
            LikertRating.objects.filter(
                judgement__in=counted.values("pk"),
                dimension_id=gate.dimension_id,
                cannot_judge=False,
            )
            .values("judgement__reflection_id")
            .annotate(mean=Avg("value"))
            .values_list("judgement__reflection_id", "mean")
        )
    return {
        row["reflection_id"]: (
            GateVotes(
                raters=row["raters"],
                yes=row["yes"],
                flagged=row.get("flagged", 0),
                mean=means.get(row["reflection_id"]),
            ),
            row["ids"],
        )
        for row in rows
    }


def _gate_decide(*, gate_id: int, now: datetime) -> int:
    with transaction.atomic():
        # The gated stage's lock first, then the gate as it stands under it (a rule
        # changed meanwhile is read as changed).
        stage_id = StageGate.objects.filter(pk=gate_id).values_list("stage_id", flat=True).first()
        if stage_id is None:
            return 0  # removed meanwhile
        stages_locked().filter(pk=stage_id).first()
        gate = (
            StageGate.objects.select_related(
                "stage", "source_stage__study", "category", "dimension"
            )
            .filter(pk=gate_id)
            .first()
        )
        if gate is None:
            return 0
        k = gate.source_stage.k
        decided = set(gate.decisions.values_list("reflection_id", flat=True))
        undecided = set(gate_items(gate).values_list("reflection_id", flat=True)) - decided
        new = []
        if undecided:
            per_group = [_votes(gate, g, undecided) for g in gate.groups_deciding]
            for reflection_id in sorted(undecided):
                found = [votes.get(reflection_id) for votes in per_group]
                if any(f is None or f[0].raters < k for f in found):
                    continue  # not all ratings are in yet
                votes = found[0][0]
                other = found[1][0] if len(found) > 1 else None
                new.append(
                    GateDecision(
                        gate=gate,
                        reflection_id=reflection_id,
                        passed=gate_passes(
                            gate.rule,
                            votes,
                            other=other,
                            min_votes=gate.min_votes,
                            threshold=gate.threshold,
                        ),
                        decided_at=now,
                        judgements=sorted(i for f in found for i in f[1]),
                        summary={
                            "groups": [
                                {
                                    "group": group_id,
                                    "raters": f[0].raters,
                                    "yes": f[0].yes,
                                    "flagged": f[0].flagged,
                                    "mean": f[0].mean,
                                }
                                for group_id, f in zip(gate.groups_deciding, found, strict=True)
                            ]
                        },
                    )
                )
            GateDecision.objects.bulk_create(new, ignore_conflicts=True)
        _batches_form(gate)
    return len(new)


def _batches_form(gate: StageGate) -> None:
    """Batches of the gated stage for the contexts now fully decided that have none."""
    have = set(Batch.objects.filter(stage_id=gate.stage_id).values_list("context_id", flat=True))
    ready = gate_decided_contexts(gate) - have
    if not ready:
        return
    passed = set(gate.decisions.filter(passed=True).values_list("reflection_id", flat=True))
    for context_id in sorted(ready):
        items = list(
            BatchItem.objects.filter(
                batch__stage_id=gate.source_stage_id, batch__context_id=context_id
            )
            .order_by("position")
            .values_list("reflection_id", "reflection__kind")
        )
        kept = [r for r, kind in items if r in passed]
        if len(kept) < gate.min_passed:
            continue  # too few passed: no batch for this context
        check = [r for r, kind in items if kind == Reflection.Kind.ATTENTION_CHECK]
        batch = Batch.objects.create(stage_id=gate.stage_id, context_id=context_id)
        BatchItem.objects.bulk_create(
            BatchItem(batch=batch, reflection_id=rid, position=position)
            for position, rid in enumerate([*kept, *check], start=1)
        )
