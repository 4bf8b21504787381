"""Many annotators asking for work at the same moment, on PostgreSQL.

Each claim runs in its own thread with its own database connection, all released
together by a barrier, so the row locks of ``assignment_claim`` (the annotator row,
then candidate batches with SKIP LOCKED) and the partial unique indexes on the slots
are what keep the counts right. After every round the rules are checked with
aggregates over the whole table:

* no batch has more than k active (assigned, in progress, submitted) assignments of
  one group;
* no annotator has more than m active assignments in one stage, nor more than one
  open assignment;
* no annotator has two assignments for one context in one stage;
* every claim returned an assignment of the claiming annotator or raised
  ``NoWorkAvailable`` / ``StageLocked``; anything else fails the test.

A claim that finds every candidate batch locked by others, five times, answers "Many
people are asking for work at this moment" (``NoWorkAvailable``); that is allowed, and
those annotators try again afterwards, one by one.
"""

import contextlib
import json
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count, Q

from studies.datafiles.materials import materials_import
from studies.errors import ErrorCode
from studies.models import Annotator, Assignment, Reflection, Study
from studies.services import (
    Answer,
    NoWorkAvailable,
    StageLocked,
    annotators_create,
    assignment_claim,
    assignment_expire,
    assignment_reject,
    assignment_submit,
    assignments_expire_overdue,
    consent_version_current,
    judgement_record,
)
from tests.conftest import materials_doc
from tests.studies.assignment_rules import assignment_rule_violations


@pytest.fixture(autouse=True)
def _unanswered_claims_held_until_the_time_limit(settings):
    """These races concern the time limit; claims nobody answers are released sooner
    (ASSIGNMENT_UNANSWERED_RELEASE), which test_claims_release_unanswered_slots_under_load
    covers."""
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 24 * 3600


pytestmark = [pytest.mark.django_db(transaction=True)]

K = 3
M = 2
WAIT = timedelta(days=3)  # the ``study`` fixture's wait before stage 2
T0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
ACTIVE = Assignment.ACTIVE
OPEN = Assignment.OPEN
EXPECTED = (NoWorkAvailable, StageLocked)
CROWD = 50  # claims at the same instant (one database connection each)


def open_study(study, *, n_contexts: int, per_group: int) -> list[Annotator]:
    """Give ``study`` k = 3, m = 2 and ``n_contexts`` contexts, open it, and return
    ``per_group`` consented annotators of each of its two groups."""
    Study.objects.filter(pk=study.pk).update(overlap_k=K, batches_per_stage=M)
    materials_import(study=study, content=json.dumps(materials_doc(n_contexts)), fmt="json")
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    for group in study.groups.all():
        annotators_create(group=group, count=per_group)
    Annotator.objects.filter(study=study).update(
        consented_version=consent_version_current(study=study), consented_at=T0
    )
    return list(Annotator.objects.filter(study=study).order_by("pk"))


def wait_for_free_connections(needed: int, timeout: float = 60) -> None:
    """Other test runs may share the server: wait until it can take ``needed`` more
    connections, so that a full server fails with this message, not a broken barrier."""
    deadline = time.monotonic() + timeout
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('max_connections')::int - count(*)"
                " FROM pg_stat_activity WHERE backend_type = 'client backend'"
            )
            (free,) = cursor.fetchone()
        if free >= needed:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"PostgreSQL has {free} free connections; this test needs {needed}.")
        time.sleep(0.5)


def in_parallel(work: Callable[[object], object], items: Iterable[object]) -> list[object]:
    """Call ``work(item)`` for every item, each in its own thread with its own
    database connection, all released at the same moment. Returns, in item order,
    what each call returned or the exception it raised."""
    items = list(items)
    if not items:
        return []
    wait_for_free_connections(len(items))
    barrier = threading.Barrier(len(items))
    outcomes: list[object] = [None] * len(items)

    def run(index: int, item: object) -> None:
        try:
            connection.ensure_connection()  # connect before the barrier: start together
        except BaseException as exc:  # e.g. "too many clients": report it, free the others
            outcomes[index] = exc
            barrier.abort()
            connection.close()
            return
        try:
            barrier.wait(timeout=60)
            outcomes[index] = work(item)
        except BaseException as exc:
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hangs"
    return outcomes


def unexpected(outcomes: list[object], allowed: tuple[type[BaseException], ...] = ()) -> str:
    """Tracebacks of the exceptions that are not ``allowed``."""
    return "\n".join(
        "".join(traceback.format_exception(outcome))
        for outcome in outcomes
        if isinstance(outcome, BaseException) and not isinstance(outcome, allowed)
    )


def is_busy(outcome: object) -> bool:
    """Turned away because every candidate batch was locked by other claims."""
    return isinstance(outcome, NoWorkAvailable) and outcome.code == ErrorCode.CLAIMS_BUSY


def claims_at(annotators: list[Annotator], now: datetime) -> list[object]:
    outcomes = in_parallel(lambda a: assignment_claim(annotator=a, now=now), annotators)
    assert not unexpected(outcomes, EXPECTED), unexpected(outcomes, EXPECTED)
    for annotator, outcome in zip(annotators, outcomes, strict=True):
        if isinstance(outcome, Assignment):
            assert outcome.annotator_id == annotator.pk
    return outcomes


def answer_all_and_submit(assignment: Assignment, *, now: datetime) -> Assignment:
    reflections = Reflection.objects.in_bulk(assignment.order)
    for reflection_id in assignment.order:
        reflection = reflections[reflection_id]
        if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            answer = Answer(coherent=False, categories=frozenset({"off_topic"}))
        else:
            answer = Answer(coherent=True, empathy=4)
        judgement_record(assignment=assignment, reflection=reflection, answer=answer, now=now)
    return assignment_submit(assignment=assignment, now=now)


def submit_in_parallel(work: list[tuple[Assignment, datetime]]) -> None:
    """Answer and submit each assignment at its time, all at once."""
    outcomes = in_parallel(lambda pair: answer_all_and_submit(pair[0], now=pair[1]), work)
    assert not unexpected(outcomes), unexpected(outcomes)
    assert {a.status for a in outcomes} <= {Assignment.Status.SUBMITTED}


def assert_assignment_rules(study) -> None:
    violations = assignment_rule_violations(study, k=K, m=M)
    assert not any(violations.values()), {rule: rows for rule, rows in violations.items() if rows}


def test_many_simultaneous_claims_never_exceed_overlap_or_workload(study):
    """60 annotators, three rounds. In each, 50 of them claim at the same instant and
    the other 10 a moment later, one by one, as do those turned away because of the
    crowd ("try again in a minute"). Between rounds they submit their batches over
    twenty minutes, except every fifth batch, which is left to expire. The last round
    falls amid the stage-2 unlock times, so it mixes stage-1 claims, stage-2 claims
    and locked stages."""
    annotators = open_study(study, n_contexts=20, per_group=30)
    seen: set[str] = set()
    rounds = (T0, T0 + timedelta(days=1), T0 + timedelta(days=1) + WAIT + timedelta(minutes=15))

    for r, now in enumerate(rounds):
        queue = annotators[10 * r :] + annotators[: 10 * r]  # a different 10 come late
        crowd, latecomers = queue[:CROWD], queue[CROWD:]
        outcomes = dict(zip(crowd, claims_at(crowd, now), strict=True))
        assert_assignment_rules(study)
        assert any(isinstance(outcome, Assignment) for outcome in outcomes.values()), now
        if r == 0:
            # 20 contexts × k=3 × 2 groups = 120 free slots for 50 simultaneous claims:
            # nobody may be turned away just because others were claiming too.
            assert all(isinstance(o, Assignment) for o in outcomes.values()), [
                str(o) for o in outcomes.values() if not isinstance(o, Assignment)
            ]
        seen |= {type(outcome).__name__ for outcome in outcomes.values()}

        for annotator in latecomers + [a for a in crowd if is_busy(outcomes[a])]:
            try:
                outcomes[annotator] = assignment_claim(annotator=annotator, now=now)
            except EXPECTED as exc:
                outcomes[annotator] = exc
        assert_assignment_rules(study)
        seen |= {type(outcome).__name__ for outcome in outcomes.values()}

        claimed = [outcomes[a] for a in annotators if isinstance(outcomes[a], Assignment)]
        assert len({a.pk for a in claimed}) == len(claimed)  # one batch per annotator
        submit_in_parallel(
            [(a, now + timedelta(minutes=5 + i % 20)) for i, a in enumerate(claimed) if i % 5]
        )
        assert_assignment_rules(study)

    assert {"Assignment", "StageLocked"} <= seen
    assert Assignment.objects.filter(stage__position=2, status__in=ACTIVE).exists()
    assert Assignment.objects.filter(status=Assignment.Status.EXPIRED).exists()


def test_claims_racing_expiries_and_rejections_reuse_the_released_slots(study):
    """40 annotators want 6 batches × 3 slots per group. Once the slots are taken,
    claims race the release of work: overdue batches expire (lazily in claims and by
    the periodic sweep), a researcher expires and rejects others. The counts hold
    throughout, and afterwards every batch fills up to k again from released slots."""
    n_contexts = 6
    annotators = open_study(study, n_contexts=n_contexts, per_group=20)
    early, late = annotators[::2], annotators[1::2]

    # Fill the slots: the early half asks at T0, the late half 20 minutes later, so at
    # T1 only the early half's batches are overdue. A third of the batches are submitted.
    for annotator in annotators:
        with contextlib.suppress(NoWorkAvailable):  # 40 annotators, 36 slots
            assignment_claim(
                annotator=annotator, now=T0 if annotator in early else T0 + timedelta(minutes=20)
            )
    assert_assignment_rules(study)
    assignments = Assignment.objects.filter(stage__study=study).order_by("pk")
    assert assignments.count() == 2 * n_contexts * K
    submit_in_parallel([(a, T0 + timedelta(minutes=25)) for a in assignments[::3]])

    t1 = T0 + timedelta(minutes=35)
    late_open = list(assignments.filter(status__in=OPEN, annotator__in=late))
    submitted = list(assignments.filter(status=Assignment.Status.SUBMITTED))
    to_expire = late_open[:3]
    to_reject = late_open[3:5] + submitted[:3]
    jobs: list[tuple[str, object]] = [
        ("sweep", None),
        *(("expire", a) for a in to_expire),
        *(("reject", a) for a in to_reject),
        *(("claim", a) for a in annotators),
    ]

    def act(job: tuple[str, object]) -> object:
        action, target = job
        if action == "sweep":
            return assignments_expire_overdue(study_id=study.pk, now=t1)
        if action == "expire":
            return assignment_expire(assignment=target, now=t1)
        if action == "reject":
            return assignment_reject(assignment=target, reason="Spam answers.", now=t1)
        return assignment_claim(annotator=target, now=t1)

    outcomes = in_parallel(act, jobs)
    assert not unexpected(outcomes, EXPECTED), unexpected(outcomes, EXPECTED)
    assert_assignment_rules(study)
    for (action, target), outcome in zip(jobs, outcomes, strict=True):
        if action == "expire":
            assert outcome in (0, 1)  # 0: the annotator's own claim expired it first
        elif action == "reject":
            assert outcome.status == Assignment.Status.REJECTED
        elif action == "claim" and isinstance(outcome, Assignment):
            assert outcome.annotator_id == target.pk
    expired = Assignment.objects.filter(status=Assignment.Status.EXPIRED)
    overdue_at_t1 = assignments.filter(annotator__in=early, submitted_at=None, assigned_at=T0)
    assert set(expired.values_list("pk", flat=True)) >= {
        *overdue_at_t1.values_list("pk", flat=True),
        *(a.pk for a in to_expire),
    }
    rejected = Assignment.objects.filter(status=Assignment.Status.REJECTED)
    assert set(rejected.values_list("pk", flat=True)) == {a.pk for a in to_reject}
    assert any(
        isinstance(outcome, Assignment) and outcome.assigned_at == t1 for outcome in outcomes
    )

    # Whoever has no open batch asks again, all at once, until nobody gets a new one
    # and nobody was turned away for contention.
    for _ in range(20):
        idle = list(
            Annotator.objects.filter(study=study)
            .exclude(assignments__status__in=OPEN)
            .order_by("pk")
        )
        before = Assignment.objects.count()
        outcomes = claims_at(idle, t1 + timedelta(minutes=1))
        assert_assignment_rules(study)
        if Assignment.objects.count() == before and not any(map(is_busy, outcomes)):
            break

    per_batch = (
        Assignment.objects.filter(stage__study=study, stage__position=1)
        .values("batch", "group")
        .annotate(
            active=Count("pk", filter=Q(status__in=ACTIVE)),
            released=Count("pk", filter=~Q(status__in=ACTIVE)),
        )
    )
    assert len(per_batch) == n_contexts * 2
    assert {row["active"] for row in per_batch} == {K}  # every slot taken again
    assert sum(row["released"] for row in per_batch) >= len(to_expire) + len(to_reject)


def test_claims_release_unanswered_slots_under_load(study, settings):
    """Claims nobody answers (idle workers, made-up crowd ids) free their slots after
    ASSIGNMENT_UNANSWERED_RELEASE: 40 annotators race for 36 slots, the winners'
    claims go unanswered except a few, and ten minutes later the others' claims take
    the released slots while the answered ones keep theirs; the counts hold."""
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 10 * 60
    annotators = open_study(study, n_contexts=6, per_group=20)
    first = claims_at(annotators, T0)
    won = [o for o in first if isinstance(o, Assignment)]
    assert len(won) == 2 * 6 * K  # every slot of stage 1 taken
    kept = won[:4]
    for a in kept:  # these started: held until the time limit
        Assignment.objects.filter(pk=a.pk).update(status=Assignment.Status.IN_PROGRESS)
    losers = [a for a, o in zip(annotators, first, strict=True) if not isinstance(o, Assignment)]
    later = T0 + timedelta(minutes=10)
    again = claims_at(losers, later)
    assert_assignment_rules(study)
    assert sum(isinstance(o, Assignment) for o in again) == len(losers)
    for a in kept:
        a.refresh_from_db()
        assert a.status == Assignment.Status.IN_PROGRESS
    expired = Assignment.objects.filter(status=Assignment.Status.EXPIRED)
    assert expired.count() == len(won) - len(kept)
