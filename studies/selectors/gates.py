"""Gated stages as read: a gate's items, the contexts it has decided, and the gated
stages more batches may still come to (``studies.services.gates`` decides)."""

from collections import defaultdict

from ..models import Assignment, Batch, BatchItem, Judgement, Reflection, StageGate


def gate_items(gate: StageGate):
    """The deciding stage's items a gate decides: its batches' reflections, the
    attention checks left out."""
    return BatchItem.objects.filter(batch__stage_id=gate.source_stage_id).exclude(
        reflection__kind=Reflection.Kind.ATTENTION_CHECK
    )


def gate_decided_contexts(gate: StageGate) -> set[int]:
    """Contexts every item of which the gate has decided."""
    items: dict[int, set[int]] = defaultdict(set)
    for context_id, reflection_id in gate_items(gate).values_list(
        "batch__context_id", "reflection_id"
    ):
        items[context_id].add(reflection_id)
    decided = set(gate.decisions.values_list("reflection_id", flat=True))
    return {c for c, reflections in items.items() if reflections <= decided}


def gate_pending_stage_ids(*, study_id: int) -> set[int]:
    """The study's gated stages some of whose contexts are not decided yet: more
    batches may still come to them."""
    pending: set[int] = set()
    for gate in StageGate.objects.filter(stage__study_id=study_id):
        contexts = Batch.objects.filter(stage_id=gate.source_stage_id).count()
        if len(gate_decided_contexts(gate)) < contexts:
            pending.add(gate.stage_id)
    return pending


def gate_flagged_decisions(gate: StageGate) -> list[int]:
    """Decisions that stand although a batch whose judgements made them was rejected
    since (their ids): the report flags them."""
    used = {
        judgement_id: decision_id
        for decision_id, judgement_ids in gate.decisions.values_list("pk", "judgements")
        for judgement_id in judgement_ids
    }
    rejected = Judgement.objects.filter(
        pk__in=list(used), assignment__status=Assignment.Status.REJECTED
    ).values_list("pk", flat=True)
    return sorted({used[j] for j in rejected})
