"""After the claim: submitting (with the attention check), expiring and rejecting
assignments. Expiry and rejection release the slots; saved answers stay, marked by
the assignment's status, and analysis leaves them out by default."""

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..limits import cap_message
from ..locks import assignments_locked
from ..models import (
    Assignment,
    ErrorCategory,
    Judgement,
    LikertRating,
    Reflection,
    Study,
)
from ..protocol import category_selected, order_keys, pair_winner
from .drafts import assignment_drafts_clear
from .gates import after_submit


def _attention_outcome(*, assignment: Assignment) -> bool | None:
    """Passed when the attention-check item was answered No with at least one of the
    categories the study marks as catching it (``ErrorCategory.catches_attention_check``;
    in a stage that asks for no categories: No alone); None for a batch without an
    attention-check item. In a Likert stage: the check's dimension rated within its
    passing ratings (``LikertDimension.passes_attention``). In a pairwise stage: the
    off-topic candidate lost its pair (a tie fails). In a ranking stage: it was ranked
    last, alone in last place."""
    settings = assignment.stage.answer_settings
    attention = Judgement.objects.filter(
        assignment=assignment, reflection__kind=Reflection.Kind.ATTENTION_CHECK
    ).first()
    if attention is None:
        return None
    if settings.compares_pairs:
        # The off-topic candidate is the pair's first: the second must win.
        return pair_winner(attention.choice, attention.shown_swapped) == 1
    if settings.ranks_candidates:
        # Alone in last place: a competition rank of n (all the others above it).
        return attention.rank == len(assignment.order)
    if settings.rates_dimensions:
        # A Likert stage: the check's candidate rated within the passing ratings on
        # the check's dimension ("cannot judge" never passes; no check dimension: not
        # checked).
        rating = (
            LikertRating.objects.filter(judgement=attention, dimension__checks_attention=True)
            .select_related("dimension")
            .first()
        )
        if rating is None:
            return None
        return rating.dimension.passes_attention(rating.value, rating.cannot_judge)
    if attention.coherent:
        return False
    if not settings.asks_categories:
        return True
    catching = ErrorCategory.objects.filter(
        study_id=assignment.stage.study_id, catches_attention_check=True
    ).values_list("bit", flat=True)
    return any(category_selected(attention.error_flags, bit) for bit in catching)


def assignment_submit(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Submit a batch whose every item is answered. Final; idempotent for a batch
    already submitted. Records the attention-check outcome; a failure rejects the
    assignment when the study says so (the annotator is not told). Locks the
    assignment row; never runs inside another transaction (the expiry before it must
    stand on its own)."""
    now = now or timezone.now()
    expire_if_overdue(assignment_id=assignment.pk, now=now)
    with transaction.atomic(durable=True):
        submitted = _submit(assignment_id=assignment.pk, now=now)
    after_submit(assignment=submitted, now=now)  # the gates its stage decides
    return submitted


def _submit(*, assignment_id: int, now: datetime) -> Assignment:
    assignment = assignments_locked().select_related("stage__study").get(pk=assignment_id)
    if assignment.submitted_at is not None:
        # Submitted already (a double click, a retried request), perhaps rejected since
        # for its attention check, which the annotator is not told.
        return assignment
    if assignment.status == Assignment.Status.EXPIRED:
        raise ValidationError("The time for this batch ran out before it was submitted.")
    if not assignment.is_open:
        raise ValidationError(
            f"This batch is {assignment.get_status_display().lower()} and cannot be submitted."
        )
    answered = set(assignment.judgements.values_list("reflection_id", "opponent_id"))
    missing = [key for key in order_keys(assignment.order) if key not in answered]
    settings = assignment.stage.answer_settings
    if missing and settings.ranks_candidates:
        raise ValidationError("The ranking is not saved yet.")
    if missing:
        what = "pairs" if settings.compares_pairs else "response candidates"
        raise ValidationError(
            f"{len(missing)} of {len(assignment.order)} {what} are not answered yet."
        )
    assignment.attention_passed = _attention_outcome(assignment=assignment)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    study = assignment.stage.study
    if assignment.attention_passed is False and study.attention_failure_policy == (
        Study.AttentionPolicy.REJECT
    ):
        assignment.status = Assignment.Status.REJECTED
        assignment.rejected_at = now
        assignment.rejection_reason = "Failed the attention check (rejected automatically)."
    assignment.save()
    assignment_drafts_clear(assignment_id=assignment.pk)  # every item is saved now
    return assignment


def expire_if_overdue(*, assignment_id: int, now: datetime) -> bool:
    """Expire this assignment if its time is up (in its own transaction, so the expiry
    stands even when the caller then refuses the request)."""
    return bool(Assignment.objects.filter(pk=assignment_id).overdue(now).expire(now))


def assignment_expire(*, assignment: Assignment, now: datetime | None = None) -> int:
    """Expire one open assignment; its answers stay, its slots are released."""
    now = now or timezone.now()
    return Assignment.objects.filter(pk=assignment.pk).expire(now)


def assignments_expire_overdue(
    *, study_id: int | None = None, annotator_id: int | None = None, now: datetime | None = None
) -> int:
    """Expire every open assignment past its deadline (lazily on claims and page views,
    and by the periodic task), optionally of one study or annotator. Returns how many
    expired."""
    now = now or timezone.now()
    qs = Assignment.objects.overdue(now)
    if study_id is not None:
        qs = qs.filter(stage__study_id=study_id)
    if annotator_id is not None:
        qs = qs.filter(annotator_id=annotator_id)
    return qs.expire(now)


@transaction.atomic
def assignment_reject(
    *, assignment: Assignment, reason: str, by=None, now: datetime | None = None
) -> Assignment:
    """A researcher invalidates an assignment; its slot goes to the next annotator."""
    now = now or timezone.now()
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give a reason for the rejection."})
    cap = Assignment._meta.get_field("rejection_reason").max_length
    if len(reason) > cap:
        raise ValidationError({"reason": cap_message(cap, len(reason))})
    assignment = assignments_locked().get(pk=assignment.pk)
    if assignment.status not in Assignment.ACTIVE:
        raise ValidationError(
            f"Only assigned, in-progress or submitted work can be rejected; this one is "
            f"{assignment.get_status_display().lower()}."
        )
    assignment.status = Assignment.Status.REJECTED
    assignment.rejected_at = now
    assignment.rejected_by = by
    assignment.rejection_reason = reason
    assignment.save(
        update_fields=["status", "rejected_at", "rejected_by", "rejection_reason", "updated_at"]
    )
    assignment_drafts_clear(assignment_id=assignment.pk)  # it takes no more answers
    return assignment
