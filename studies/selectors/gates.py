"""Gated stages as read: a gate's items, the contexts it has decided, and the gated
stages more batches may still come to (``studies.services.gates`` decides)."""

from collections import defaultdict

from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce

from ..models import Assignment, BatchItem, GateDecision, Judgement, Reflection, StageGate


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


def gates_pending(gates=None):
    """The gates (of ``gates``, a queryset; default all) some of whose items are not
    decided yet, so some context is not: one query. A gate has at most one decision
    per item, so it has decided every context once it has as many decisions as items."""
    items = (
        BatchItem.objects.filter(batch__stage_id=OuterRef("source_stage_id"))
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by()
        .values("batch__stage_id")
        .annotate(n=Count("reflection_id", distinct=True))
        .values("n")
    )
    decided = (
        GateDecision.objects.filter(gate_id=OuterRef("pk"))
        .order_by()
        .values("gate_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        (StageGate.objects.all() if gates is None else gates)
        .annotate(
            n_items=Coalesce(Subquery(items), 0),
            n_decided=Coalesce(Subquery(decided), 0),
        )
        .filter(n_decided__lt=F("n_items"))
    )


def gate_pending_stage_ids(*, study_id: int) -> set[int]:
    """The study's gated stages more batches may still come to (``gates_pending``):
    one query, which the home page, claims and progress make."""
    return set(
        gates_pending(StageGate.objects.filter(stage__study_id=study_id)).values_list(
            "stage_id", flat=True
        )
    )


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
