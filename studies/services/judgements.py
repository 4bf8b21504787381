"""Recording annotators' answers (BRIEF §4) with the same rules as the database."""

from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..models import Assignment, ErrorCategory, Judgement, Reflection
from ..protocol import EMPATHY_SCALE

# --- judgements --------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """An annotator's answer for one response candidate, as submitted."""

    coherent: bool
    categories: frozenset[str] = field(default_factory=frozenset)
    most_evident: str | None = None
    empathy: int | None = None
    seconds_spent: float | None = None


@dataclass(frozen=True)
class EncodedAnswer:
    coherent: bool
    error_flags: int
    most_evident_bit: int | None
    empathy: int | None
    seconds_spent: float | None


def answer_encode(
    *, answer: Answer, categories: dict[str, int], require_complete: bool = True
) -> EncodedAnswer:
    """Check ``answer`` against the protocol (BRIEF §4) and the database rules and turn
    category slugs into the stored bit set.

    ``categories`` maps the study's category slugs to their bits. With
    ``require_complete`` (the annotation interface) a No needs at least one category,
    two or more categories need a most evident error, and a Yes needs the 5-point
    rating. Imported published data may lack those, so importers pass False; the
    consistency rules that the database enforces always apply.
    """
    errors: dict[str, str] = {}
    unknown = sorted(answer.categories - categories.keys())
    if unknown:
        errors["categories"] = f"Unknown error categories: {', '.join(unknown)}."
    if answer.coherent:
        if answer.categories:
            errors["categories"] = "Error categories can only be chosen when the answer is No."
        if answer.most_evident is not None:
            errors["most_evident"] = (
                "A most evident error can only be chosen when the answer is No."
            )
        if answer.empathy is None and require_complete:
            errors["empathy"] = "Choose how much you agree with the statement."
    else:
        if answer.empathy is not None:
            errors["empathy"] = "The agreement rating is only asked when the answer is Yes."
        if require_complete and not answer.categories:
            errors["categories"] = "Choose at least one error category."
        if answer.most_evident is not None and answer.most_evident not in answer.categories:
            errors["most_evident"] = "The most evident error must be one of the chosen categories."
        elif answer.most_evident is None and len(answer.categories) >= 2 and require_complete:
            errors["most_evident"] = "Choose the most evident error among the chosen categories."
    if answer.empathy is not None and answer.empathy not in EMPATHY_SCALE:
        errors["empathy"] = "The agreement rating must be between 1 and 5."
    if answer.seconds_spent is not None and answer.seconds_spent < 0:
        errors["seconds_spent"] = "Time spent cannot be negative."
    if errors:
        raise ValidationError(errors)

    flags = 0
    for slug in answer.categories:
        flags |= 1 << categories[slug]
    most_evident = answer.most_evident
    if most_evident is None and len(answer.categories) == 1:
        # BRIEF §5: a single chosen category is that annotator's most evident error.
        (most_evident,) = answer.categories
    return EncodedAnswer(
        coherent=answer.coherent,
        error_flags=flags,
        most_evident_bit=categories[most_evident] if most_evident is not None else None,
        empathy=answer.empathy,
        seconds_spent=answer.seconds_spent,
    )


def study_category_bits(*, study_id: int) -> dict[str, int]:
    return dict(ErrorCategory.objects.filter(study_id=study_id).values_list("slug", "bit"))


STALE_MESSAGE = (
    "This answer was changed since this page was loaded (in another tab, or by an "
    "earlier click that arrived late). The saved answer is shown: check it and save again."
)


def judgement_record(
    *,
    assignment: Assignment,
    reflection: Reflection,
    answer: Answer,
    now: datetime | None = None,
    categories: dict[str, int] | None = None,
    expected_revision: int | None = None,
) -> Judgement:
    """Save (or revise) one answer of an open assignment. Idempotent: saving the same
    answer twice leaves one row.

    An assignment past its deadline is expired first (and the answer refused). Locks
    the assignment row so a concurrent submit or expiry cannot slip in between the
    status check and the write. ``categories`` (slug → bit) spares a query when the
    caller has read the study's categories already. ``expected_revision`` is the
    revision the annotator's page showed (0: no answer yet); when another save came in
    since, the answer is refused (``ValidationError`` with code ``"stale"``) and
    nothing is written. Without it, the save is unconditional.
    """
    from .assignments import expire_if_overdue

    now = now or timezone.now()
    if assignment.expires_at is None or assignment.expires_at <= now:
        # Past its deadline as the caller saw it: expire it in its own transaction, so
        # the expiry stands although the answer is refused below.
        expire_if_overdue(assignment_id=assignment.pk, now=now)
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("stage")
            .get(pk=assignment.pk)
        )
        if assignment.status == Assignment.Status.EXPIRED or (
            assignment.status in Assignment.OPEN and assignment.expires_at <= now
        ):
            raise ValidationError(
                "The time for this batch ran out; answers can no longer be changed."
            )
        if assignment.status not in Assignment.OPEN:
            raise ValidationError(
                f"This batch is {assignment.get_status_display().lower()}; answers can no "
                "longer be changed."
            )
        if reflection.pk not in assignment.order:
            raise ValidationError(
                {"reflection": "This response candidate is not part of this batch."}
            )
        current = (
            Judgement.objects.filter(assignment=assignment, reflection_id=reflection.pk)
            .values_list("revision", flat=True)
            .first()
        ) or 0
        if expected_revision is not None and expected_revision != current:
            raise ValidationError(STALE_MESSAGE, code="stale")
        if categories is None:
            categories = study_category_bits(study_id=assignment.stage.study_id)
        encoded = answer_encode(answer=answer, categories=categories)
        # One INSERT ... ON CONFLICT DO UPDATE (no SELECT, no savepoints): the row of
        # (assignment, reflection) is created or revised; created_at stays the first.
        (judgement,) = Judgement.objects.bulk_create(
            [
                Judgement(
                    assignment=assignment,
                    reflection_id=reflection.pk,
                    coherent=encoded.coherent,
                    error_flags=encoded.error_flags,
                    most_evident_bit=encoded.most_evident_bit,
                    empathy=encoded.empathy,
                    seconds_spent=encoded.seconds_spent,
                    revision=current + 1,
                    created_at=now,
                    updated_at=now,
                )
            ],
            update_conflicts=True,
            unique_fields=["assignment", "reflection"],
            update_fields=[
                "coherent",
                "error_flags",
                "most_evident_bit",
                "empathy",
                "seconds_spent",
                "revision",
                "updated_at",
            ],
        )
        if assignment.status == Assignment.Status.ASSIGNED:
            assignment.status = Assignment.Status.IN_PROGRESS
            assignment.started_at = now
            assignment.save(update_fields=["status", "started_at", "updated_at"])
    return judgement
