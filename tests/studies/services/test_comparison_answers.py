"""Saving pairwise and ranking answers: the claim records each annotator's pairs and
sides, a pair's answer is saved in the save's one statement (or the ORM path), a
ranking whole; submit checks every pair or the ranking and the attention check. Each
refusal writes nothing."""

import re
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from studies.errors import ErrorCode
from studies.models import Assignment, Judgement, Reflection, Stage
from studies.protocol import order_keys, pair_winner
from studies.selectors.pairs import batch_pairs
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
    ranking_record,
)
from studies.services.judgements import judgement_record_item
from tests.studies.comparison_fixtures import make_comparison


def by_stage(stage):
    """What the annotation page reads with the annotator: each stage's settings."""
    stages = list(stage.study.stages.all())
    return {
        "settings_by_stage": {s.pk: s.answer_settings for s in stages},
        "categories_by_stage": {s.pk: {} for s in stages},
        "dimensions_by_stage": {s.pk: [] for s in stages},
    }


def kinds(*ids) -> list[str]:
    return [Reflection.objects.get(pk=i).kind for i in ids]


@pytest.fixture
def pairwise(study):
    """Stage 1 compares pairs, ties allowed, a reason asked; two laypeople hold its
    first batch (group slots 1 and 2)."""
    stage = make_comparison(study, Stage.Instrument.PAIRWISE, asks_reason=True)
    group = study.groups.get(name="Layperson")
    batch = stage.batches.order_by("context__external_id").first()
    return [
        assignment_create(annotator=annotator, batch=batch)
        for annotator in annotators_create(group=group, count=2)
    ]


def save(assignment, number, read=None, **answer):
    """``read``: what the page read with the annotator (default: read here)."""
    return judgement_record_item(
        annotator_id=assignment.annotator_id,
        assignment_id=assignment.pk,
        number=number,
        answer=Answer(coherent=None, **answer),
        **(read or by_stage(Stage.objects.get(pk=assignment.stage_id))),
    )


def test_the_claim_records_the_batchs_pairs_on_sides_that_alternate(pairwise):
    pairs = batch_pairs(batch=pairwise[0].batch)
    # Human, GPT-2 ×2, GPT-3: five pairs of different systems, then the attention pair.
    assert len(pairs) == 6
    assert kinds(*pairs[-1]) == [Reflection.Kind.ATTENTION_CHECK, Reflection.Kind.SYNTHETIC]
    for assignment in pairwise:
        assert sorted(order_keys(assignment.order)) == sorted(pairs)
    sides = [{(a, b): s for a, b, s in x.order} for x in pairwise]
    assert all(sides[0][pair] != sides[1][pair] for pair in pairs)


def test_a_pairs_answer_is_one_statement_with_its_pair_and_side(pairwise):
    assignment = pairwise[0]
    read = by_stage(assignment.stage)
    with CaptureQueriesContext(connection) as queries:
        _, saved = save(assignment, 1, read, choice="A", reason="  Warmer.  ", seconds_spent=4.0)
    assert len(queries) == 1
    first, second, swapped = assignment.order[0]
    stored = Judgement.objects.get(pk=saved.pk)
    assert (stored.reflection_id, stored.opponent_id, stored.shown_swapped) == (
        first,
        second,
        bool(swapped),
    )
    assert (stored.choice, stored.reason, stored.coherent, stored.revision) == (
        "A",
        "Warmer.",
        None,
        1,
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS
    # Revised from the page that showed revision 1; a page that showed none is stale.
    _, revised = judgement_record_item(
        annotator_id=assignment.annotator_id,
        assignment_id=assignment.pk,
        number=1,
        answer=Answer(coherent=None, choice="Tie"),
        expected_revision=1,
        **by_stage(assignment.stage),
    )
    assert (revised.choice, revised.reason, revised.revision) == ("Tie", "", 2)
    with pytest.raises(ValidationError) as info:
        judgement_record_item(
            annotator_id=assignment.annotator_id,
            assignment_id=assignment.pk,
            number=1,
            answer=Answer(coherent=None, choice="B"),
            expected_revision=0,
            **by_stage(assignment.stage),
        )
    assert info.value.code == ErrorCode.STALE_ANSWER
    assert Judgement.objects.get(pk=saved.pk).choice == "Tie"
    assert Judgement.objects.count() == 1


def test_the_orm_path_saves_a_pair_the_same_way(pairwise):
    """Without the stages' settings the save reads the stage (the ORM path)."""
    assignment = pairwise[1]
    _, saved = judgement_record_item(
        annotator_id=assignment.annotator_id,
        assignment_id=assignment.pk,
        number=2,
        answer=Answer(coherent=None, choice="B"),
    )
    first, second, swapped = assignment.order[1]
    assert (saved.reflection_id, saved.opponent_id, saved.shown_swapped, saved.choice) == (
        first,
        second,
        bool(swapped),
        "B",
    )
    # By its two candidates, either way round: the same answer, revised.
    judgement_record(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=second),
        opponent=Reflection.objects.get(pk=first),
        answer=Answer(coherent=None, choice="A"),
    )
    stored = Judgement.objects.get()
    assert (stored.reflection_id, stored.choice, stored.revision) == (first, "A", 2)


@pytest.mark.parametrize(
    ("answer", "stage_settings", "field", "message"),
    [
        ({"choice": "Tie"}, {"allows_ties": False}, "choice", "allows no ties"),
        ({"choice": "C"}, {}, "choice", "Choose A, B or Tie."),
        ({"choice": ""}, {"allows_ties": False}, "choice", "Choose A or B."),
        ({"choice": "A", "reason": "Why not"}, {"asks_reason": False}, "reason", "no reason"),
        ({"choice": "A", "reason": "x" * 2001}, {}, "reason", "at most 2,000"),
        ({"coherent": True, "empathy": 3}, {}, "coherent", "which of two candidates"),
    ],
)
def test_a_pair_answer_the_stage_does_not_take_is_refused(
    pairwise, answer, stage_settings, field, message
):
    assignment = pairwise[0]
    Stage.objects.filter(pk=assignment.stage_id).update(**stage_settings)
    for path in ("statement", "orm"):
        extra = by_stage(Stage.objects.get(pk=assignment.stage_id)) if path == "statement" else {}
        with pytest.raises(ValidationError) as info:
            judgement_record_item(
                annotator_id=assignment.annotator_id,
                assignment_id=assignment.pk,
                number=1,
                answer=Answer(**{"coherent": None, **answer}),
                **extra,
            )
        assert message in " ".join(info.value.message_dict[field]), path
    assert not Judgement.objects.exists()


def attention_number(assignment) -> int:
    return next(
        n
        for n, (first, _, _) in enumerate(assignment.order, start=1)
        if Reflection.objects.get(pk=first).kind == Reflection.Kind.ATTENTION_CHECK
    )


def answer_all(assignment, attention_choice):
    """Every pair answered A; the attention pair with the choice that makes the given
    candidate win ("second": the real candidate, "first": the off-topic one, or a
    tie)."""
    check = attention_number(assignment)
    for number, (_, _, swapped) in enumerate(assignment.order, start=1):
        choice = "A"
        if number == check:
            wanted = {"second": 1, "first": 0, "tie": None}[attention_choice]
            choice = next(c for c in ("A", "B", "Tie") if pair_winner(c, swapped) == wanted)
        save(assignment, number, choice=choice)


def test_submit_needs_every_pair(pairwise):
    assignment = pairwise[0]
    save(assignment, 1, choice="A")
    with pytest.raises(ValidationError, match="5 of 6 pairs are not answered yet"):
        assignment_submit(assignment=assignment)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


@pytest.mark.parametrize(("winner", "passed"), [("second", True), ("first", False), ("tie", False)])
def test_the_attention_pair_passes_when_the_off_topic_candidate_loses(pairwise, winner, passed):
    assignment = pairwise[0]
    answer_all(assignment, winner)
    submitted = assignment_submit(assignment=assignment)
    assert submitted.attention_passed is passed


def test_analysis_leaves_out_the_attention_pair_and_pairs_of_excluded_sources(pairwise):
    assignment = pairwise[0]
    answer_all(assignment, "second")
    assignment_submit(assignment=assignment)
    analysed = Judgement.objects.analysed()
    assert analysed.count() == 5  # the attention pair is left out
    without_gpt3 = Judgement.objects.analysed(excluded_sources=["GPT-3"])
    # Pairs with GPT-3 on either side: Human–GPT-3 and both GPT-2–GPT-3.
    assert without_gpt3.count() == 2
    assert not without_gpt3.filter(opponent__source="GPT-3").exists()
    assert not without_gpt3.filter(reflection__source="GPT-3").exists()


# --- Ranking ---------------------------------------------------------------------------


@pytest.fixture
def ranking(study):
    """Stage 1 ranks each context's candidates (ties allowed); one layperson holds its
    first batch."""
    stage = make_comparison(study, Stage.Instrument.RANKING)
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    return assignment_create(annotator=annotator, batch=stage.batches.first())


def rank(assignment, numbers, **kwargs):
    """Rank the batch's candidates in their shown order with ``numbers``."""
    return ranking_record(
        annotator_id=assignment.annotator_id,
        assignment_id=assignment.pk,
        ranks=dict(zip(assignment.order, numbers, strict=True)),
        **kwargs,
    )


def stored_ranks(assignment) -> list[int]:
    ranks = dict(Judgement.objects.filter(assignment=assignment).values_list("reflection", "rank"))
    return [ranks[rid] for rid in assignment.order]


def test_a_ranking_keeps_the_times_of_its_save(ranking):
    """Saved on a clock of its own (the demo's, set in the past), a ranking's answers
    carry that time, as every other answer does."""
    earlier = ranking.assigned_at + timedelta(minutes=2)
    rank(ranking, [1, 2, 3, 4, 5], now=earlier)
    assert {(j.created_at, j.updated_at) for j in Judgement.objects.all()} == {(earlier, earlier)}
    later = earlier + timedelta(minutes=1)
    rank(ranking, [5, 4, 3, 2, 1], now=later, expected_revision=1)
    assert {(j.created_at, j.updated_at) for j in Judgement.objects.all()} == {(earlier, later)}


def test_a_ranking_is_saved_whole_with_competition_ranks(ranking):
    # Five candidates: human, GPT-2 ×2, GPT-3, the off-topic one.
    assert len(ranking.order) == 5
    assignment, revision = rank(ranking, [1, 2, 2, 3, 4], seconds_spent=50.0)
    assert stored_ranks(ranking) == [1, 2, 2, 4, 5]
    assert {j.revision for j in Judgement.objects.all()} == {1}
    assert {j.seconds_spent for j in Judgement.objects.all()} == {10.0}  # each a share
    assert assignment.status == Assignment.Status.IN_PROGRESS
    assert revision == 1
    rank(ranking, [5, 4, 3, 2, 1], expected_revision=1)
    assert stored_ranks(ranking) == [5, 4, 3, 2, 1]
    assert {j.revision for j in Judgement.objects.all()} == {2}
    assert Judgement.objects.count() == 5
    with pytest.raises(ValidationError) as info:
        rank(ranking, [1, 2, 3, 4, 5], expected_revision=1)
    assert info.value.code == ErrorCode.STALE_ANSWER
    assert stored_ranks(ranking) == [5, 4, 3, 2, 1]


@pytest.mark.parametrize(
    ("numbers", "stage_settings", "message"),
    [
        ([1, 2, 2, 3, 4], {"allows_ties": False}, "allows no ties"),
        ([1, 2, 3, 4, 6], {}, "from 1 (the best) to 5"),
        ([1, 2, 3, 4, 0], {}, "from 1 (the best) to 5"),
        ([1, 2, 3, 4, None], {}, "1 of 5 have none"),
    ],
)
def test_a_ranking_the_stage_does_not_take_is_refused(ranking, numbers, stage_settings, message):
    Stage.objects.filter(pk=ranking.stage_id).update(**stage_settings)
    with pytest.raises(ValidationError, match=re.escape(message)):
        rank(ranking, numbers)
    assert not Judgement.objects.exists()
    ranking.refresh_from_db()
    assert ranking.status == Assignment.Status.ASSIGNED


def test_a_ranking_of_other_candidates_or_a_closed_batch_is_refused(ranking):
    with pytest.raises(ValidationError, match="only the candidates of this batch"):
        ranking_record(
            annotator_id=ranking.annotator_id,
            assignment_id=ranking.pk,
            ranks={**dict.fromkeys(ranking.order, 1), 999999: 1},
        )
    late = ranking.expires_at + timedelta(seconds=1)
    with pytest.raises(ValidationError, match="ran out"):
        rank(ranking, [1, 2, 3, 4, 5], now=late)
    assert not Judgement.objects.exists()
    ranking.refresh_from_db()
    assert ranking.status == Assignment.Status.EXPIRED
    with pytest.raises(Assignment.DoesNotExist):
        ranking_record(annotator_id=ranking.annotator_id + 1000, assignment_id=ranking.pk, ranks={})


def test_a_pair_or_coherence_answer_is_refused_in_a_ranking_stage(ranking):
    with pytest.raises(ValidationError, match="ranking of all the candidates"):
        save(ranking, 1, choice="A")
    assert not Judgement.objects.exists()


@pytest.mark.parametrize(
    ("numbers", "passed"),
    [
        ("last alone", True),
        ("first", False),
        ("tied last", False),
    ],
)
def test_the_ranking_attention_check_is_last_alone(ranking, numbers, passed):
    check = next(
        i
        for i, rid in enumerate(ranking.order)
        if Reflection.objects.get(pk=rid).kind == Reflection.Kind.ATTENTION_CHECK
    )
    others = [i for i in range(5) if i != check]
    values = [0] * 5
    if numbers == "first":
        values[check] = 1
        for r, i in enumerate(others, start=2):
            values[i] = r
    else:
        values[check] = 5 if numbers == "last alone" else 4
        for r, i in enumerate(others, start=1):
            values[i] = r
    with pytest.raises(ValidationError, match="The ranking is not saved yet"):
        assignment_submit(assignment=ranking)
    rank(ranking, values)
    assert assignment_submit(assignment=ranking).attention_passed is passed
