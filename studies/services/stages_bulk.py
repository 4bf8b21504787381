"""The stage states of many annotators at once, in a fixed number of queries whatever
their number (the rule itself: ``studies.services.stages.stage_states_from``)."""

from collections import defaultdict
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from ..models import Assignment, Batch, CrowdEntry, Stage, Study, WaitExemption
from .stages import STAGE_COUNTS, StageState, stage_states_from


def annotators_stage_states(
    *, study: Study, annotators, now: datetime | None = None
) -> dict[int, list[StageState]]:
    """``annotator_stage_states`` for each of ``annotators`` (a queryset of the study's
    annotators), by annotator id, from seven queries: the stages, the annotators, their
    assignments counted per stage, their wait exemptions, their crowd entries, the
    study's batches, and per batch and group the slots submitted and held."""
    now = now or timezone.now()
    k, m = study.overlap_k, study.batches_per_stage
    stages = list(Stage.objects.filter(study=study).order_by("position"))
    people = list(annotators.values_list("pk", "group_id", "platform"))
    ids = annotators.values("pk")
    counts: dict[int, dict[int, dict]] = defaultdict(dict)
    for row in (
        Assignment.objects.filter(annotator__in=ids)
        .values("annotator_id", "stage_id")
        .annotate(**STAGE_COUNTS)
    ):
        counts[row["annotator_id"]][row["stage_id"]] = row
    exempt: dict[int, set[int]] = defaultdict(set)
    for annotator_id, stage_id in WaitExemption.objects.filter(annotator__in=ids).values_list(
        "annotator_id", "stage_id"
    ):
        exempt[annotator_id].add(stage_id)
    entered: dict[int, dict[int, str]] = defaultdict(dict)
    for annotator_id, stage_id, outcome in CrowdEntry.objects.filter(annotator__in=ids).values_list(
        "annotator_id", "stage_id", "outcome"
    ):
        entered[annotator_id][stage_id] = outcome
    batches: dict[int, list[int]] = defaultdict(list)
    for batch_id, stage_id in Batch.objects.filter(stage__study=study).values_list(
        "id", "stage_id"
    ):
        batches[stage_id].append(batch_id)
    submitted: dict[tuple[int, int], int] = {}
    held: dict[tuple[int, int], int] = {}
    for batch_id, group_id, n_submitted, n_held in (
        Assignment.objects.filter(stage__study=study)
        .values("batch_id", "group_id")
        .annotate(
            n_submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            n_held=Count("id", filter=Assignment.active_q()),
        )
        .values_list("batch_id", "group_id", "n_submitted", "n_held")
    ):
        submitted[batch_id, group_id] = n_submitted
        held[batch_id, group_id] = n_held
    had: dict[int, set[int]] = defaultdict(set)
    for annotator_id, batch_id in Assignment.objects.filter(annotator__in=ids).values_list(
        "annotator_id", "batch_id"
    ):
        had[annotator_id].add(batch_id)

    def any_batch(annotator_id, group_id, stage, taken) -> bool:
        return any(
            b not in had[annotator_id] and taken.get((b, group_id), 0) < k
            for b in batches[stage.pk]
        )

    return {
        pk: stage_states_from(
            stages=stages,
            m=m,
            counts=counts[pk],
            exempt=exempt[pk],
            entered=entered[pk] if platform else None,
            possible=lambda stage, pk=pk, g=group_id: any_batch(pk, g, stage, submitted),
            claimable=lambda stage, pk=pk, g=group_id: any_batch(pk, g, stage, held),
            now=now,
        )
        for pk, group_id, platform in people
    }
