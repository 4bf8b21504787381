"""Recording annotators' answers (BRIEF §4) with the same rules as the database."""

from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.utils import timezone

from ..hot_path import (
    AssignmentClosed,
    EncodedAnswer,
    StaleAnswer,
    answer_save,
)
from ..models import Assignment, ErrorCategory, Judgement, Reflection, Stage
from ..protocol import EMPATHY_SCALE

__all__ = [
    "Answer",
    "AssignmentClosed",
    "EncodedAnswer",
    "StaleAnswer",
    "answer_encode",
    "judgement_record",
    "judgement_record_item",
    "study_category_bits",
]


@dataclass(frozen=True)
class Answer:
    """An annotator's answer for one response candidate, as submitted."""

    coherent: bool
    categories: frozenset[str] = field(default_factory=frozenset)
    most_evident: str | None = None
    empathy: int | None = None
    seconds_spent: float | None = None


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

    An assignment past its deadline is expired (and the answer refused with
    ``AssignmentClosed``). ``categories`` (slug → bit) spares a query when the caller
    has read the study's categories already. ``expected_revision`` is the revision
    the annotator's page showed (0: no answer yet); when another save came in since,
    the answer is refused (``StaleAnswer``) and nothing is written. Without it, the save is unconditional (``hot_path.answer_save``).
    """
    if categories is None:
        study_id = Stage.objects.filter(pk=assignment.stage_id).values_list("study_id", flat=True)
        categories = study_category_bits(study_id=study_id.get())
    _, judgement = answer_save(
        assignment_id=assignment.pk,
        reflection_id=reflection.pk,
        encode=lambda: answer_encode(answer=answer, categories=categories),
        now=now or timezone.now(),
        expected_revision=expected_revision,
    )
    return judgement


def judgement_record_item(
    *,
    annotator_id: int,
    assignment_id: int,
    number: int,
    answer: Answer,
    categories: dict[str, int],
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> tuple[Assignment, Judgement]:
    """``judgement_record`` for the annotation page: the answer to the ``number``-th
    response candidate (1-based, in the batch's shuffled order) of the annotator's own
    assignment ``assignment_id``; another annotator's assignment or a number outside
    the batch raises ``Assignment.DoesNotExist``. Returns the assignment as locked, and
    the answer. On PostgreSQL a save that succeeds is one statement."""
    return answer_save(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        number=number,
        encode=lambda: answer_encode(answer=answer, categories=categories),
        now=now or timezone.now(),
        expected_revision=expected_revision,
    )
