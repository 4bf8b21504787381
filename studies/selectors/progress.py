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
from .gates import gate_pending_stage_ids
from .stages import StageGroupRules, stage_group_rules
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
    takes_part: bool = True  # the group works in the stage (``protocol.group_takes_part``)

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
        if not self.takes_part:
            return 0
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
    batches_complete: int  # batches with k submitted assignments in every group taking part
    groups: list[GroupProgress]
    k: int  # the stage's (``Stage.k``)
    m: int  # the stage's (``Stage.m``)


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
    stage_rows = list(
        Stage.objects.filter(study=study).order_by("position").annotate(n_batches=Count("batches"))
    )
    for stage in stage_rows:
        stage.study = study
    k_of = {stage.pk: stage.k for stage in stage_rows}
    m_of = {stage.pk: stage.m for stage in stage_rows}
    rules = stage_group_rules(study_id=study.pk)
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
        if status == Assignment.Status.SUBMITTED and n >= k_of[stage_id]:
            complete[stage_id, group_id].add(batch_id)

    without_work, capacity = _annotators_without_work(
        study=study,
        stages=stage_rows,
        rules=rules,
        group_ids=[g[0] for g in groups],
        pending=gate_pending_stage_ids(study_id=study.pk),
    )
    rows = []
    for stage in stage_rows:
        stage_id, k, m, n_batches = stage.pk, k_of[stage.pk], m_of[stage.pk], stage.n_batches
        cells = []
        for group_id, group_name, n_annotators in groups:
            key = (stage_id, group_id)
            counts = {s: by_status.get((*key, s), 0) for s in Assignment.Status.values}
            takes_part = rules.takes_part(stage, group_id)
            cells.append(
                GroupProgress(
                    group_id=group_id,
                    name=group_name,
                    slots=n_batches * k if takes_part else 0,
                    assignments=counts,
                    batches_complete=len(complete.get(key, ())),
                    judgements=analysed.get(key, 0),
                    judgements_stored=stored.get(key, 0),
                    annotators=n_annotators,
                    batches_per_stage=m,
                    without_work=without_work.get(key, 0),
                    capacity_left=capacity.get(key, 0),
                    takes_part=takes_part,
                )
            )
        taking_part = [g[0] for g in groups if rules.takes_part(stage, g[0])]
        in_every_group = (
            set.intersection(*(complete.get((stage_id, g), set()) for g in taking_part))
            if taking_part
            else set()
        )
        rows.append(
            StageProgress(
                stage_id=stage_id,
                name=stage.name,
                position=stage.position,
                batches=n_batches,
                slots=n_batches * k,
                batches_complete=len(in_every_group),
                groups=cells,
                k=k,
                m=m,
            )
        )
    return StudyProgress(
        overlap_k=study.overlap_k,
        batches_per_stage=study.batches_per_stage,
        group_names=[g[1] for g in groups],
        stages=rows,
    )


def _annotators_without_work(
    *,
    study: Study,
    stages: list[Stage],
    rules: StageGroupRules,
    group_ids: list[int],
    pending: set[int],
):
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
    by_id = {stage.pk: stage for stage in stages}
    unfinished = {
        (stage_id, group_id): {
            b for b in stage_batches if submitted[stage_id, group_id, b] < by_id[stage_id].k
        }
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
            stage = by_id[stage_id]
            m = stage.m
            if not rules.takes_part(stage, group_id):
                continue  # not their group's stage: neither without work nor capacity
            if (
                outcomes.get(annotator_id) == TrainingStatus.FAILED
            ):  # the training quiz ended their part
                without[stage_id, group_id] += 1
                continue
            key = (stage_id, annotator_id)
            left = unfinished[stage_id, group_id]
            # (A gated stage whose items are still being decided may get more batches.)
            possible = stage_id in pending or len(left) > len(left.intersection(had.get(key, ())))
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
