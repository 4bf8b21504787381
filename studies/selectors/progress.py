"""Where a study's data collection stands: one reading for the admin, the API, the
dashboard and crowd entry."""

import math
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from ..models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    CrowdEntry,
    Judgement,
    Stage,
    Study,
)
from ..protocol import stage_finished
from .training import TrainingStatus, training_outcomes


@dataclass(frozen=True)
class GroupProgress:
    """One group's work in one stage, in assignment slots (each batch has k per group)."""

    group_id: int
    name: str
    slots: int  # batches × k
    assignments: dict[str, int]  # by status, every status present
    batches_complete: int  # batches with k submitted assignments of this group
    judgements: int  # the judgements that count for analysis (Judgement.analysed_q)
    judgements_stored: int  # every stored answer, whatever became of its assignment
    annotators: int  # the group's participating annotators (AnnotatorQuerySet.participating)
    batches_per_stage: int  # m
    # Annotators of the group with fewer than m batches submitted in the stage, nothing
    # open in it, and no batch of it that can ever be theirs (annotator_stage_states'
    # rule): they can no longer get work here.
    without_work: int = 0
    capacity_left: int | None = None  # batches the group's others can still take

    @property
    def submitted(self) -> int:
        return self.assignments[Assignment.Status.SUBMITTED]

    @property
    def in_progress(self) -> int:
        """Open assignments (assigned or in progress): holding a slot, not done."""
        return sum(self.assignments[s] for s in Assignment.OPEN)

    @property
    def held(self) -> int:
        """Slots held by active assignments (``Assignment.ACTIVE``)."""
        return sum(self.assignments[s] for s in Assignment.ACTIVE)

    @property
    def open_slots(self) -> int:
        """Slots nobody holds: what the group still needs."""
        return max(0, self.slots - self.held)

    @property
    def annotators_needed(self) -> int:
        """Invitations still needed to fill the open slots: each annotator of the group
        can still take ``m`` minus the batches they hold in the stage; the open slots
        beyond that need ``m`` per new annotator. (A batch takes at most one slot per
        annotator, so with few batches left the real need can be slightly higher.)"""
        m = self.batches_per_stage
        capacity_left = (
            self.capacity_left
            if self.capacity_left is not None
            else max(0, self.annotators * m - self.held)
        )
        return math.ceil(max(0, self.open_slots - capacity_left) / m)


@dataclass(frozen=True)
class StageProgress:
    stage_id: int
    name: str
    position: int
    batches: int
    slots: int  # per group: batches × k
    batches_complete: int  # batches with k submitted assignments in every group
    groups: list[GroupProgress]


@dataclass(frozen=True)
class StudyProgress:
    overlap_k: int
    batches_per_stage: int
    group_names: list[str]
    stages: list[StageProgress]

    def cell(self, *, stage_position: int, group_id: int) -> GroupProgress | None:
        return next(
            (
                g
                for s in self.stages
                if s.position == stage_position
                for g in s.groups
                if g.group_id == group_id
            ),
            None,
        )


def study_progress(*, study: Study) -> StudyProgress:
    """Per stage (in order) and group (by name): assignments by status, complete
    batches, judgements, participating annotators and invitations needed, in three
    aggregate queries (and ``_annotators_without_work``'s)."""
    k, m = study.overlap_k, study.batches_per_stage
    stages = list(
        Stage.objects.filter(study=study)
        .order_by("position")
        .annotate(n_batches=Count("batches"))
        .values_list("id", "name", "position", "n_batches")
    )
    headcount = (
        Annotator.objects.participating()
        .filter(group=OuterRef("pk"))
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    groups = list(
        AnnotatorGroup.objects.filter(study=study)
        .order_by("name", "id")
        .annotate(n_annotators=Coalesce(Subquery(headcount, output_field=IntegerField()), 0))
        .values_list("id", "name", "n_annotators")
    )
    # Assignments by batch and status with their judgements counted, in one grouped
    # query (a row per batch, group and status: a batch is complete for a group with k
    # submitted assignments).
    by_status: dict[tuple[int, int, str], int] = defaultdict(int)
    stored: dict[tuple[int, int], int] = defaultdict(int)
    analysed: dict[tuple[int, int], int] = defaultdict(int)
    complete: dict[tuple[int, int], set[int]] = defaultdict(set)
    for stage_id, group_id, status, batch_id, n, n_stored, n_analysed in (
        Assignment.objects.filter(stage__study=study)
        .order_by()
        .values("stage_id", "group_id", "status", "batch_id")
        .annotate(
            n=Count("id", distinct=True),
            n_stored=Count("judgements"),
            n_analysed=Count(
                "judgements",
                filter=Judgement.analysed_q(prefix="judgements__", assignment_prefix=""),
            ),
        )
        .values_list("stage_id", "group_id", "status", "batch_id", "n", "n_stored", "n_analysed")
    ):
        by_status[stage_id, group_id, status] += n
        stored[stage_id, group_id] += n_stored
        analysed[stage_id, group_id] += n_analysed
        if status == Assignment.Status.SUBMITTED and n >= k:
            complete[stage_id, group_id].add(batch_id)

    without_work, capacity = _annotators_without_work(
        study=study, k=k, m=m, group_ids=[g[0] for g in groups]
    )
    rows = []
    for stage_id, stage_name, position, n_batches in stages:
        cells = []
        for group_id, group_name, n_annotators in groups:
            key = (stage_id, group_id)
            counts = {s: by_status.get((*key, s), 0) for s in Assignment.Status.values}
            cells.append(
                GroupProgress(
                    group_id=group_id,
                    name=group_name,
                    slots=n_batches * k,
                    assignments=counts,
                    batches_complete=len(complete.get(key, ())),
                    judgements=analysed.get(key, 0),
                    judgements_stored=stored.get(key, 0),
                    annotators=n_annotators,
                    batches_per_stage=m,
                    without_work=without_work.get(key, 0),
                    capacity_left=capacity.get(key, 0),
                )
            )
        in_every_group = (
            set.intersection(*(complete.get((stage_id, g[0]), set()) for g in groups))
            if groups
            else set()
        )
        rows.append(
            StageProgress(
                stage_id=stage_id,
                name=stage_name,
                position=position,
                batches=n_batches,
                slots=n_batches * k,
                batches_complete=len(in_every_group),
                groups=cells,
            )
        )
    return StudyProgress(
        overlap_k=k, batches_per_stage=m, group_names=[g[1] for g in groups], stages=rows
    )


def _annotators_without_work(*, study: Study, k: int, m: int, group_ids: list[int]):
    """Per (stage, group): how many of the group's active annotators can no longer get
    work in the stage (finished by ``stage_finished`` short of m batches: no batch of
    the stage can ever be theirs, every batch they never had has k submitted annotators
    of their group; or their part ended early on a crowd platform; or the training
    quiz ended their part), and how many batches the others can still take (m minus
    what they hold), for every annotator at once from five queries (batches,
    assignments, annotators, crowd entries, training attempts)."""
    batches: dict[int, set[int]] = defaultdict(set)
    for batch_id, stage_id in Batch.objects.filter(stage__study=study).values_list(
        "id", "stage_id"
    ):
        batches[stage_id].add(batch_id)
    submitted: dict[tuple[int, int, int], int] = defaultdict(int)  # (stage, group, batch)
    had: dict[tuple[int, int], set[int]] = defaultdict(set)  # (stage, annotator)
    held: dict[tuple[int, int], int] = defaultdict(int)
    done: dict[tuple[int, int], int] = defaultdict(int)
    open_: set[tuple[int, int]] = set()
    for stage_id, group_id, annotator_id, batch_id, status in Assignment.objects.filter(
        stage__study=study
    ).values_list("stage_id", "group_id", "annotator_id", "batch_id", "status"):
        had[stage_id, annotator_id].add(batch_id)
        if status == Assignment.Status.SUBMITTED:
            submitted[stage_id, group_id, batch_id] += 1
            done[stage_id, annotator_id] += 1
        if status in Assignment.ACTIVE:
            held[stage_id, annotator_id] += 1
        if status in Assignment.OPEN:
            open_.add((stage_id, annotator_id))
    without: dict[tuple[int, int], int] = defaultdict(int)
    capacity: dict[tuple[int, int], int] = defaultdict(int)
    # Batches short of k submitted annotators, per stage and group; someone can still
    # get one unless they had every one of them (linear in what each person had).
    groups = set(group_ids)
    unfinished = {
        (stage_id, group_id): {b for b in stage_batches if submitted[stage_id, group_id, b] < k}
        for stage_id, stage_batches in batches.items()
        for group_id in groups
    }
    # People a screening questionnaire screened out will never take a batch.
    people = Annotator.objects.filter(study=study).participating().values_list("pk", "group_id")
    outcomes = training_outcomes(study=study)
    # Crowd workers whose part of a stage ended early (they left it).
    ended_early = set(
        CrowdEntry.objects.filter(
            stage__study=study, outcome=CrowdEntry.Outcome.PARTIAL
        ).values_list("stage_id", "annotator_id")
    )
    for annotator_id, group_id in people:
        for stage_id in batches:
            if (
                outcomes.get(annotator_id) == TrainingStatus.FAILED
            ):  # the training quiz ended their part
                without[stage_id, group_id] += 1
                continue
            key = (stage_id, annotator_id)
            left = unfinished[stage_id, group_id]
            possible = len(left) > len(left.intersection(had.get(key, ())))
            finished = stage_finished(
                open_=int(key in open_),
                submitted=done[key],
                m=m,
                batch_possible=possible,
                left=key in ended_early,
            )
            if finished and done[key] < m:
                without[stage_id, group_id] += 1
            elif possible:
                capacity[stage_id, group_id] += max(0, m - held[key])
    return without, capacity
