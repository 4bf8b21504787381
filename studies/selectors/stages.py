"""Stage states: which stage an annotator is in, whether it is open to them, and when
it opens (stages in order, waiting periods, exemptions), for one annotator or for many
at once in a fixed number of queries (the rule itself: ``stage_states_from``)."""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, Max, Q
from django.utils import timezone

from ..models import (
    Annotator,
    Assignment,
    Batch,
    CrowdEntry,
    ErrorCategory,
    Stage,
    StageGroupWait,
    Study,
    TutorialReading,
    WaitExemption,
    stage_offered_categories,
)
from ..protocol import group_takes_part, stage_finished, stage_wait
from .gates import gate_pending_stage_ids


class StageStatus(models.TextChoices):
    """Where an annotator stands in one stage (``StageState.status``)."""

    DONE = "done", "Done"  # finished for them (``stage_finished``)
    IN_PROGRESS = "in_progress", "In progress"  # an open assignment
    OPEN = "open", "Open"  # a claim would succeed now
    # Every batch that can still be theirs is held by others for now; a slot frees up
    # if one of them runs out of time.
    BUSY = "busy", "Busy"
    # A gated stage whose items are still being decided by an earlier stage's
    # annotators: no batch for them now, but more may come.
    AWAITING_ITEMS = "awaiting_items", "More batches may come"
    # A crowd worker enters this stage through its own task on their platform.
    ON_PLATFORM = "on_platform", "On the crowd platform"
    WAITING = "waiting", "Waiting"  # the minimum wait runs until ``unlocks_at``
    # Its categories come from coding and nobody has marked the scheme final
    # (``Stage.awaits_scheme``): closed to every annotator until someone does.
    AWAITING_SCHEME = "awaiting_scheme", "Waiting for its error categories"
    LOCKED = "locked", "Locked"  # an earlier stage is not complete
    # Their group does not take part in the stage (``protocol.group_takes_part``):
    # passed over, like a stage done, but it sets no wait.
    SKIPPED = "skipped", "Not for your group"


@dataclass(frozen=True)
class StageState:
    """Where an annotator stands in one stage: ``status``, a ``StageStatus``."""

    stage: Stage
    status: StageStatus
    submitted: int
    open: int
    target: int
    unlocks_at: datetime | None
    last_submitted_at: datetime | None

    @property
    def passed(self) -> bool:
        """Behind the annotator: done, or not for their group (the next stage may open)."""
        return self.status in (StageStatus.DONE, StageStatus.SKIPPED)


def _possible_batches(*, annotator: Annotator, stage: Stage, k: int):
    """Batches of ``stage`` that can still become the annotator's: never had by them,
    and fewer than k submitted annotators of their group (slots held by open work may
    still free up). None left: the stage is finished for them."""
    group_submitted = Q(
        assignments__status=Assignment.Status.SUBMITTED, assignments__group_id=annotator.group_id
    )
    return (
        Batch.objects.filter(stage=stage)
        .exclude(assignments__annotator=annotator)
        .annotate(n_submitted=Count("assignments", filter=group_submitted))
        .filter(n_submitted__lt=k)
    )


def claimable_batches(*, annotator: Annotator, stage: Stage, k: int):
    """Batches of ``stage`` the annotator has never had and their group still needs,
    with their number of active assignments for the group."""
    group_active = Assignment.active_q("assignments__") & Q(
        assignments__group_id=annotator.group_id
    )
    return (
        Batch.objects.filter(stage=stage)
        .exclude(assignments__annotator=annotator)
        .annotate(n_active=Count("assignments", filter=group_active))
        .filter(n_active__lt=k)
    )


def annotator_stage_states(
    *, annotator: Annotator, now: datetime | None = None
) -> list[StageState]:
    """Every stage of the annotator's study, in order, with its state for them.

    A stage is finished for an annotator by ``stage_finished``: no batch of the stage
    can ever be theirs when each remaining batch has its k submitted annotators of
    their group, or they had every batch (one per context); work in a later stage
    means they left it (so a slot that opens up later never reopens it).
    The wait before the next stage counts from their last submission in the stage; who
    submitted nothing in it waits for nothing. "Start a batch" is offered for ``open``
    only, the state in which a claim succeeds.
    """
    now = now or timezone.now()
    study = annotator.study
    counts = {
        row["stage_id"]: row
        for row in Assignment.objects.filter(annotator=annotator)
        .values("stage_id")
        .annotate(**STAGE_COUNTS)
    }
    exempt = set(
        WaitExemption.objects.filter(annotator=annotator).values_list("stage_id", flat=True)
    )
    # A crowd worker works in a stage only after entering it through the platform (each
    # stage is paid there on its own).
    entries = (
        dict(CrowdEntry.objects.filter(annotator=annotator).values_list("stage_id", "outcome"))
        if annotator.platform
        else None
    )
    return stage_states_from(
        stages=list(study.stages.order_by("position")),
        group_id=annotator.group_id,
        rules=stage_group_rules(study_id=study.pk),
        pending=gate_pending_stage_ids(study_id=study.pk),
        counts=counts,
        exempt=exempt,
        entered=entries,
        possible=lambda stage: _possible_batches(
            annotator=annotator, stage=stage, k=stage.k
        ).exists(),
        claimable=lambda stage: claimable_batches(
            annotator=annotator, stage=stage, k=stage.k
        ).exists(),
        now=now,
    )


@dataclass(frozen=True)
class StageGroupRules:
    """Which groups take part in each stage (stage id → the chosen group ids; none:
    every group) and the groups' own waits (stage id → group id → wait)."""

    groups: dict[int, set[int]]
    waits: dict[int, dict[int, timedelta]]

    def takes_part(self, stage: Stage, group_id: int) -> bool:
        return group_takes_part(self.groups.get(stage.pk, ()), group_id)

    def wait(self, stage: Stage, group_id: int) -> timedelta:
        return stage_wait(stage.min_wait, self.waits.get(stage.pk, {}), group_id)


def stage_group_rules(*, study_id: int) -> StageGroupRules:
    """The study's ``StageGroupRules``, from two queries."""
    groups: dict[int, set[int]] = defaultdict(set)
    for stage_id, group_id in Stage.groups.through.objects.filter(
        stage__study_id=study_id
    ).values_list("stage_id", "annotatorgroup_id"):
        groups[stage_id].add(group_id)
    waits: dict[int, dict[int, timedelta]] = defaultdict(dict)
    for stage_id, group_id, wait in StageGroupWait.objects.filter(
        stage__study_id=study_id
    ).values_list("stage_id", "group_id", "min_wait"):
        waits[stage_id][group_id] = wait
    return StageGroupRules(dict(groups), dict(waits))


#: An annotator's assignments per stage, as ``stage_states_from`` reads them.
STAGE_COUNTS = {
    "submitted": Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
    "open": Count("id", filter=Assignment.open_q()),
    "any_active": Count("id", filter=Assignment.active_q()),
    "any_status": Count("id"),
    "last": Max("submitted_at", filter=Q(status=Assignment.Status.SUBMITTED)),
}


def stage_states_from(
    *,
    stages: list[Stage],
    group_id: int,
    rules: StageGroupRules,
    counts: dict,
    pending: set[int] = frozenset(),
    exempt: set,
    entered: dict | None,
    possible: Callable[[Stage], bool],
    claimable: Callable[[Stage], bool],
    now: datetime,
) -> list[StageState]:
    """The states of one annotator from what was counted for them (one annotator in
    ``annotator_stage_states``, many at once in ``annotators_stage_states``):
    ``counts`` (``STAGE_COUNTS`` per stage id), the stages exempt from their wait, the
    stages they entered through their platform with each entry's outcome (None: not a
    crowd worker; a stage whose part ended early, ``PARTIAL``, is left), and
    whether a batch of a stage can still be theirs (``possible``) or be claimed now
    (``claimable``), asked only when needed. A stage whose categories come from coding
    opens to nobody before its scheme is final (``Stage.awaits_scheme``). A stage their
    group (``group_id``) does not take part in is skipped (``rules``): the stage after
    it waits from their last submission in a stage they took part in, for its wait
    for their group. A gated stage some of whose items are still undecided
    (``pending``) may get more batches: it is not finished for them, and without a
    batch to claim they wait for it."""
    # Any assignment in a later stage, whatever became of it, means the annotator has
    # left this stage; so does a crowd worker's part that ended early.
    left = {
        stage.pk: any(counts.get(s.pk, {}).get("any_status") for s in stages[i + 1 :])
        or (entered or {}).get(stage.pk) == CrowdEntry.Outcome.PARTIAL
        for i, stage in enumerate(stages)
    }

    states: list[StageState] = []
    previous: StageState | None = None  # the last stage their group took part in
    for stage in stages:
        row = counts.get(stage.pk, {})
        submitted, open_, last = row.get("submitted", 0), row.get("open", 0), row.get("last")
        m = stage.m
        unlocks_at = None
        if not rules.takes_part(stage, group_id):
            states.append(StageState(stage, StageStatus.SKIPPED, submitted, open_, 0, None, last))
            continue
        if previous is not None and not previous.passed:
            status = StageStatus.LOCKED
        else:
            if (
                previous is not None
                and stage.pk not in exempt
                and previous.last_submitted_at is not None
            ):
                unlocks_at = previous.last_submitted_at + rules.wait(stage, group_id)
            if open_:
                status = StageStatus.IN_PROGRESS
            elif stage_finished(
                open_=open_,
                submitted=submitted,
                m=m,
                left=left[stage.pk],
                # Asked only when the cheaper reasons do not already settle it.
                batch_possible=left[stage.pk]
                or submitted >= m
                or stage.pk in pending
                or possible(stage),
            ):
                status = StageStatus.DONE
            elif stage.awaits_scheme:
                status = StageStatus.AWAITING_SCHEME
            elif unlocks_at is not None and now < unlocks_at and not row.get("any_active"):
                status = StageStatus.WAITING
            elif entered is not None and stage.pk not in entered:
                status = StageStatus.ON_PLATFORM
            elif not claimable(stage):
                status = StageStatus.AWAITING_ITEMS if stage.pk in pending else StageStatus.BUSY
            else:
                status = StageStatus.OPEN
        state = StageState(stage, status, submitted, open_, m, unlocks_at, last)
        states.append(state)
        previous = state
    return states


def stage_unlock_time(*, annotator: Annotator, stage: Stage) -> datetime | None:
    """When ``stage`` opens (or opened) for ``annotator``; None while an earlier stage is
    incomplete, and for the first stage."""
    for state in annotator_stage_states(annotator=annotator):
        if state.stage.pk == stage.pk:
            return state.unlocks_at
    raise ValidationError({"stage": "This stage belongs to another study."})


def annotators_stage_states(
    *, study: Study, annotators, now: datetime | None = None
) -> dict[int, list[StageState]]:
    """``annotator_stage_states`` for each of ``annotators`` (a queryset of the study's
    annotators), by annotator id, from nine queries: the stages, the groups taking
    part in each and their own waits, the annotators, their assignments counted per
    stage, their wait exemptions, their crowd entries, the study's batches, and per
    batch and group the slots submitted and held."""
    now = now or timezone.now()
    stages = list(Stage.objects.filter(study=study).select_related("study").order_by("position"))
    rules = stage_group_rules(study_id=study.pk)
    pending = gate_pending_stage_ids(study_id=study.pk)
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
            b not in had[annotator_id] and taken.get((b, group_id), 0) < stage.k
            for b in batches[stage.pk]
        )

    return {
        pk: stage_states_from(
            stages=stages,
            group_id=group_id,
            rules=rules,
            pending=pending,
            counts=counts[pk],
            exempt=exempt[pk],
            entered=entered[pk] if platform else None,
            possible=lambda stage, pk=pk, g=group_id: any_batch(pk, g, stage, submitted),
            claimable=lambda stage, pk=pk, g=group_id: any_batch(pk, g, stage, held),
            now=now,
        )
        for pk, group_id, platform in people
    }


def study_stage_categories(*, study_id: int) -> dict[int, list[ErrorCategory]]:
    """The error categories each stage of the study offers (stage id → categories in
    display order; the rule: ``stage_offered_categories``), from three queries. The
    analysis asks this (the annotation pages read the same from their one query,
    ``hot_path.reads``); the annotation exports keep one column per study category."""
    categories = list(ErrorCategory.objects.filter(study_id=study_id))
    chosen: dict[int, set[int]] = defaultdict(set)
    for stage_id, category_id in Stage.categories.through.objects.filter(
        stage__study_id=study_id
    ).values_list("stage_id", "errorcategory_id"):
        chosen[stage_id].add(category_id)
    return {
        stage_id: stage_offered_categories(categories, chosen[stage_id])
        for stage_id in Stage.objects.filter(study_id=study_id).values_list("pk", flat=True)
    }


def stage_categories(*, stage: Stage) -> list[ErrorCategory]:
    """The error categories ``stage`` offers, in display order."""
    categories = list(ErrorCategory.objects.filter(study_id=stage.study_id))
    return stage_offered_categories(categories, set(stage.categories.values_list("pk", flat=True)))


def stage_tutorial_due(*, annotator: Annotator, states: list[StageState]) -> Stage | None:
    """The stage whose tutorial the annotator reads before going on, else None: the
    stage they are about to work in (the first not done, when open to them or in
    progress) if it has a tutorial of its own (``Stage.has_own_tutorial``) they have
    not confirmed (``TutorialReading``). So a second phase that explains its
    categories is read before its first batch, and not while its wait runs."""
    current = next((s for s in states if not s.passed), None)
    if current is None or current.status not in (StageStatus.OPEN, StageStatus.IN_PROGRESS):
        return None
    return (
        current.stage if stage_tutorial_unread(annotator=annotator, stage=current.stage) else None
    )


def stage_tutorial_unread(*, annotator: Annotator, stage: Stage) -> bool:
    """``stage`` has a tutorial of its own the annotator has not confirmed: no batch of
    it before they do (``stage_tutorial_due`` for the pages, the claim for every
    way in)."""
    return (
        stage.has_own_tutorial
        and not TutorialReading.objects.filter(annotator=annotator, stage=stage).exists()
    )
