"""Simulated annotators for the demo study, so a researcher trying the product sees
its main output (progress, agreement, figures) before anyone has annotated.

Every answer goes through the product's own services, as the annotation pages do:
consent, tutorial, ``assignment_claim`` (random batches, the waiting period between
stages), ``judgement_record`` and ``assignment_submit``, on a clock set in the past so
the waiting period has passed. The answers are random with a lean: human and GPT-3
reflections are more often called coherent than GPT-2 ones; in a Likert stage they are
rated higher on each dimension, preferred in a pair and ranked higher.
"""

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from ..models import Annotator, ErrorCategory, LikertDimension, Reflection, Study
from ..protocol import order_key
from .claims import assignment_claim
from .judgements import (
    Answer,
    judgement_record,
    judgement_record_item,
    ranking_record,
    study_category_bits,
)
from .lifecycle import assignment_submit
from .stages import NoWorkAvailable, StageLocked
from .studies import annotator_complete_tutorial, annotator_consent, consent_version_current

COHERENT_CHANCE = {"Human": 0.8, "GPT-2": 0.45, "GPT-3": 0.7}
# A Likert stage's lean: where each source's ratings centre, as a share of the scale.
RATING_LEAN = {"Human": 0.75, "GPT-2": 0.4, "GPT-3": 0.6}


@dataclass(frozen=True)
class SimulationSummary:
    annotators: int
    batches: int
    judgements: int


def _answer(
    rng: random.Random, reflection: Reflection, slugs: list[str], attentive: frozenset[str]
) -> Answer:
    seconds = float(rng.randint(15, 75))
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:  # the attentive answer
        return Answer(coherent=False, categories=attentive, seconds_spent=seconds)
    if rng.random() < COHERENT_CHANCE.get(reflection.source, 0.6):
        return Answer(coherent=True, empathy=rng.choice([3, 4, 4, 5, 5]), seconds_spent=seconds)
    chosen = rng.sample(slugs, k=rng.choice([1, 1, 1, 2]))
    return Answer(
        coherent=False,
        categories=frozenset(chosen),
        most_evident=rng.choice(chosen) if len(chosen) > 1 else None,
        seconds_spent=seconds,
    )


def _ratings_answer(
    rng: random.Random, reflection: Reflection, dimensions: list[LikertDimension]
) -> Answer:
    """A Likert stage's answer: each dimension rated near the source's lean, now and
    then "cannot judge" where offered; the attention check's candidate rated as the
    study expects on its dimension (the lowest passing rating)."""
    seconds = float(rng.randint(20, 90))
    ratings: dict[str, int | None] = {}
    for dimension in dimensions:
        low, high = dimension.scale_range
        if reflection.kind == Reflection.Kind.ATTENTION_CHECK and dimension.checks_attention:
            ratings[dimension.name] = dimension.attention_pass_min
        elif dimension.offers_cannot_judge and rng.random() < 0.05:
            ratings[dimension.name] = None
        else:
            centre = low + RATING_LEAN.get(reflection.source, 0.5) * (high - low)
            spread = (high - low) / 4
            ratings[dimension.name] = min(high, max(low, round(rng.gauss(centre, spread))))
    return Answer(coherent=None, ratings=ratings, seconds_spent=seconds)


def _score(rng: random.Random, reflection: Reflection) -> float:
    """How good a candidate seems to one simulated annotator: the source's lean plus
    noise; the off-topic candidate seems worst."""
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
        return -1.0
    return RATING_LEAN.get(reflection.source, 0.5) + rng.gauss(0, 0.2)


def _answer_pairs(assignment, reflections, rng: random.Random, now: datetime) -> datetime:
    """Each pair answered for the candidate that seems better (a tie when close, where
    the stage allows ties); the clock moves as for other answers."""
    settings = assignment.stage.answer_settings
    for number, (first, second, swapped) in enumerate(assignment.order, start=1):
        gap = _score(rng, reflections[first]) - _score(rng, reflections[second])
        if settings.allows_ties and abs(gap) < 0.05:
            choice = "Tie"
        else:
            first_left = not swapped
            choice = "A" if (gap > 0) == first_left else "B"
        now += timedelta(seconds=rng.randint(10, 40))
        judgement_record_item(
            annotator_id=assignment.annotator_id,
            assignment_id=assignment.pk,
            number=number,
            answer=Answer(coherent=None, choice=choice, seconds_spent=20.0),
            now=now,
        )
    return now


def _answer_ranking(assignment, reflections, rng: random.Random, now: datetime) -> datetime:
    """The candidates ranked by how good they seem, the off-topic one last."""
    scores = {rid: _score(rng, reflections[rid]) for rid in assignment.order}
    ordered = sorted(assignment.order, key=lambda rid: -scores[rid])
    seconds = float(rng.randint(60, 180))
    now += timedelta(seconds=seconds)
    ranking_record(
        annotator_id=assignment.annotator_id,
        assignment_id=assignment.pk,
        ranks={rid: place for place, rid in enumerate(ordered, start=1)},
        seconds_spent=seconds,
        now=now,
    )
    return now


def _work_one_batch(
    *,
    annotator: Annotator,
    now: datetime,
    rng: random.Random,
    categories: dict[str, int],
    attentive: frozenset[str],
) -> tuple[int, datetime] | None:
    """Claim, answer and submit one batch; None when the annotator has nothing to do."""
    try:
        assignment = assignment_claim(annotator=annotator, now=now)
    except (NoWorkAvailable, StageLocked):
        return None
    settings = assignment.stage.answer_settings
    if settings.compares_pairs or settings.ranks_candidates:
        ids = {rid for entry in assignment.order for rid in order_key(entry) if rid is not None}
        reflections = Reflection.objects.in_bulk(ids)
        answer = _answer_pairs if settings.compares_pairs else _answer_ranking
        now = answer(assignment, reflections, rng, now)
        assignment_submit(assignment=assignment, now=now + timedelta(seconds=30))
        return len(assignment.order), now + timedelta(minutes=5)
    reflections = Reflection.objects.in_bulk(assignment.order)
    slugs = sorted(categories)
    likert = assignment.stage.answer_settings.rates_dimensions
    dimensions = list(assignment.stage.dimensions.order_by("position")) if likert else []
    for reflection_id in assignment.order:
        if likert:
            answer = _ratings_answer(rng, reflections[reflection_id], dimensions)
        else:
            answer = _answer(rng, reflections[reflection_id], slugs, attentive)
        now += timedelta(seconds=answer.seconds_spent)  # the clock moves as the answers say
        judgement_record(
            assignment=assignment,
            reflection=reflections[reflection_id],
            answer=answer,
            now=now,
            categories=categories,
        )
    assignment_submit(assignment=assignment, now=now + timedelta(seconds=30))
    return len(assignment.order), now + timedelta(minutes=5)


def demo_judgements_simulate(
    *, study: Study, annotators: list[Annotator], seed: int = 20261121, days_ago: int = 10
) -> SimulationSummary:
    """``annotators`` consent, do the tutorial and work through every stage: in turns,
    one batch each, until no batch is left for them; the next stage starts after its
    waiting period. Starts ``days_ago`` days back, so every stage is done by now."""
    rng = random.Random(seed)
    categories = study_category_bits(study_id=study.pk)
    # The attention check answered as the study expects: No, with one category that
    # catches it (the demo's stages ask for categories).
    attentive = frozenset(
        ErrorCategory.objects.filter(study=study, catches_attention_check=True)
        .order_by("order", "bit")
        .values_list("slug", flat=True)[:1]
    )
    version = consent_version_current(study=study)
    start = timezone.now() - timedelta(days=days_ago)
    for annotator in annotators:
        annotator_consent(annotator=annotator, version=version, now=start)
        annotator_complete_tutorial(annotator=annotator, now=start)
    batches = judgements = 0
    now = start
    for position, stage in enumerate(study.stages.order_by("position")):
        if position > 0:  # everyone's wait, counted from their last batch, has passed
            now += stage.min_wait + timedelta(hours=1)
        if now > timezone.now():
            break
        if stage.has_own_tutorial:  # read before the stage's first batch
            for annotator in annotators:
                annotator_complete_tutorial(annotator=annotator, stage=stage, now=now)
        # Claims hand out the stage in order: an annotator done with this stage (or with
        # nothing left in it) gets StageLocked or NoWorkAvailable and leaves the turns.
        busy = list(annotators)
        while busy:
            for annotator in list(busy):
                done = _work_one_batch(
                    annotator=annotator,
                    now=now,
                    rng=rng,
                    categories=categories,
                    attentive=attentive,
                )
                if done is None:
                    busy.remove(annotator)
                    continue
                batches += 1
                judgements += done[0]
                now = done[1]
    return SimulationSummary(annotators=len(annotators), batches=batches, judgements=judgements)
