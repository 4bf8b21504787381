"""Recording annotators' answers with the same rules as the database."""

from collections.abc import Mapping, Sequence
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
from ..models import Assignment, ErrorCategory, Judgement, LikertDimension, Reflection, Stage
from ..protocol import (
    DEFAULT_ANSWER_SETTINGS,
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    EMPATHY_SCALE,
    RATING_FIELD_PREFIX,
    AnswerSettings,
)
from ..selectors.stages import stage_categories

__all__ = [
    "Answer",
    "AssignmentClosed",
    "EncodedAnswer",
    "StaleAnswer",
    "answer_encode",
    "judgement_record",
    "judgement_record_item",
    "likert_answer_encode",
    "stage_answer_encode",
    "study_category_bits",
]


@dataclass(frozen=True)
class Answer:
    """An annotator's answer for one response candidate, as submitted."""

    coherent: bool | None
    categories: frozenset[str] = field(default_factory=frozenset)
    most_evident: str | None = None
    empathy: int | None = None
    seconds_spent: float | None = None
    description: str = ""
    #: A Likert stage's answer (``coherent`` None): dimension name → rating, None for
    #: "cannot judge".
    ratings: Mapping[str, int | None] = field(default_factory=dict)


def description_check(description: str, *, typed: bool) -> str | None:
    """What is wrong with a description of what is wrong (trimmed), or None. Typed
    descriptions need ``DESCRIPTION_MIN_LENGTH`` characters; imported ones only text."""
    if len(description) > DESCRIPTION_MAX_LENGTH:
        return (
            f"The description is {len(description):,} characters long; "
            f"at most {DESCRIPTION_MAX_LENGTH:,} are allowed."
        )
    if typed and len(description) < DESCRIPTION_MIN_LENGTH:
        return (
            f"Describe what is wrong in at least {DESCRIPTION_MIN_LENGTH} characters "
            f"(you wrote {len(description)})."
        )
    return None


def likert_answer_encode(*, answer: Answer, dimensions: Sequence[LikertDimension]) -> EncodedAnswer:
    """Check a Likert stage's answer: a rating on every dimension of the stage (or
    "cannot judge" where offered, given as None), each within its scale
    (``LikertDimension.rating_problem``), and nothing of the coherence protocol."""
    errors: dict[str, str] = {}
    if (
        answer.coherent is not None
        or answer.categories
        or answer.most_evident is not None
        or answer.empathy is not None
        or answer.description.strip()
    ):
        errors["coherent"] = "This stage asks for ratings, not Yes or No."
    if not dimensions:
        errors["ratings"] = "This stage has no dimensions to rate yet."
    by_name = {d.name: d for d in dimensions}
    unknown = sorted(set(answer.ratings) - by_name.keys())
    if unknown:
        errors["ratings"] = f"Unknown dimensions: {', '.join(unknown)}."
    ratings = []
    for dimension in dimensions:
        given = dimension.name in answer.ratings
        value = answer.ratings.get(dimension.name)
        cannot_judge = given and value is None
        problem = dimension.rating_problem(value, cannot_judge)
        if problem:
            errors[RATING_FIELD_PREFIX + dimension.name] = problem
        ratings.append((dimension.name, value, cannot_judge))
    if answer.seconds_spent is not None and answer.seconds_spent < 0:
        errors["seconds_spent"] = "Time spent cannot be negative."
    if errors:
        raise ValidationError(errors)
    return EncodedAnswer(
        coherent=None,
        error_flags=0,
        most_evident_bit=None,
        empathy=None,
        seconds_spent=answer.seconds_spent,
        ratings=tuple(ratings),
    )


def stage_answer_encode(
    *,
    answer: Answer,
    stage_id: int,
    settings: AnswerSettings,
    categories: dict[str, int] | None = None,
    dimensions: Sequence[LikertDimension] | None = None,
    require_complete: bool = True,
) -> EncodedAnswer:
    """``answer`` checked against what the stage ``stage_id`` asks (its ``settings``):
    its Likert dimensions in order (read here when not given), or the coherence
    protocol with the categories it offers (slug → bit; read here when not given)."""
    if settings.rates_dimensions:
        if answer.coherent is not None:  # refused without reading the dimensions
            raise ValidationError({"coherent": "This stage asks for ratings, not Yes or No."})
        if dimensions is None:
            dimensions = LikertDimension.objects.filter(stage_id=stage_id).order_by("position")
        return likert_answer_encode(answer=answer, dimensions=list(dimensions))
    return answer_encode(
        answer=answer,
        categories=stage_category_bits(stage_id=stage_id) if categories is None else categories,
        settings=settings,
        require_complete=require_complete,
    )


def answer_encode(
    *,
    answer: Answer,
    categories: dict[str, int],
    settings: AnswerSettings = DEFAULT_ANSWER_SETTINGS,
    require_complete: bool = True,
) -> EncodedAnswer:
    """Check ``answer`` against the protocol, the stage's ``settings`` (what a stage
    asks after Yes and after No) and the database rules, and turn category slugs into
    the stored bit set. The description is trimmed; whitespace alone is no description.

    ``categories`` maps the study's category slugs to their bits. With
    ``require_complete`` (the annotation interface) a No needs what the stage asks (at
    least one category; in a free-text stage a description of at least
    ``DESCRIPTION_MIN_LENGTH`` characters), two or more categories need a most evident
    error, and a Yes needs the 5-point rating when the stage asks it. Imported published
    data may lack those, so importers pass False; the consistency rules that the
    database enforces always apply.
    """
    errors: dict[str, str] = {}
    if settings.rates_dimensions:
        raise ValueError("A Likert stage's answers are checked by stage_answer_encode.")
    if answer.coherent is None or answer.ratings:
        raise ValidationError({"coherent": "Answer Yes or No."})
    description = answer.description.strip()
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
        if description:
            errors["description"] = (
                "A description of what is wrong is only asked when the answer is No."
            )
        if not settings.empathy_after_yes:
            if answer.empathy is not None:
                errors["empathy"] = "This stage asks nothing after Yes."
        elif answer.empathy is None and require_complete:
            errors["empathy"] = "Choose how much you agree with the statement."
    else:
        if answer.empathy is not None:
            errors["empathy"] = "The agreement rating is only asked when the answer is Yes."
        if not settings.asks_categories:
            if answer.categories or answer.most_evident is not None:
                errors["categories"] = (
                    "This stage asks for a description of what is wrong, not error categories."
                )
        elif require_complete and not answer.categories:
            errors["categories"] = "Choose at least one error category."
        elif answer.most_evident is not None and answer.most_evident not in answer.categories:
            errors["most_evident"] = "The most evident error must be one of the chosen categories."
        elif answer.most_evident is None and len(answer.categories) >= 2 and require_complete:
            errors["most_evident"] = "Choose the most evident error among the chosen categories."
        if description and not settings.asks_description:
            errors["description"] = "This stage does not ask for a description."
        elif description:
            problem = description_check(description, typed=require_complete)
            if problem:
                errors["description"] = problem
        elif settings.description_required and require_complete:
            errors["description"] = "Describe in your own words what is wrong with it."
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
        # A single chosen category is that annotator's most evident error.
        (most_evident,) = answer.categories
    return EncodedAnswer(
        coherent=answer.coherent,
        error_flags=flags,
        most_evident_bit=categories[most_evident] if most_evident is not None else None,
        empathy=answer.empathy,
        seconds_spent=answer.seconds_spent,
        error_description=description,
    )


def study_category_bits(*, study_id: int) -> dict[str, int]:
    return dict(ErrorCategory.objects.filter(study_id=study_id).values_list("slug", "bit"))


def stage_category_bits(*, stage_id: int) -> dict[str, int]:
    """Slug → bit of the categories the stage offers (``stage_categories``)."""
    stage = Stage.objects.only("study_id").get(pk=stage_id)
    return {c.slug: c.bit for c in stage_categories(stage=stage)}


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
    ``AssignmentClosed``). ``categories`` (slug → bit) spares the queries when the
    caller has read the categories the stage offers already. ``expected_revision`` is the revision
    the annotator's page showed (0: no answer yet); when another save came in since,
    the answer is refused (``StaleAnswer``) and nothing is written. Without it, the save is unconditional (``hot_path.answer_save``).
    """
    stage = Stage.objects.only("study_id", "no_answer", "empathy_after_yes", "instrument").get(
        pk=assignment.stage_id
    )
    settings = stage.answer_settings
    encoded = None

    def encode(_stage_id: int) -> EncodedAnswer:
        nonlocal encoded  # read the stage's categories or dimensions once
        if encoded is None:
            encoded = stage_answer_encode(
                answer=answer, stage_id=stage.pk, settings=settings, categories=categories
            )
        return encoded

    _, judgement = answer_save(
        assignment_id=assignment.pk,
        reflection_id=reflection.pk,
        encode=encode,
        stage_ids=[stage.pk],
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
    categories: dict[str, int] | None = None,
    categories_by_stage: dict[int, dict[str, int]] | None = None,
    settings_by_stage: dict[int, AnswerSettings] | None = None,
    dimensions_by_stage: Mapping[int, Sequence[LikertDimension]] | None = None,
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> tuple[Assignment, Judgement]:
    """``judgement_record`` for the annotation page: the answer to the ``number``-th
    response candidate (1-based, in the batch's shuffled order) of the annotator's own
    assignment ``assignment_id``; another annotator's assignment or a number outside
    the batch raises ``Assignment.DoesNotExist``. ``settings_by_stage``: what each stage
    of the study asks (stage id → ``AnswerSettings``, read with the annotator; without
    it the stage is read); the answer must suit the assignment's stage, and choose
    only categories it offers: ``categories_by_stage`` (stage id → slug → bit, read
    with the annotator), else ``categories`` for every stage, else the stage's
    (``stage_categories``); a Likert answer rates the stage's dimensions
    (``dimensions_by_stage``, read with the annotator; else read). Returns the
    assignment as locked, and the answer. On PostgreSQL a save that succeeds is one statement."""
    return answer_save(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        number=number,
        encode=lambda stage_id: stage_answer_encode(
            answer=answer,
            stage_id=stage_id,
            categories=categories_by_stage[stage_id]
            if categories_by_stage is not None
            else categories,
            settings=settings_by_stage[stage_id]
            if settings_by_stage is not None
            else Stage.objects.get(pk=stage_id).answer_settings,
            dimensions=dimensions_by_stage.get(stage_id, ())
            if dimensions_by_stage is not None
            else None,
        ),
        stage_ids=settings_by_stage.keys() if settings_by_stage is not None else (),
        now=now or timezone.now(),
        expected_revision=expected_revision,
    )
