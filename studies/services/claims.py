"""Handing out batches: the claim (the protocol's assignment rules).

The rules:

* **Overlap**: a batch has at most k active (assigned, in progress or submitted)
  assignments per annotator group, so it ends with exactly k valid ones (k, and m
  below, are the stage's own or the study's: ``Stage.k``, ``Stage.m``).
* **Groups**: a stage takes annotators of the groups that take part in it
  (``protocol.group_takes_part``); the others skip it.
* **Workload**: an annotator has at most m active assignments per stage and at most
  one per context per stage, chosen at random among the batches that still need
  their group, preferring the least-filled batches; reproducible from the study seed.
* **Stages in order**: stage s+1 opens for an annotator once stage s is complete for
  them (see ``annotator_stage_states``) and its minimum wait (their group's) has
  passed since their own last submission in the last stage they took part in, unless a
  researcher granted an exemption.
* **Expiry and rejection** release the slots; saved answers stay, marked by the
  assignment's status, and analysis leaves them out by default.

Annotator-facing interfaces (pages, API) call ``assignment_claim``; it is the one
path by which annotators get work, so the stage rules cannot be bypassed.
"""

import random
import time
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from ..errors import ErrorCode
from ..locks import annotators_locked, batches_locked, stages_locked, studies_locked
from ..models import (
    Annotator,
    Assignment,
    Batch,
    Judgement,
    Stage,
    Study,
)
from ..protocol import group_takes_part, order_shuffle_key, pairwise_order, shuffled_order
from ..selectors.pairs import batch_pairs, pairs_seed
from ..selectors.stages import (
    StageStatus,
    annotator_stage_states,
    claimable_batches,
    stage_tutorial_unread,
)
from .lifecycle import assignment_expire, assignments_expire_overdue
from .stages import NoWorkAvailable, StageLocked

CLAIM_ATTEMPTS = 5


def assignment_shuffled_order(
    *, batch: Batch, annotator: Annotator, group_slot: int = 1
) -> list[int] | list[list[int]]:
    """The annotator's own order of the batch's reflections, reproducible from the
    study seed (an audit can recompute it). In a pairwise stage: of the batch's pairs
    (``batch_pairs``), each ``[first, second, swapped]``, its side set by the
    annotator's ``group_slot`` (``pairwise_order``)."""
    batch = Batch.objects.select_related("stage__study", "context").get(pk=batch.pk)
    seed, position, dialogue = (
        batch.stage.study.seed,
        batch.stage.position,
        batch.context.external_id,
    )
    if batch.stage.answer_settings.compares_pairs:
        return pairwise_order(
            batch_pairs(batch=batch),
            seed=pairs_seed(seed=seed, stage_position=position, dialogue=dialogue),
            group_slot=group_slot,
            shuffle_key=order_shuffle_key(seed, annotator.pseudonym, position, dialogue),
        )
    ids = batch.items.order_by("position").values_list("reflection_id", flat=True)
    return shuffled_order(
        ids, seed=seed, pseudonym=annotator.pseudonym, stage_position=position, dialogue=dialogue
    )


def _is_recurring(*, annotator: Annotator, batch: Batch, stage: Stage) -> bool:
    return Judgement.objects.filter(
        assignment__annotator=annotator,
        assignment__batch__context_id=batch.context_id,
        assignment__stage__position__lt=stage.position,
    ).exists()


def _insert(
    *, annotator: Annotator, batch: Batch, stage: Stage, group_slot: int, now: datetime
) -> Assignment:
    study = annotator.study
    used = set(
        Assignment.objects.active()
        .filter(annotator=annotator, stage=stage)
        .values_list("annotator_slot", flat=True)
    )
    free = sorted(set(range(1, stage.m + 1)) - used)
    if not free:
        raise ValidationError(
            {"batch": f"{annotator.pseudonym} already has {stage.m} batches in {stage.name}."}
        )
    order = assignment_shuffled_order(batch=batch, annotator=annotator, group_slot=group_slot)
    if not order:
        raise ValidationError({"batch": "This batch has no reflections."})
    return Assignment.objects.create(
        annotator=annotator,
        batch=batch,
        group_id=annotator.group_id,
        stage=stage,
        group_slot=group_slot,
        annotator_slot=free[0],
        order=order,
        assigned_at=now,
        expires_at=now + study.batch_time_limit,
        is_recurring=_is_recurring(annotator=annotator, batch=batch, stage=stage),
    )


def _free_group_slot(*, batch: Batch, annotator: Annotator, k: int) -> int | None:
    taken = set(
        Assignment.objects.active()
        .filter(batch=batch, group_id=annotator.group_id)
        .values_list("group_slot", flat=True)
    )
    return next((slot for slot in range(1, k + 1) if slot not in taken), None)


@transaction.atomic
def assignment_create(
    *, annotator: Annotator, batch: Batch, now: datetime | None = None
) -> Assignment:
    """Give this particular ``batch`` to ``annotator`` (tests, admin repairs).

    Checks the pairing, overlap k and workload m, but not stage order or waiting
    periods: annotators get work only through ``assignment_claim``, which does.
    Locks the batch row so concurrent calls count the same slots, and, first, its
    study's and stage's rows.
    """
    now = now or timezone.now()
    stage_id, study_id = (
        Batch.objects.filter(pk=batch.pk).values_list("stage_id", "stage__study_id").get()
    )
    studies_locked().filter(pk=study_id).first()
    stages_locked().filter(pk=stage_id).first()
    batch = batches_locked().select_related("stage__study").get(pk=batch.pk)
    annotator = Annotator.objects.select_related("study").get(pk=annotator.pk)
    if batch.stage.study_id != annotator.study_id:
        raise ValidationError({"batch": "This batch belongs to another study."})
    if Assignment.objects.filter(annotator=annotator, batch=batch).exists():
        raise ValidationError({"batch": f"{annotator.pseudonym} already has this batch."})
    stage = batch.stage
    chosen = set(stage.groups.values_list("pk", flat=True))
    if not group_takes_part(chosen, annotator.group_id):
        raise ValidationError(
            {"batch": f"The group of {annotator.pseudonym} does not take part in {stage.name}."}
        )
    slot = _free_group_slot(batch=batch, annotator=annotator, k=stage.k)
    if slot is None:
        raise ValidationError(
            {"batch": f"This batch already has {stage.k} annotators of this group."}
        )
    return _insert(annotator=annotator, batch=batch, stage=batch.stage, group_slot=slot, now=now)


def _other_takers(
    *, annotator: Annotator, stage: Stage, study: Study, batch_ids: list[int]
) -> dict[int, int]:
    """For each batch, how many other annotators of the group could still take it
    (they have room in the stage and never had the batch)."""
    busy = {
        row["annotator_id"]: row["n"]
        for row in Assignment.objects.active()
        .filter(stage=stage, group_id=annotator.group_id)
        .values("annotator_id")
        .annotate(n=Count("id"))
    }
    with_room = {
        pk
        for pk in Annotator.objects.filter(group_id=annotator.group_id, is_active=True)
        .exclude(pk=annotator.pk)
        .values_list("pk", flat=True)
        if busy.get(pk, 0) < stage.m
    }
    # Who of the group ever had each batch of the stage (the candidates are some of
    # them; filtering on the stage spares an IN list of thousands of batch ids).
    had: dict[int, set[int]] = {}
    for batch_id, annotator_id in Assignment.objects.filter(
        stage=stage, group_id=annotator.group_id
    ).values_list("batch_id", "annotator_id"):
        had.setdefault(batch_id, set()).add(annotator_id)
    # |with_room − had| counted as |with_room| − |with_room ∩ had|: linear in the
    # handful who had each batch, not in the group's size (a 5,000-annotator study
    # has thousands of batches and of annotators per group).
    n_with_room = len(with_room)
    return {b: n_with_room - len(with_room.intersection(had.get(b, ()))) for b in batch_ids}


def _candidate_order(
    *,
    annotator: Annotator,
    stage: Stage,
    study: Study,
    candidates: list[tuple[int, int, int, str]],
) -> list[int]:
    """Batch ids in the order to try.

    Least-filled first, so the study fills evenly (and, if the study asks,
    contexts new to the annotator first). Among equally filled batches, the one
    that the fewest other annotators of the group could still take comes first: a
    plain random pick can leave a batch that only this annotator could have
    completed, stranding the last annotator of a study whose supply equals its
    demand. Remaining ties are broken by a shuffle seeded from the study seed, the
    annotator's pseudonym, the stage and how many batches they have had, so an
    audit can replay every choice.
    """
    n_had = Assignment.objects.filter(annotator=annotator).count()
    rng = random.Random(f"{study.seed}/claim/{annotator.pseudonym}/{stage.position}/{n_had}")
    shuffled = sorted(candidates, key=lambda c: c[3])  # by dialogue id, then shuffled
    rng.shuffle(shuffled)
    seen_contexts: set[int] = set()
    if study.avoid_recurrence:
        seen_contexts = set(
            Judgement.objects.filter(
                assignment__annotator=annotator, assignment__stage__position__lt=stage.position
            ).values_list("assignment__batch__context_id", flat=True)
        )
    takers = _other_takers(
        annotator=annotator, stage=stage, study=study, batch_ids=[c[0] for c in shuffled]
    )
    shuffled.sort(key=lambda c: (c[2] in seen_contexts, c[1], takers[c[0]]))
    return [batch_id for batch_id, *_ in shuffled]


def assignment_claim(*, annotator: Annotator, now: datetime | None = None) -> Assignment:
    """The annotator's current batch, or a new one for their current stage.

    Raises ``StageLocked`` (with the unlock time) or ``NoWorkAvailable``. Expired
    assignments of the study are released first.

    Locking, inside one transaction on PostgreSQL: the annotator row first, so one
    person's claims (double clicks, two tabs) run one after the other; then candidate
    batch rows one at a time, first with ``SKIP LOCKED`` so concurrent claimers spread
    over different batches, then waiting for the batches that were busy. Each batch
    lock is taken in a savepoint that is rolled back (releasing the lock) when the
    batch has no free slot, so a claim holds at most one batch lock while it waits and
    claims cannot deadlock. The group's slots of a batch are counted only while
    holding that batch's lock, and the partial unique indexes on (batch, group,
    group_slot) and (annotator, stage, annotator_slot) refuse any double that slipped
    through; a claim that loses such a race tries again.
    """
    now = now or timezone.now()
    assignments_expire_overdue(study_id=annotator.study_id, now=now)
    for attempt in range(CLAIM_ATTEMPTS):
        try:
            result = _claim_once(annotator=annotator, now=now)
        except IntegrityError:
            result = None  # a concurrent claim took the slot first: try again
        if result is not None:
            return result
        time.sleep(0.02 * (attempt + 1))
    raise NoWorkAvailable(
        ErrorCode.CLAIMS_BUSY,
        "Many people are asking for work at this moment. Please try again in a minute.",
    )


@transaction.atomic(durable=True)  # never inside another transaction: the claim retries
def _claim_once(*, annotator: Annotator, now: datetime) -> Assignment | None:
    annotator = annotators_locked().select_related("study", "group").get(pk=annotator.pk)
    study = annotator.study
    if study.status != Study.Status.OPEN:
        raise NoWorkAvailable(ErrorCode.STUDY_NOT_OPEN, "This study is not open at the moment.")
    if not annotator.is_active:
        raise NoWorkAvailable(ErrorCode.INVITATION_WITHDRAWN, "Your invitation has been withdrawn.")
    if annotator.consented_at is None:
        raise ValidationError("Please read the information sheet and give your consent first.")
    current = annotator.assignments.open().order_by("assigned_at").first()
    if current is not None:
        if not current.is_past_deadline(now):
            return current
        assignment_expire(assignment=current, now=now)
    state = next(
        (s for s in annotator_stage_states(annotator=annotator, now=now) if not s.passed),
        None,
    )
    if state is None:
        raise NoWorkAvailable(
            ErrorCode.STAGES_COMPLETED, "You have completed every stage of this study."
        )
    if state.status in (StageStatus.LOCKED, StageStatus.WAITING):
        raise StageLocked(state.stage, state.unlocks_at)
    if state.status == StageStatus.AWAITING_SCHEME:
        raise StageLocked(state.stage, state.unlocks_at, awaiting_scheme=True)
    if state.status == StageStatus.ON_PLATFORM:
        raise NoWorkAvailable(
            ErrorCode.STAGE_ON_PLATFORM,
            f"{state.stage.public_name} is open to you: please start it from its own task on "
            "the crowd platform, where it is paid.",
        )
    if state.status == StageStatus.AWAITING_ITEMS:
        raise NoWorkAvailable(
            ErrorCode.STAGE_AWAITING_ITEMS,
            f"More batches may come in {state.stage.public_name}: its items are chosen from "
            "the answers of an earlier stage, which other people are still giving. Please "
            "come back later.",
        )
    if stage_tutorial_unread(annotator=annotator, stage=state.stage):
        raise NoWorkAvailable(
            ErrorCode.STAGE_TUTORIAL_UNREAD,
            f"Please read how {state.stage.public_name} works first.",
        )

    candidates = list(
        claimable_batches(annotator=annotator, stage=state.stage, k=state.stage.k).values_list(
            "id", "n_active", "context_id", "context__external_id"
        )
    )
    if not candidates:
        raise NoWorkAvailable(
            ErrorCode.STAGE_FULL,
            f"All batches of {state.stage.public_name} have enough annotators of your group "
            "right now.",
        )
    ordered = _candidate_order(
        annotator=annotator, stage=state.stage, study=study, candidates=candidates
    )
    # First pass: only batches nobody else is claiming right now. Second pass: wait
    # (briefly: claims are short) for the ones that were busy, so a claim says "no
    # work" only when no slot is free, not merely because others were faster.
    skipped: list[int] = []
    for batch_id in ordered:
        outcome = _lock_and_take_slot(
            annotator=annotator, batch_id=batch_id, stage=state.stage, now=now, wait=False
        )
        if outcome is _BUSY:
            skipped.append(batch_id)
        elif outcome is not None:
            return outcome
    for batch_id in skipped:
        outcome = _lock_and_take_slot(
            annotator=annotator, batch_id=batch_id, stage=state.stage, now=now, wait=True
        )
        if outcome is not None and outcome is not _BUSY:
            return outcome
    raise NoWorkAvailable(
        ErrorCode.STAGE_FULL,
        f"All batches of {state.stage.public_name} have enough annotators of your group right now.",
    )


_BUSY = object()


def _lock_and_take_slot(
    *, annotator: Annotator, batch_id: int, stage: Stage, now: datetime, wait: bool
):
    """Lock one batch row and take a free group slot in it.

    Returns the new assignment, None when the group's slots are full, or ``_BUSY``
    when another claim holds the batch and ``wait`` is False. The lock is taken in a
    savepoint that is rolled back unless a slot was taken, which releases the row
    lock: a claim never holds one batch while waiting for another, so claims cannot
    deadlock on batches.
    """
    savepoint = transaction.savepoint()
    try:
        batch = batches_locked(skip_locked=not wait).filter(pk=batch_id).first()
        if batch is None:
            transaction.savepoint_rollback(savepoint)
            return _BUSY
        slot = _free_group_slot(batch=batch, annotator=annotator, k=stage.k)
        if slot is None:
            transaction.savepoint_rollback(savepoint)
            return None
        assignment = _insert(
            annotator=annotator, batch=batch, stage=stage, group_slot=slot, now=now
        )
    except IntegrityError:  # a concurrent claim took the slot first
        transaction.savepoint_rollback(savepoint)
        return None
    transaction.savepoint_commit(savepoint)
    return assignment
