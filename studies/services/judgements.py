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
    ranking_save,
)
from ..limits import cap_message
from ..models import Assignment, ErrorCategory, Judgement, LikertDimension, Reflection, Stage
from ..protocol import (
    CHOICE_TIE,
    DEFAULT_ANSWER_SETTINGS,
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    EMPATHY_SCALE,
    INSTRUMENT_COHERENCE,
    PAIR_CHOICES,
    RATING_FIELD_PREFIX,
    AnswerSettings,
    competition_ranks,
    order_keys,
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
    "pairwise_answer_encode",
    "ranking_encode",
    "ranking_record",
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
    #: A pairwise stage's answer (``coherent`` None): A, B or Tie as the pair was
    #: shown, and the optional reason.
    choice: str = ""
    reason: str = ""

    @property
    def has_coherence_fields(self) -> bool:
        """Something of the coherence protocol was given."""
        return bool(
            self.coherent is not None
            or self.categories
            or self.most_evident is not None
            or self.empathy is not None
            or self.description.strip()
        )


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
    if answer.has_coherence_fields or answer.choice or answer.reason.strip():
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


def pairwise_answer_encode(*, answer: Answer, settings: AnswerSettings) -> EncodedAnswer:
    """Check a pairwise stage's answer: A, B or (where the stage allows ties) Tie, and
    a reason only where the stage asks for one (trimmed; optional)."""
    errors: dict[str, str] = {}
    if answer.has_coherence_fields or answer.ratings:
        errors["coherent"] = "This stage asks which of two candidates is better, not Yes or No."
    ties = settings.allows_ties
    if answer.choice not in PAIR_CHOICES:
        errors["choice"] = "Choose A, B or Tie." if ties else "Choose A or B."
    elif answer.choice == CHOICE_TIE and not ties:
        errors["choice"] = "This stage allows no ties: choose A or B."
    reason = answer.reason.strip()
    if reason and not settings.asks_reason:
        errors["reason"] = "This stage asks for no reason."
    elif len(reason) > DESCRIPTION_MAX_LENGTH:
        errors["reason"] = cap_message(DESCRIPTION_MAX_LENGTH, len(reason))
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
        choice=answer.choice,
        reason=reason,
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
    protocol with the categories it offers (slug → bit; read here when not given); a
    pairwise stage's choice. A ranking is saved whole (``ranking_record``)."""
    if settings.compares_pairs:
        return pairwise_answer_encode(answer=answer, settings=settings)
    if settings.ranks_candidates:
        raise ValidationError({"rank": "This stage asks for a ranking of all the candidates."})
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
    if settings.instrument != INSTRUMENT_COHERENCE:
        raise ValueError("Other instruments' answers are checked by stage_answer_encode.")
    if answer.coherent is None or answer.ratings or answer.choice or answer.reason.strip():
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
    opponent: Reflection | None = None,
) -> Judgement:
    """Save (or revise) one answer of an open assignment (in a pairwise stage: of the
    pair of ``reflection`` and ``opponent``, either way round). Idempotent: saving the
    same answer twice leaves one row.

    An assignment past its deadline is expired (and the answer refused with
    ``AssignmentClosed``). ``categories`` (slug → bit) spares the queries when the
    caller has read the categories the stage offers already. ``expected_revision`` is the revision
    the annotator's page showed (0: no answer yet); when another save came in since,
    the answer is refused (``StaleAnswer``) and nothing is written. Without it, the save is unconditional (``hot_path.answer_save``).
    """
    stage = Stage.objects.get(pk=assignment.stage_id)
    settings = stage.answer_settings
    encoded = None

    def encode(_stage_id: int) -> EncodedAnswer:
        nonlocal encoded  # read the stage's categories or dimensions once
        if encoded is None:
            encoded = stage_answer_encode(
                answer=answer, stage_id=stage.pk, settings=settings, categories=categories
            )
        return encoded

    reflection_id, opponent_id = reflection.pk, opponent.pk if opponent is not None else None
    if opponent is not None:
        order = Assignment.objects.values_list("order", flat=True).get(pk=assignment.pk)
        if (opponent_id, reflection_id) in order_keys(order):
            reflection_id, opponent_id = opponent_id, reflection_id  # the pair as stored
    _, judgement = answer_save(
        assignment_id=assignment.pk,
        reflection_id=reflection_id,
        opponent_id=opponent_id,
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


def ranking_encode(
    *, ranks: Mapping[int, int | None], candidates: Sequence[int], settings: AnswerSettings
) -> dict[int, int]:
    """Check a ranking of a batch's ``candidates`` (reflection ids) and return each
    one's stored rank. ``ranks``: candidate → a number, lower is better, equal numbers
    a tie (where the stage allows ties); numbers 1 to n, so 1, 2, 2, 3 reads as a tie
    in second place and is stored 1, 2, 2, 4 (``competition_ranks``)."""
    if not settings.ranks_candidates:
        raise ValidationError({"rank": "This stage does not ask for a ranking."})
    n = len(candidates)
    if set(ranks) - set(candidates):
        raise ValidationError({"rank": "Rank only the candidates of this batch."})
    missing = sum(1 for c in candidates if ranks.get(c) is None)
    if missing:
        raise ValidationError(
            {"rank": f"Give every candidate a rank ({missing} of {n} have none)."}
        )
    values = [ranks[c] for c in candidates]
    if any(not 1 <= value <= n for value in values):
        raise ValidationError({"rank": f"A rank is a number from 1 (the best) to {n}."})
    if not settings.allows_ties and len(set(values)) < n:
        raise ValidationError(
            {"rank": "This stage allows no ties: give each candidate its own rank."}
        )
    return dict(zip(candidates, competition_ranks(values), strict=True))


def ranking_record(
    *,
    annotator_id: int,
    assignment_id: int,
    ranks: Mapping[int, int | None],
    settings_by_stage: Mapping[int, AnswerSettings] | None = None,
    seconds_spent: float | None = None,
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> tuple[Assignment, int]:
    """Save the annotator's ranking of their own assignment ``assignment_id``
    (``ranking_encode``'s rules against the assignment's stage: ``settings_by_stage``,
    read with the annotator, else read): ``hot_path.ranking_save``, in one statement
    when the stages are given. Returns the assignment and the ranking's revision."""
    if seconds_spent is not None and seconds_spent < 0:
        raise ValidationError({"seconds_spent": "Time spent cannot be negative."})

    def encode(stage_id: int, candidates: list[int]) -> dict[int, int]:
        settings = (
            settings_by_stage[stage_id]
            if settings_by_stage is not None
            else Stage.objects.get(pk=stage_id).answer_settings
        )
        return ranking_encode(ranks=ranks, candidates=candidates, settings=settings)

    return ranking_save(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        encode=encode,
        seconds_spent=seconds_spent,
        now=now or timezone.now(),
        expected_revision=expected_revision,
        ranked=list(ranks),
        stage_ids=list(settings_by_stage or ()),
    )
