"""The training quiz: who must take it, what counts as right, attempts and outcomes.

A study has a quiz when it has practice items. After the tutorial and before their
first batch, each annotator answers the practice items of an attempt in order, with
feedback after each; at the end the attempt's score (the percentage answered right) is
compared with the pass mark. Passing unlocks the batches; failing with attempts left
offers another attempt; failing the last one ends the annotator's part in the study
(a crowd worker is returned to the platform as screened out from the first stage).

Each attempt draws its items (``training_draw``): the items the annotator has not been
shown yet first, then the least shown, in a random order seeded by the study's seed,
the annotator and the attempt (so it can be reproduced); they are shown by position.
With attempts × items per attempt practice items, no attempt repeats an item. The
feedback after an item shows its expected answer and explanation only when the item
cannot come back in a later attempt of that annotator (``training_reveals_answers``);
otherwise it says whether the answer was right and states the rule.

An answer is right when its Yes/No is the expected one and, for an expected No in a
study whose first stage asks for categories, it chooses every category the item marks
required and none it marks wrong (the others may be chosen or not). The agreement
rating after Yes and a description are asked as in the first stage (the same form and
rules as a batch) but never scored: there is no right rating.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.utils import timezone

from ..errors import ErrorCode
from ..locks import annotators_locked, studies_locked
from ..models import (
    Annotator,
    Assignment,
    CrowdEntry,
    ErrorCategory,
    Stage,
    StageWording,
    Study,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
    stage_wording,
)
from ..protocol import DEFAULT_ANSWER_SETTINGS, AnswerSettings, category_selected
from ..selectors.stages import stage_categories
from ..selectors.training import QuizRules, TrainingStatus, training_rules, training_status
from .crowd import crowd_entry_close
from .judgements import Answer, EncodedAnswer, answer_encode

Status = TrainingAttempt.Status


class TrainingRefused(Exception):
    """A quiz action refused: ``code`` says why, ``message`` says it to the annotator;
    nothing was written."""

    MESSAGES = {
        ErrorCode.NO_QUIZ: "This study has no practice quiz.",
        ErrorCode.QUIZ_PASSED: "You have passed the practice quiz already: your batches are open.",
        ErrorCode.QUIZ_OVER: "Your practice quiz is over: no answers can be added. Thank you "
        "for your time.",
        ErrorCode.QUIZ_NOT_STARTED: "Please start an attempt at the practice quiz first.",
        ErrorCode.QUIZ_IN_PROGRESS: "You are in the middle of an attempt: please finish it first.",
        ErrorCode.NO_SUCH_PRACTICE_ITEM: "There is no such practice item.",
        ErrorCode.PRACTICE_ITEM_ANSWERED: "You have answered this practice item already in this "
        "attempt; your first answer counts.",
        ErrorCode.PRACTICE_ITEM_NOT_NEXT: "Please answer the practice items in order: an earlier "
        "one is still open.",
    }

    def __init__(self, code: ErrorCode):
        self.code = code
        self.message = self.MESSAGES[code]
        super().__init__(self.message)


def _with_dialogue_and_marks(items):
    return items.select_related("context").prefetch_related(
        Prefetch("required_categories"), Prefetch("wrong_categories")
    )


def training_attempt_items(*, attempt: TrainingAttempt) -> list[TrainingItem]:
    """The practice items ``attempt`` shows, in the order shown (item 1, 2, ...)."""
    by_id = {
        i.pk: i
        for i in _with_dialogue_and_marks(TrainingItem.objects.filter(pk__in=attempt.item_ids))
    }
    return [by_id[pk] for pk in attempt.item_ids if pk in by_id]


def training_draw(
    *, items: list[TrainingItem], size: int, shown: Counter, seed: str
) -> list[TrainingItem]:
    """``size`` of ``items`` for an attempt: those shown least often before (``shown``:
    item id → times shown to this annotator) first, ties broken at random by ``seed``;
    in position order."""
    rng = random.Random(seed)
    keyed = sorted(items, key=lambda i: (shown[i.pk], rng.random()))
    return sorted(keyed[:size], key=lambda i: i.position)


def _shown_before(annotator: Annotator, *, up_to: int | None = None) -> Counter:
    """Item id → how many of the annotator's attempts (numbered ≤ ``up_to``) showed it."""
    attempts = TrainingAttempt.objects.filter(annotator=annotator)
    if up_to is not None:
        attempts = attempts.filter(number__lte=up_to)
    return Counter(pk for ids in attempts.values_list("item_ids", flat=True) for pk in ids)


def training_unseen_after(*, annotator: Annotator, number: int, n_items: int) -> int:
    """How many of the study's ``n_items`` practice items the annotator's attempts up to
    ``number`` have not shown."""
    return n_items - len(_shown_before(annotator, up_to=number))


def training_attempt_size(*, study: Study) -> int:
    """How many practice items an attempt at the study's quiz shows."""
    n_items = TrainingItem.objects.filter(study=study).count()
    return training_rules(study=study).attempt_size(n_items)


def _unseen_suffice(attempt: TrainingAttempt, *, attempts: int, rules: QuizRules) -> bool:
    """Whether the items ``attempt`` and those before it left unshown fill ``attempts``
    more attempts (draws take unshown items first, so none of these repeats one)."""
    annotator = attempt.annotator
    n_items = TrainingItem.objects.filter(study_id=annotator.study_id).count()
    unseen = training_unseen_after(annotator=annotator, number=attempt.number, n_items=n_items)
    return unseen >= attempts * rules.attempt_size(n_items)


def training_next_attempt_is_new(*, attempt: TrainingAttempt) -> bool:
    """Whether an attempt after ``attempt`` would show only items not shown before."""
    rules = training_rules(study=attempt.annotator.study)
    return _unseen_suffice(attempt, attempts=1, rules=rules)


def training_reveals_answers(*, attempt: TrainingAttempt) -> bool:
    """Whether the feedback may show the expected answers of ``attempt``'s items: only
    when none can come back, i.e. it is the last attempt allowed, or the items not yet
    shown fill every attempt left."""
    rules = training_rules(study=attempt.annotator.study)
    attempts_left = rules.attempts - attempt.number
    return attempts_left <= 0 or _unseen_suffice(attempt, attempts=attempts_left, rules=rules)


def training_item_categories_check(
    *,
    study: Study,
    expected_coherent: bool,
    required: Iterable[ErrorCategory],
    wrong: Iterable[ErrorCategory],
) -> None:
    """A practice item's category marks: only for an expected No, of the item's study and
    offered by its first stage (``training_categories``), never both required and wrong. ``ValidationError`` (by field) otherwise. The rule
    for the admin's form and any other way of writing practice items."""
    required, wrong = list(required), list(wrong)
    errors: dict[str, str] = {}
    if expected_coherent and (required or wrong):
        field = "required_categories" if required else "wrong_categories"
        errors[field] = 'Required and wrong categories go with an expected "No" only.'
    foreign = sorted({c.label for c in [*required, *wrong] if c.study_id != study.pk})
    if foreign:
        errors.setdefault(
            "required_categories",
            f"These categories belong to another study: {', '.join(foreign)}.",
        )
    offered = {c.pk for c in training_categories(study=study)}
    not_offered = sorted(
        {c.label for c in [*required, *wrong] if c.pk not in offered} - set(foreign)
    )
    if not_offered:
        errors.setdefault(
            "required_categories",
            "The quiz prepares for the first stage, which does not offer these categories: "
            f"{', '.join(not_offered)}.",
        )
    both = sorted({c.label for c in required} & {c.label for c in wrong})
    if both:
        errors.setdefault(
            "wrong_categories",
            f"A category cannot be both required and wrong: {', '.join(both)}.",
        )
    if errors:
        raise ValidationError(errors)


def training_stage(*, study: Study) -> Stage | None:
    """The stage the quiz prepares for: the first (none while the study has no stage)."""
    return Stage.objects.filter(study=study).order_by("position").first()


def training_answer_settings(*, study: Study) -> AnswerSettings:
    """What the quiz asks after Yes and after No: what ``training_stage`` asks."""
    stage = training_stage(study=study)
    return stage.answer_settings if stage is not None else DEFAULT_ANSWER_SETTINGS


def training_wording(*, study: Study) -> StageWording:
    """How the quiz words its questions: as ``training_stage`` does."""
    stage = training_stage(study=study)
    return stage_wording(study, stage if stage is not None else {})


def training_categories(*, study: Study) -> list[ErrorCategory]:
    """The error categories the quiz offers after No: those ``training_stage`` offers
    (all of the study's while it has no stage), in display order."""
    stage = training_stage(study=study)
    if stage is None:
        return list(ErrorCategory.objects.filter(study=study).order_by("order", "bit"))
    return stage_categories(stage=stage)


def training_answer_is_right(
    *, item: TrainingItem, encoded: EncodedAnswer, settings: AnswerSettings
) -> bool:
    """The one rule for a right answer (see the module docstring)."""
    if encoded.coherent != item.expected_coherent:
        return False
    if encoded.coherent or not settings.asks_categories:
        return True
    flags = encoded.error_flags
    return all(category_selected(flags, c.bit) for c in item.required_categories.all()) and not any(
        category_selected(flags, c.bit) for c in item.wrong_categories.all()
    )


def training_score_passes(*, n_right: int, n_items: int, pass_mark: int) -> bool:
    """Score ≥ pass mark, in integers (no rounding: 4 of 5 is exactly 80 %)."""
    return n_items > 0 and 100 * n_right >= pass_mark * n_items


# --- outcome --------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingOutcome:
    """An annotator's standing in the quiz. ``status``: a ``TrainingStatus``;
    ``current``: the attempt in progress, else the last one (None before the first)."""

    status: TrainingStatus
    attempts_used: int
    attempts_allowed: int
    pass_mark: int
    current: TrainingAttempt | None

    @property
    def attempts_left(self) -> int:
        return max(self.attempts_allowed - self.attempts_used, 0)

    @property
    def label(self) -> str:
        return self.status.label


def training_outcome(*, annotator: Annotator) -> TrainingOutcome | None:
    """The annotator's outcome (None when their study has no quiz)."""
    if not TrainingItem.objects.filter(study_id=annotator.study_id).exists():
        return None
    rules = training_rules(study=annotator.study)
    attempts = list(TrainingAttempt.objects.filter(annotator=annotator).order_by("number"))
    return TrainingOutcome(
        status=training_status(
            statuses=[a.status for a in attempts], attempts_allowed=rules.attempts
        ),
        attempts_used=len(attempts),
        attempts_allowed=rules.attempts,
        pass_mark=rules.pass_mark,
        current=attempts[-1] if attempts else None,
    )


# --- writes ---------------------------------------------------------------------------


def _locked_annotator(annotator: Annotator) -> Annotator:
    """The annotator's row, locked after their study's (also locked)."""
    studies_locked().filter(pk=annotator.study_id).first()
    return annotators_locked().select_related("study").get(pk=annotator.pk)


@transaction.atomic
def training_attempt_start(*, annotator: Annotator, now: datetime | None = None):
    """Start the annotator's next attempt with the practice items drawn for it
    (``training_draw``). Refused (``TrainingRefused``, nothing written) when the study
    has no quiz, the annotator passed, has an attempt in progress or has used every
    attempt. Locks the annotator's row, so two tabs cannot start two attempts."""
    annotator = _locked_annotator(annotator)
    items = list(TrainingItem.objects.filter(study_id=annotator.study_id).order_by("position"))
    outcome = training_outcome(annotator=annotator)
    if outcome is None or not items:
        raise TrainingRefused(ErrorCode.NO_QUIZ)
    refusal = {
        TrainingStatus.PASSED: ErrorCode.QUIZ_PASSED,
        TrainingStatus.FAILED: ErrorCode.QUIZ_OVER,
        TrainingStatus.IN_PROGRESS: ErrorCode.QUIZ_IN_PROGRESS,
    }.get(outcome.status)
    if refusal is not None:
        raise TrainingRefused(refusal)
    number = outcome.attempts_used + 1
    drawn = training_draw(
        items=items,
        size=training_rules(study=annotator.study).attempt_size(len(items)),
        shown=_shown_before(annotator),
        seed=f"{annotator.study.seed}/training/{annotator.pseudonym}/{number}",
    )
    return TrainingAttempt.objects.create(
        annotator=annotator,
        number=number,
        n_items=len(drawn),
        item_ids=[i.pk for i in drawn],
        started_at=now or timezone.now(),
    )


def training_answer_target(*, annotator: Annotator, number: int):
    """The attempt in progress and practice item ``number`` (its place in the attempt,
    1, 2, ...) an answer would go to, or ``TrainingRefused``:
    after the quiz is over or passed, before an attempt, for an item that does not
    exist, for an item already answered in this attempt, or for one after the item
    due (they are answered in order)."""
    attempt = TrainingAttempt.objects.filter(annotator=annotator, status=Status.IN_PROGRESS).first()
    if attempt is None:
        outcome = training_outcome(annotator=annotator)
        if outcome is None:
            raise TrainingRefused(ErrorCode.NO_QUIZ)
        raise TrainingRefused(
            {
                TrainingStatus.PASSED: ErrorCode.QUIZ_PASSED,
                TrainingStatus.FAILED: ErrorCode.QUIZ_OVER,
            }.get(outcome.status, ErrorCode.QUIZ_NOT_STARTED)
        )
    items = training_attempt_items(attempt=attempt)
    item = items[number - 1] if 1 <= number <= len(items) else None
    if item is None:
        raise TrainingRefused(ErrorCode.NO_SUCH_PRACTICE_ITEM)
    if TrainingAnswer.objects.filter(attempt=attempt, item=item).exists():
        raise TrainingRefused(ErrorCode.PRACTICE_ITEM_ANSWERED)
    if number != training_next_number(attempt=attempt):
        raise TrainingRefused(ErrorCode.PRACTICE_ITEM_NOT_NEXT)
    return attempt, item


def training_next_number(*, attempt: TrainingAttempt) -> int:
    """The number of the practice item to answer next in ``attempt``: the items are
    answered in order (``training_answer_target``), so the one after those answered."""
    return attempt.answers.count() + 1


@transaction.atomic
def training_answer_record(
    *, annotator: Annotator, number: int, answer: Answer, now: datetime | None = None
) -> TrainingAnswer:
    """Record the answer to practice item ``number`` in the attempt in progress, with
    whether it is right; the last item's answer finishes the attempt with its score
    (passed or failed). Checked with the batches' rules (``answer_encode``, the first
    stage's settings): a ``ValidationError`` per question. Refused as
    ``training_answer_target`` says. Either way nothing is written. Locks the
    annotator's row, so two tabs answer one after the other."""
    now = now or timezone.now()
    annotator = _locked_annotator(annotator)
    attempt, item = training_answer_target(annotator=annotator, number=number)
    settings = training_answer_settings(study=annotator.study)
    encoded = answer_encode(
        answer=answer,
        categories={c.slug: c.bit for c in training_categories(study=annotator.study)},
        settings=settings,
    )
    try:
        with transaction.atomic():
            recorded = TrainingAnswer.objects.create(
                attempt=attempt,
                item=item,
                coherent=encoded.coherent,
                error_flags=encoded.error_flags,
                most_evident_bit=encoded.most_evident_bit,
                empathy=encoded.empathy,
                error_description=encoded.error_description,
                seconds_spent=encoded.seconds_spent,
                is_right=training_answer_is_right(item=item, encoded=encoded, settings=settings),
                answered_at=now,
            )
    except IntegrityError:  # the unique rule, should the check above be raced
        raise TrainingRefused(ErrorCode.PRACTICE_ITEM_ANSWERED) from None
    answers = TrainingAnswer.objects.filter(attempt=attempt)
    if answers.count() >= attempt.n_items:
        n_right = answers.filter(is_right=True).count()
        rules = training_rules(study=annotator.study)
        passed = training_score_passes(
            n_right=n_right, n_items=attempt.n_items, pass_mark=rules.pass_mark
        )
        attempt.status = Status.PASSED if passed else Status.FAILED
        attempt.n_right = n_right
        attempt.finished_at = now
        attempt.save(update_fields=["status", "n_right", "finished_at"])
        if not passed and attempt.number >= rules.attempts:
            training_screen_out(annotator=annotator, now=now)
    recorded.attempt = attempt
    return recorded


def training_screen_out(*, annotator: Annotator, now: datetime | None = None):
    """A crowd worker who failed the quiz's last attempt is sent back from the first
    stage as screened out (``crowd_entry_close``: the first outcome stands, so asking
    again gives the same return). Their ``CrowdReturn``; None for an invited
    annotator."""
    first = Stage.objects.filter(study_id=annotator.study_id).order_by("position").first()
    if first is None:
        return None
    return crowd_entry_close(
        annotator=annotator, stage=first, outcome=CrowdEntry.Outcome.SCREENED_OUT, now=now
    )


def training_is_locked(*, study: Study) -> bool:
    """The quiz cannot change once annotation started (a batch claimed, or an attempt
    at the quiz): every annotator must answer the same quiz, and nobody may meet the
    gate in the middle of a batch."""
    return (
        Assignment.objects.filter(stage__study=study).exists()
        or TrainingAttempt.objects.filter(annotator__study=study).exists()
    )
