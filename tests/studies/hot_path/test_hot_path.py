"""The annotation page's hot path reads with raw SQL (selectors, sessions, the save's
locking read and upsert). These pin that they return exactly what the ORM would, and
refuse what the ORM path refused."""

import importlib
import threading
import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from studies.errors import ErrorCode
from studies.locks import assignments_locked
from studies.models import (
    Annotator,
    AnnotatorSession,
    Assignment,
    ErrorCategory,
    ItemDraft,
    Judgement,
    Reflection,
    Study,
)
from studies.selectors import annotator_of_session, item_panel_reads
from studies.services import (
    Answer,
    AssignmentClosed,
    annotator_needs_consent,
    annotators_create,
    assignment_claim,
    consent_version_current,
    consent_version_sync,
    judgement_record,
    judgement_record_item,
)
from studies.sessions import SessionStore


def fields_of(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    loaded_study.refresh_from_db()
    return loaded_study


@pytest.fixture
def annotator(open_study):
    annotator = annotators_create(group=open_study.groups.get(name="Layperson"), count=1)[0]
    annotator.consented_version = consent_version_current(study=open_study)
    annotator.consented_at = annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    return annotator


# --- who is asking -----------------------------------------------------------------------


def session_of(annotators: dict) -> str:
    """A session signed in as ``annotators`` ({slug: id}), written by the site's store."""
    store = SessionStore()
    store["annotators"] = annotators
    store.create()
    return store.session_key


def annotator_signed_in(*, annotator_id: int, slug: str) -> Annotator | None:
    return annotator_of_session(session_key=session_of({slug: annotator_id}), slug=slug)


def test_signed_in_annotator_and_study_equal_what_the_orm_reads(annotator, open_study):
    found = annotator_signed_in(annotator_id=annotator.pk, slug="pilot")
    assert fields_of(found) == fields_of(Annotator.objects.get(pk=annotator.pk))
    assert fields_of(found.study) == fields_of(Study.objects.get(pk=open_study.pk))
    # Converted like the ORM converts: a duration, aware datetimes.
    assert isinstance(found.study.batch_time_limit, timedelta)
    assert timezone.is_aware(found.consented_at) and timezone.is_aware(found.study.created_at)
    assert found.current_consent_id == consent_version_current(study=open_study).pk


def test_signed_in_annotator_needs_no_query_for_the_consent_check(
    annotator, open_study, django_assert_num_queries
):
    found = annotator_signed_in(annotator_id=annotator.pk, slug="pilot")
    with django_assert_num_queries(0):
        assert annotator_needs_consent(annotator=found) is False
    # A new consent version: the next read asks for consent again.
    Study.objects.filter(pk=open_study.pk).update(consent_text="New terms.")
    open_study.refresh_from_db()
    consent_version_sync(study=open_study)
    again = annotator_signed_in(annotator_id=annotator.pk, slug="pilot")
    assert again.current_consent_id != found.current_consent_id
    assert annotator_needs_consent(annotator=again) is True


def test_signed_in_annotator_is_none_when_inactive_or_of_another_study(annotator, db):
    assert annotator_signed_in(annotator_id=annotator.pk, slug="another") is None
    key = session_of({"pilot": annotator.pk})
    assert annotator_of_session(session_key=key, slug="another") is None  # not signed in there
    assert annotator_of_session(session_key=key, slug="pilot").pk == annotator.pk
    Annotator.objects.filter(pk=annotator.pk).update(is_active=False)
    assert annotator_of_session(session_key=key, slug="pilot") is None


def test_signed_in_annotator_is_none_for_unknown_or_expired_sessions(annotator):
    key = session_of({"pilot": annotator.pk, "other-study": 10**9})
    assert annotator_of_session(session_key=key, slug="pilot").pk == annotator.pk
    assert annotator_of_session(session_key="x" * 32, slug="pilot") is None
    assert annotator_of_session(session_key=key, slug="other-study") is None  # no such study
    AnnotatorSession.objects.filter(pk=key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    assert annotator_of_session(session_key=key, slug="pilot") is None


def test_the_session_row_keeps_its_annotators_in_step_with_its_data(client, annotator):
    """The column the one-query read uses is written with the session data, also
    when signing in again gives the session a new key."""
    client.get(f"/i/{annotator.access_token}/")
    key = client.cookies["sessionid"].value
    row = AnnotatorSession.objects.get(pk=key)
    assert row.annotators == row.get_decoded()["annotators"] == {"pilot": annotator.pk}
    other = annotators_create(group=annotator.group, count=1)[0]
    client.get(f"/i/{other.access_token}/")  # another identity: a new session key
    new_key = client.cookies["sessionid"].value
    assert new_key != key and not AnnotatorSession.objects.filter(pk=key).exists()
    assert AnnotatorSession.objects.get(pk=new_key).annotators == {"pilot": other.pk}
    assert annotator_of_session(session_key=new_key, slug="pilot").pk == other.pk


# --- sessions ----------------------------------------------------------------------------


def test_session_store_reads_what_it_wrote_and_not_after_expiry(db):
    key = session_of({"pilot": 7})
    assert SessionStore(key).load() == {"annotators": {"pilot": 7}}
    assert AnnotatorSession.objects.get(pk=key).get_decoded() == {"annotators": {"pilot": 7}}
    AnnotatorSession.objects.filter(pk=key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    expired = SessionStore(key)
    assert expired.load() == {}
    assert expired.session_key is None  # a new session, not the expired one's key


def test_the_migration_moves_live_sessions_with_their_annotators(db):
    """Deploying migration 0005 signs nobody out: Django's table's live sessions move
    to the new one with the annotators signed in with them; expired ones do not."""
    from django.apps import apps
    from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
    from django.contrib.sessions.models import Session

    migration = importlib.import_module("studies.migrations.0005_annotator_session")
    live, expired = DjangoSessionStore(), DjangoSessionStore()
    live["annotators"] = {"pilot": 7}
    expired["annotators"] = {"pilot": 8}
    live.create()
    expired.create()
    Session.objects.filter(pk=expired.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    migration.sessions_move(apps, None)
    moved = AnnotatorSession.objects.get()
    assert (moved.session_key, moved.annotators) == (live.session_key, {"pilot": 7})
    assert SessionStore(live.session_key).load() == {"annotators": {"pilot": 7}}
    assert not Session.objects.exists()


def test_signing_out_signs_the_annotator_out(client, annotator):
    client.get(f"/i/{annotator.access_token}/")
    assert client.get("/s/pilot/").status_code == 200
    client.logout()  # flushes the session: its row is gone
    assert client.get("/s/pilot/").status_code == 403


def test_annotator_pages_vary_on_the_cookie_without_a_template(client, annotator):
    """The save's redirect renders nothing (no CSRF token adds the header), yet who
    is asking came from the session cookie."""
    assignment = assignment_claim(annotator=annotator)
    client.get(f"/i/{annotator.access_token}/")
    body = {"coherent": "yes", "empathy": "4", "revision": "0"}
    response = client.post(f"/s/pilot/b/{assignment.pk}/1/", body)
    assert response.status_code == 302
    assert "Cookie" in response["Vary"]


def test_an_expired_session_shows_the_signed_out_page(client, annotator):
    client.get(f"/i/{annotator.access_token}/")
    assert client.get("/s/pilot/").status_code == 200
    AnnotatorSession.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    response = client.get("/s/pilot/")
    assert response.status_code == 403
    assert "personal link" in response.content.decode()


# --- the save ------------------------------------------------------------------------------


def test_item_save_refuses_another_annotators_batch_and_numbers_outside_it(annotator):
    assignment = assignment_claim(annotator=annotator)
    other = annotators_create(group=annotator.group, count=1)[0]
    yes = Answer(coherent=True, empathy=3)
    common = dict(answer=yes, categories={"malformed": 0})
    with pytest.raises(Assignment.DoesNotExist):
        judgement_record_item(
            annotator_id=other.pk, assignment_id=assignment.pk, number=1, **common
        )
    for number in (0, -1, len(assignment.order) + 1, 2**31, 3_000_000_000):
        with pytest.raises(Assignment.DoesNotExist):
            judgement_record_item(
                annotator_id=annotator.pk, assignment_id=assignment.pk, number=number, **common
            )
    assert not Judgement.objects.exists()


def test_item_save_with_a_revision_for_an_answer_that_is_not_there_is_stale(annotator):
    assignment = assignment_claim(annotator=annotator)
    with pytest.raises(ValidationError) as info:
        judgement_record_item(
            annotator_id=annotator.pk,
            assignment_id=assignment.pk,
            number=1,
            answer=Answer(coherent=True, empathy=3),
            categories={"malformed": 0},
            expected_revision=2,
        )
    assert info.value.code == ErrorCode.STALE_ANSWER
    assert not Judgement.objects.exists()  # never re-created, nor left behind
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


def test_item_save_marks_the_batch_in_progress_on_the_first_answer_only(annotator):
    """On PostgreSQL the save is one statement; the same rules hold on both paths."""
    assignment = assignment_claim(annotator=annotator)
    first, later = timezone.now(), timezone.now() + timedelta(minutes=2)
    common = dict(annotator_id=annotator.pk, assignment_id=assignment.pk, categories={})
    saved, judgement = judgement_record_item(
        number=1, answer=Answer(coherent=True, empathy=2), now=first, **common
    )
    assert (saved.status, saved.started_at) == (Assignment.Status.IN_PROGRESS, first)
    assert (judgement.reflection_id, judgement.revision) == (assignment.order[0], 1)
    judgement_record_item(number=2, answer=Answer(coherent=True, empathy=3), now=later, **common)
    assignment.refresh_from_db()
    assert (assignment.status, assignment.started_at) == (Assignment.Status.IN_PROGRESS, first)
    stored = Judgement.objects.get(assignment=assignment, reflection_id=assignment.order[1])
    assert (stored.empathy, stored.created_at, stored.updated_at) == (3, later, later)


def test_item_save_checks_the_revision_the_page_showed(annotator):
    assignment = assignment_claim(annotator=annotator)
    common = dict(annotator_id=annotator.pk, assignment_id=assignment.pk, number=1, categories={})
    judgement_record_item(answer=Answer(coherent=True, empathy=2), expected_revision=0, **common)
    with pytest.raises(ValidationError) as info:
        judgement_record_item(
            answer=Answer(coherent=True, empathy=5), expected_revision=0, **common
        )
    assert info.value.code == ErrorCode.STALE_ANSWER
    _, revised = judgement_record_item(
        answer=Answer(coherent=True, empathy=4), expected_revision=1, **common
    )
    stored = Judgement.objects.get(assignment=assignment)
    assert (revised.revision, stored.revision, stored.empathy) == (2, 2, 4)


def test_item_save_after_the_deadline_expires_the_batch_and_writes_nothing(annotator):
    assignment = assignment_claim(annotator=annotator)
    late = assignment.expires_at + timedelta(seconds=1)
    with pytest.raises(ValidationError, match="ran out"):
        judgement_record_item(
            annotator_id=annotator.pk,
            assignment_id=assignment.pk,
            number=1,
            answer=Answer(coherent=True, empathy=2),
            categories={},
            now=late,
        )
    assignment.refresh_from_db()
    assert (assignment.status, assignment.expired_at) == (Assignment.Status.EXPIRED, late)
    assert not Judgement.objects.exists()


def test_an_invalid_answer_to_a_batch_past_its_deadline_is_told_the_time_ran_out(annotator):
    """The batch's state is checked before the answer, on every database and through
    both entry points: the batch expires, and nothing is written."""
    assignment = assignment_claim(annotator=annotator)
    late = assignment.expires_at + timedelta(seconds=1)
    invalid = Answer(coherent=False)  # a No without categories
    with pytest.raises(AssignmentClosed, match="ran out"):
        judgement_record_item(
            annotator_id=annotator.pk,
            assignment_id=assignment.pk,
            number=1,
            answer=invalid,
            categories={},
            now=late,
        )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED
    reflection = Reflection.objects.get(pk=assignment.order[0])
    with pytest.raises(AssignmentClosed, match="ran out"):
        judgement_record(assignment=assignment, reflection=reflection, answer=invalid, now=late)
    assert not Judgement.objects.exists()


def test_signed_in_annotator_brings_the_categories_in_display_order(annotator, open_study):
    ErrorCategory.objects.filter(study=open_study).update(order=5)
    ErrorCategory.objects.filter(study=open_study, slug="parroting").update(order=1)
    found = annotator_signed_in(annotator_id=annotator.pk, slug="pilot")
    expected = ErrorCategory.objects.filter(study=open_study).order_by("order", "bit")
    assert [fields_of(c) for c in found.study.categories_in_order] == [
        fields_of(c) for c in expected
    ]
    assert found.study.categories_in_order[0].slug == "parroting"
    assert not found.study.categories_in_order[0]._state.adding


def test_a_study_without_categories_has_an_empty_list(annotator, open_study):
    ErrorCategory.objects.filter(study=open_study).delete()
    found = annotator_signed_in(annotator_id=annotator.pk, slug="pilot")
    assert found.study.categories_in_order == []


def test_saved_answers_come_back_as_stored_rows(annotator):
    """Both paths return the row as stored (not a new, unsaved instance)."""
    assignment = assignment_claim(annotator=annotator)
    common = dict(annotator_id=annotator.pk, assignment_id=assignment.pk, categories={})
    _, first = judgement_record_item(number=1, answer=Answer(coherent=True, empathy=2), **common)
    _, again = judgement_record_item(number=1, answer=Answer(coherent=True, empathy=5), **common)
    stored = Judgement.objects.get(assignment=assignment)
    assert fields_of(again) == fields_of(stored)
    assert not again._state.adding and again.created_at == first.created_at
    assert (again.revision, again.empathy) == (2, 5)


def test_item_panel_reads_equal_what_the_orm_reads(annotator):
    assignment = assignment_claim(annotator=annotator)
    first, second = assignment.order[0], assignment.order[1]
    texts, answers, draft = item_panel_reads(assignment_id=assignment.pk, reflection_id=first)
    assert (texts, answers, draft) == ((Reflection.objects.get(pk=first).text, None), {}, None)
    common = dict(annotator_id=annotator.pk, assignment_id=assignment.pk, categories={})
    judgement_record_item(number=1, answer=Answer(coherent=True, empathy=2), **common)
    judgement_record_item(number=2, answer=Answer(coherent=True, empathy=5), **common)
    other = annotators_create(group=annotator.group, count=1)[0]
    other.consented_version = annotator.consented_version
    other.consented_at = other.tutorial_completed_at = timezone.now()
    other.save()
    elsewhere = assignment_claim(annotator=other)  # its answers are not this batch's
    judgement_record_item(
        annotator_id=other.pk,
        assignment_id=elsewhere.pk,
        number=1,
        answer=Answer(coherent=True, empathy=1),
        categories={},
    )
    ItemDraft.objects.create(
        assignment=assignment,
        number=2,
        base_revision=1,
        fields={"coherent": ["no"]},
        updated_at=timezone.now(),
    )
    texts, answers, draft = item_panel_reads(
        assignment_id=assignment.pk, reflection_id=second, number=2
    )
    assert draft == {"base_revision": 1, "fields": {"coherent": ["no"]}}
    assert texts == (Reflection.objects.get(pk=second).text, None)
    assert answers.keys() == {(first, None), (second, None)}
    for (reflection_id, _), judgement in answers.items():
        stored = Judgement.objects.get(assignment=assignment, reflection_id=reflection_id)
        assert fields_of(judgement) == fields_of(stored)
    with pytest.raises(Reflection.DoesNotExist):
        item_panel_reads(assignment_id=assignment.pk, reflection_id=10**12)
    # A pair's: both texts, the second's too.
    texts, _, draft = item_panel_reads(
        assignment_id=assignment.pk, reflection_id=first, opponent_id=second, number=1
    )
    assert draft is None  # item 1 has none
    assert texts == (
        Reflection.objects.get(pk=first).text,
        Reflection.objects.get(pk=second).text,
    )


def test_a_huge_item_number_in_the_url_is_not_found(client, annotator):
    assignment = assignment_claim(annotator=annotator)
    client.get(f"/i/{annotator.access_token}/")
    url = f"/s/pilot/b/{assignment.pk}/3000000000/"
    assert client.post(url, {"coherent": "yes", "empathy": "4"}).status_code == 404
    assert not Judgement.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_save_waiting_behind_a_submit_is_refused_once_the_submit_commits(annotator):
    """Another connection holds the assignment's lock (as ``assignment_submit`` does)
    and submits it; the save, blocked meanwhile, must then find the batch closed and
    write nothing (PostgreSQL re-checks the row after the wait)."""
    assignment = assignment_claim(annotator=annotator)
    locked, result = threading.Event(), {}

    def submit_holding_the_lock():
        try:
            with transaction.atomic():
                assignments_locked().get(pk=assignment.pk)
                locked.set()
                time.sleep(0.5)  # the save arrives and waits for the lock
                Assignment.objects.filter(pk=assignment.pk).update(
                    status=Assignment.Status.SUBMITTED, submitted_at=timezone.now()
                )
        finally:
            connection.close()

    def save():
        try:
            judgement_record_item(
                annotator_id=annotator.pk,
                assignment_id=assignment.pk,
                number=1,
                answer=Answer(coherent=True, empathy=3),
                categories={},
            )
        except Exception as exc:
            result["error"] = exc
        finally:
            connection.close()

    submitter = threading.Thread(target=submit_holding_the_lock)
    submitter.start()
    assert locked.wait(5)
    saver = threading.Thread(target=save)
    started = time.monotonic()
    saver.start()
    saver.join(10)
    submitter.join(10)
    assert time.monotonic() - started >= 0.3  # the save did wait for the lock
    assert isinstance(result.get("error"), AssignmentClosed), result
    assert "submitted" in result["error"].messages[0]
    assert not Judgement.objects.exists()


def _prepared_statements() -> dict[str, int]:
    """This connection's prepared statements: text → executions with a generic plan."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        return dict(cursor.fetchall())


def _save_pages(client, assignment, numbers) -> None:
    for number in numbers:
        url = f"/s/pilot/b/{assignment.pk}/{number}/"
        body = {"coherent": "yes", "empathy": "4", "revision": "0"}
        assert client.post(url, body).status_code == 302


def test_the_save_paths_statements_are_prepared_once_and_reused(client, annotator):
    """The session's annotator and the save are each parsed and planned once on a
    connection (studies.hot_path.prepared_cursor); the ORM's queries are not."""
    assignment = assignment_claim(annotator=annotator)
    client.get(f"/i/{annotator.access_token}/")
    _save_pages(client, assignment, [1])
    first = _prepared_statements()
    texts = "\n".join(first)
    assert len(first) == 2
    assert "studies_session" in texts and "studies_annotator" in texts
    assert "INSERT INTO" in texts and "FOR NO KEY UPDATE" in texts
    # Both are the hot path's (its results are read by name, "<prefix>__<column>"); the
    # ORM's queries of the same requests (the claim, the pages) are never prepared.
    assert all(' AS "a__id"' in text for text in first)
    _save_pages(client, assignment, [2, 3, 4])
    again = _prepared_statements()
    assert again.keys() == first.keys()  # no new statements: the same ones ran again
    assert sum(again.values()) == sum(first.values()) + 3 * 2
    assert Judgement.objects.filter(assignment=assignment).count() == 4


def test_with_prepared_statements_off_the_save_path_works_unprepared(client, annotator):
    """``DJANGO_DB_PREPARED_STATEMENTS=false`` (e.g. behind a pooler that cannot keep
    them): the same statements, bound on the server, nothing prepared."""
    assignment = assignment_claim(annotator=annotator)
    client.get(f"/i/{annotator.access_token}/")
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    connection.connection._prepared.clear()
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None
    try:
        _save_pages(client, assignment, [1, 2])
        assert _prepared_statements() == {}
    finally:
        connection.connection.prepare_threshold = threshold
    stored = Judgement.objects.filter(assignment=assignment).order_by("pk")
    assert [(j.reflection_id, j.empathy, j.revision) for j in stored] == [
        (assignment.order[0], 4, 1),
        (assignment.order[1], 4, 1),
    ]


def test_after_a_refused_save_rolls_back_the_statements_are_prepared_again(client, annotator):
    """A stale save is refused inside a transaction that rolls back, and psycopg then
    forgets the connection's prepared statements; the next saves prepare them anew."""
    assignment = assignment_claim(annotator=annotator)
    client.get(f"/i/{annotator.access_token}/")
    _save_pages(client, assignment, [1])
    stale = {"coherent": "yes", "empathy": "2", "revision": "0"}  # answer 1 is at 1
    assert client.post(f"/s/pilot/b/{assignment.pk}/1/", stale).status_code == 409
    _save_pages(client, assignment, [2])
    texts = "\n".join(_prepared_statements())
    assert "studies_session" in texts and "FOR NO KEY UPDATE" in texts
    revised = {"coherent": "yes", "empathy": "5", "revision": "1"}
    assert client.post(f"/s/pilot/b/{assignment.pk}/1/", revised).status_code == 302
    stored = Judgement.objects.get(assignment=assignment, reflection_id=assignment.order[0])
    assert (stored.revision, stored.empathy) == (2, 5)


@pytest.mark.django_db(transaction=True)
def test_two_revisions_of_the_same_shown_answer_one_wins_one_is_stale(annotator):
    """Two tabs revise the answer both showed as revision 1, arriving together while
    the batch is locked: one revision is written (2), the other is refused as stale
    and writes nothing (the single-statement UPDATE re-checks the revision after
    waiting for the lock)."""
    assignment = assignment_claim(annotator=annotator)
    common = dict(annotator_id=annotator.pk, assignment_id=assignment.pk, number=1, categories={})
    judgement_record_item(answer=Answer(coherent=True, empathy=1), expected_revision=0, **common)
    locked, release, results = threading.Event(), threading.Event(), {}

    def hold_the_lock():
        try:
            with transaction.atomic():
                assignments_locked().get(pk=assignment.pk)
                locked.set()
                release.wait(5)
        finally:
            connection.close()

    def revise(empathy):
        try:
            _, judgement = judgement_record_item(
                answer=Answer(coherent=True, empathy=empathy), expected_revision=1, **common
            )
            results[empathy] = judgement.revision
        except ValidationError as exc:
            results[empathy] = exc.code
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    assert locked.wait(5)
    tabs = [threading.Thread(target=revise, args=(empathy,)) for empathy in (4, 5)]
    for tab in tabs:
        tab.start()
    time.sleep(0.3)  # both are waiting for the lock
    release.set()
    for thread in (holder, *tabs):
        thread.join(10)
    assert sorted(results.values(), key=str) == [2, ErrorCode.STALE_ANSWER], results
    winner = next(empathy for empathy, outcome in results.items() if outcome == 2)
    stored = Judgement.objects.get(assignment=assignment)
    assert (stored.revision, stored.empathy) == (2, winner)


def test_the_load_benchmarks_read_without_the_session_column_finds_the_same(annotator, open_study):
    """bench/load --compare session-column times this read against the column's: it
    must find the same annotator, study, consent version and categories, and nobody
    where the column's finds nobody."""
    from bench.load.without_session_column import annotator_of_session as without_column
    from studies import hot_path

    now = timezone.now()
    key = session_of({"pilot": annotator.pk})
    found = without_column(session_key=key, slug="pilot", now=now)
    expected = hot_path.annotator_of_session(session_key=key, slug="pilot", now=now)
    assert fields_of(found) == fields_of(expected) and found.pk == annotator.pk
    assert fields_of(found.study) == fields_of(expected.study)
    assert found.current_consent_id == expected.current_consent_id
    assert [fields_of(c) for c in found.study.categories_in_order] == [
        fields_of(c) for c in expected.study.categories_in_order
    ]
    assert without_column(session_key=key, slug="other", now=now) is None
    assert hot_path.annotator_of_session.__module__ == "studies.hot_path.reads"  # unpatched
