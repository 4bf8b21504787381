"""The ranking save in one statement (``hot_path.ranking_save`` with the stages given,
as the annotation page calls it): it writes what the locked path writes, all of a
ranking or none of it, and when it writes nothing the locked path says why. Every
refusal leaves the stored ranking as it was."""

import re
import threading
import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from studies.errors import ErrorCode
from studies.locks import assignments_locked
from studies.models import Assignment, Judgement, Stage
from studies.services import annotators_create, assignment_create, ranking_record
from tests.studies.comparison_fixtures import make_comparison


@pytest.fixture
def ranking(study):
    """Stage 1 ranks each context's five candidates (ties allowed); one layperson
    holds its first batch."""
    stage = make_comparison(study, Stage.Instrument.RANKING)
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    return assignment_create(annotator=annotator, batch=stage.batches.first())


def settings_of(assignment) -> dict:
    """What the page reads with the annotator: each of the study's stages' settings."""
    return {s.pk: s.answer_settings for s in assignment.stage.study.stages.all()}


def rank_as_the_page(assignment, numbers, *, revision, ranks=None, settings=None, **kwargs):
    """The page's save: the study's stages given and the revision the page showed."""
    return ranking_record(
        annotator_id=assignment.annotator_id,
        assignment_id=assignment.pk,
        ranks=ranks if ranks is not None else dict(zip(assignment.order, numbers, strict=True)),
        settings_by_stage=settings or settings_of(assignment),
        expected_revision=revision,
        **kwargs,
    )


def prepared_saves() -> list[str]:
    """This connection's prepared statements that lock a batch and write ranks."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        texts = [row[0] for row in cursor.fetchall()]
    return [t for t in texts if "FOR NO KEY UPDATE" in t and "unnest" in t]


def stored(assignment) -> list[tuple[int, int, int]]:
    """(candidate, rank, revision) in the batch's order."""
    rows = {
        j.reflection_id: (j.reflection_id, j.rank, j.revision)
        for j in Judgement.objects.filter(assignment=assignment)
    }
    return [rows[rid] for rid in assignment.order if rid in rows]


def test_the_pages_save_is_one_statement_first_and_revised(ranking):
    settings = settings_of(ranking)
    with CaptureQueriesContext(connection) as first:
        assignment, revision = rank_as_the_page(
            ranking, [1, 2, 2, 4, 5], revision=0, seconds_spent=50.0, settings=settings
        )
    assert len(first.captured_queries) == 1, first.captured_queries
    assert ["INSERT INTO" in t for t in prepared_saves()] == [True]
    assert revision == 1
    assert assignment.status == Assignment.Status.IN_PROGRESS
    assert assignment.started_at is not None
    assert [r for _, r, _ in stored(ranking)] == [1, 2, 2, 4, 5]
    assert {j.seconds_spent for j in Judgement.objects.all()} == {10.0}
    ranking.refresh_from_db()
    assert ranking.status == Assignment.Status.IN_PROGRESS

    later = ranking.started_at + timedelta(minutes=1)
    with CaptureQueriesContext(connection) as revised:
        _, revision = rank_as_the_page(
            ranking, [5, 4, 3, 2, 1], revision=1, now=later, settings=settings
        )
    assert len(revised.captured_queries) == 1
    assert sorted("INSERT INTO" in t for t in prepared_saves()) == [False, True]
    assert revision == 2
    assert [(r, v) for _, r, v in stored(ranking)] == [(5, 2), (4, 2), (3, 2), (2, 2), (1, 2)]
    assert {j.updated_at for j in Judgement.objects.all()} == {later}
    assert len({j.created_at for j in Judgement.objects.all()}) == 1  # kept
    assert {j.seconds_spent for j in Judgement.objects.all()} == {None}


@pytest.mark.parametrize(("revision", "shown"), [(0, "no ranking"), (1, "an older one")])
def test_a_save_from_a_page_that_showed_an_older_ranking_is_stale(ranking, revision, shown):
    rank_as_the_page(ranking, [1, 2, 3, 4, 5], revision=0)
    rank_as_the_page(ranking, [2, 1, 3, 4, 5], revision=1)
    before = stored(ranking)
    with pytest.raises(ValidationError) as info:
        rank_as_the_page(ranking, [5, 4, 3, 2, 1], revision=revision)
    assert info.value.code == ErrorCode.STALE_ANSWER, shown
    assert stored(ranking) == before


def test_rows_at_different_revisions_are_written_all_or_none(ranking):
    """The statement writes every candidate's row or none: a ranking whose rows are
    not all at the revision the page showed is refused whole; the locked path then
    writes every row at one revision past the highest."""
    rank_as_the_page(ranking, [1, 2, 3, 4, 5], revision=0)
    Judgement.objects.filter(reflection_id=ranking.order[0]).update(revision=3)
    before = stored(ranking)
    with pytest.raises(ValidationError) as info:
        rank_as_the_page(ranking, [5, 4, 3, 2, 1], revision=1)
    assert info.value.code == ErrorCode.STALE_ANSWER
    assert stored(ranking) == before
    _, revision = rank_as_the_page(ranking, [5, 4, 3, 2, 1], revision=3)
    assert revision == 4
    assert [(r, v) for _, r, v in stored(ranking)] == [(5, 4), (4, 4), (3, 4), (2, 4), (1, 4)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("another candidate", "Rank only the candidates of this batch."),
        ("an id past bigint", "Rank only the candidates of this batch."),
        ("one candidate fewer", "Give every candidate a rank (1 of 5 have none)."),
        ("ties where none are allowed", "This stage allows no ties"),
        ("a rank out of range", "A rank is a number from 1 (the best) to 5."),
    ],
)
def test_a_ranking_the_batch_or_stage_does_not_take_is_refused_with_its_reason(
    ranking, change, message
):
    rank_as_the_page(ranking, [1, 2, 3, 4, 5], revision=0)
    before = stored(ranking)
    ranks = dict(zip(ranking.order, [5, 4, 3, 2, 1], strict=True))
    if change == "another candidate":
        ranks = {**ranks, 999999: 1}
    elif change == "an id past bigint":
        ranks = {**ranks, 2**63: 1}
    elif change == "one candidate fewer":
        ranks.pop(ranking.order[0])
    elif change == "ties where none are allowed":
        Stage.objects.filter(pk=ranking.stage_id).update(allows_ties=False)
        ranks = dict.fromkeys(ranking.order, 1)
    else:
        ranks[ranking.order[0]] = 6
    with pytest.raises(ValidationError, match=re.escape(message)):
        rank_as_the_page(ranking, None, ranks=ranks, revision=1)
    assert stored(ranking) == before


@pytest.mark.parametrize("every_stage_ranks", [False, True])
def test_a_ranking_posted_to_a_batch_of_another_instrument_is_refused(ranking, every_stage_ranks):
    """The statement takes only a batch of a stage whose settings accept the ranking
    (or, when every stage ranks, any of the study's): a batch of a coherence stage,
    whose order is also a list of candidates, is refused with the stage's reason."""
    second = ranking.stage.study.stages.get(position=2)
    if every_stage_ranks:
        Stage.objects.filter(pk=second.pk).update(instrument=Stage.Instrument.RANKING)
    other = assignment_create(annotator=ranking.annotator, batch=second.batches.first())
    settings = settings_of(ranking)
    if every_stage_ranks:
        with CaptureQueriesContext(connection) as queries:
            rank_as_the_page(
                other, list(range(1, len(other.order) + 1)), revision=0, settings=settings
            )
        assert len(queries.captured_queries) == 1
        assert Judgement.objects.filter(assignment=other).count() == len(other.order)
        return
    with pytest.raises(ValidationError, match="This stage does not ask for a ranking"):
        rank_as_the_page(other, list(range(1, len(other.order) + 1)), revision=0, settings=settings)
    assert not Judgement.objects.exists()


def test_a_closed_batch_or_another_annotators_is_refused(ranking):
    late = ranking.expires_at + timedelta(seconds=1)
    with pytest.raises(ValidationError, match="ran out"):
        rank_as_the_page(ranking, [1, 2, 3, 4, 5], revision=0, now=late)
    ranking.refresh_from_db()
    assert ranking.status == Assignment.Status.EXPIRED
    assert not Judgement.objects.exists()
    other = annotators_create(group=ranking.annotator.group, count=1)[0]
    with pytest.raises(Assignment.DoesNotExist):
        ranking_record(
            annotator_id=other.pk,
            assignment_id=ranking.pk,
            ranks=dict(zip(ranking.order, [1, 2, 3, 4, 5], strict=True)),
            settings_by_stage=settings_of(ranking),
            expected_revision=0,
        )
    assert not Judgement.objects.exists()


def waiting_for_a_lock() -> int:
    """Backends of this database waiting for a lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_two_tabs_saving_the_same_shown_ranking_one_wins_one_is_stale(ranking):
    """Two tabs revise the ranking both showed at revision 1, arriving while the batch
    is locked: one is written (2), the other refused as stale, writing nothing, though
    the statement's snapshot was taken before the first one committed."""
    rank_as_the_page(ranking, [1, 2, 3, 4, 5], revision=0)
    locked, release, results = threading.Event(), threading.Event(), {}

    def hold_the_lock():
        try:
            with transaction.atomic():
                assignments_locked().get(pk=ranking.pk)
                locked.set()
                release.wait(5)
        finally:
            connection.close()

    def revise(numbers):
        try:
            results[numbers] = rank_as_the_page(ranking, list(numbers), revision=1)[1]
        except ValidationError as exc:
            results[numbers] = exc.code
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    assert locked.wait(5)
    tabs = [threading.Thread(target=revise, args=(n,)) for n in ((5, 4, 3, 2, 1), (2, 1, 3, 4, 5))]
    for tab in tabs:
        tab.start()
    # Both tabs' statements are waiting for the lock before it is released.
    deadline = time.monotonic() + 5
    while waiting_for_a_lock() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert waiting_for_a_lock() == 2
    release.set()
    for thread in (holder, *tabs):
        thread.join(10)
    assert sorted(results.values(), key=str) == [2, ErrorCode.STALE_ANSWER], results
    winner = next(numbers for numbers, outcome in results.items() if outcome == 2)
    assert [(r, v) for _, r, v in stored(ranking)] == [(r, 2) for r in winner]
