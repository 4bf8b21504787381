"""Random sequences of claims, submissions, expiries, rejections and waiting, checked
against the assignment rules of the protocol after every step.

A small study (4 contexts, 2 stages, 2 groups of 3 annotators, k = 2, m = 2, one day
between the stages) keeps slots scarce, so "no batch left", releases and re-use all
happen within a few steps. The machine keeps its own clock and passes ``now=`` to
every service. The study is built once per test; each example runs inside a savepoint
that ``teardown`` rolls back, so every example starts from the same study without any
work (and with its own seed).

Every claim is checked against an independent prediction written from the rules in
the docstrings of ``studies/services/`` (``claims.py``, ``stages.py``, ``lifecycle.py``):

* an annotator with an open batch gets it back;
* stage s is complete when nothing is open in it and the annotator submitted m
  batches, or no batch of it can ever be theirs (every batch they never had has k
  submitted annotators of their group), or has had work in a later stage (whatever
  became of it: a stage they have left never reopens);
* stage 2 opens at the last stage-1 submission + min_wait (unless exempted, or work
  in stage 2 is already active); until then the claim raises ``StageLocked`` with
  exactly that instant;
* a new batch is one the annotator never had, still needing their group, and among
  the least-filled of those.
"""

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import NamedTuple

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Min
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from studies.datafiles.materials import materials_import
from studies.errors import ErrorCode
from studies.models import Annotator, Assignment, Batch, Judgement, Reflection, Study
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
    study_create,
    wait_exemption_grant,
)
from tests.conftest import materials_doc

pytestmark = pytest.mark.django_db

K = 2
M = 2
WAIT = timedelta(days=1)
LIMIT = timedelta(minutes=30)
N_CONTEXTS = 4
PER_GROUP = 3
T0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
ACTIVE = Assignment.ACTIVE
OPEN = Assignment.OPEN
SUBMITTED = Assignment.Status.SUBMITTED


class Row(NamedTuple):
    """The columns of an assignment the rules look at."""

    pk: int
    annotator: int
    batch: int
    group: int
    stage: int
    status: str
    assigned_at: datetime
    submitted_at: datetime | None

    @classmethod
    def of(cls, a: Assignment) -> "Row":
        return cls(
            a.pk,
            a.annotator_id,
            a.batch_id,
            a.group_id,
            a.stage_id,
            a.status,
            a.assigned_at,
            a.submitted_at,
        )


def answer_for(kind: str, *, attentive: bool) -> Answer:
    if kind == Reflection.Kind.ATTENTION_CHECK and attentive:
        return Answer(coherent=False, categories=frozenset({"off_topic"}))
    return Answer(coherent=True, empathy=3)


def study_build() -> Study:
    study = study_create(
        slug="properties",
        title="Properties",
        stages=[("GPT-2 stage", timedelta(0)), ("GPT-3 stage", WAIT)],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        overlap_k=K,
        batches_per_stage=M,
        batch_time_limit=LIMIT,
    )
    materials_import(study=study, content=json.dumps(materials_doc(N_CONTEXTS)), fmt="json")
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    for group in study.groups.all():
        annotators_create(group=group, count=PER_GROUP)
    Annotator.objects.filter(study=study).update(
        consented_version=consent_version_current(study=study), consented_at=T0
    )
    return study


class AssignmentRules(RuleBasedStateMachine):
    """Runs on the study with pk ``study_id`` (set by the test), which has no work yet.
    Each example runs in a savepoint that ``teardown`` rolls back."""

    study_id: int

    def __init__(self):
        super().__init__()
        self._savepoint = transaction.atomic()
        # A test's own rollback, marked as Django's TestCase marks its blocks, so the
        # services' durable transactions (claim, submit) may run inside it.
        self._savepoint._from_testcase = True
        self._savepoint.__enter__()
        self.study = Study.objects.get(pk=self.study_id)
        self.annotators = list(
            Annotator.objects.filter(study=self.study).order_by("group__name", "number")
        )
        self.stage_1, self.stage_2 = self.study.stages.order_by("position")
        self.batches = {self.stage_1.pk: set(), self.stage_2.pk: set()}
        self.contexts = {}
        for batch, stage, context in Batch.objects.filter(stage__study=self.study).values_list(
            "pk", "stage", "context"
        ):
            self.batches[stage].add(batch)
            self.contexts[batch] = context
        self.now = T0
        self.exempt: set[int] = set()
        # Refreshed after every step (see ``assignment_rules_hold``).
        self.open_work = self.active_work = False
        self.waiting: list[tuple[Annotator, datetime]] = []

    def teardown(self):
        transaction.set_rollback(True)
        self._savepoint.__exit__(None, None, None)

    @initialize(seed=st.integers(0, 2**31 - 1))
    def reseed(self, seed):
        """Every random choice of the study (shuffles, batch picks) follows its seed."""
        Study.objects.filter(pk=self.study.pk).update(seed=seed)

    # --- independent model of the rules -------------------------------------------------

    def assignments(self):
        return Assignment.objects.filter(stage__study=self.study)

    def snapshot(self) -> list[Row]:
        return [Row(*values) for values in self.assignments().values_list(*Row._fields)]

    def candidates(self, rows: list[Row], annotator, stage) -> dict[int, int]:
        """Batch id -> active assignments of the annotator's group, for the batches of
        ``stage`` the annotator never had and the group still needs."""
        had = {r.batch for r in rows if r.annotator == annotator.pk}
        fill = Counter(
            r.batch for r in rows if r.group == annotator.group_id and r.status in ACTIVE
        )
        return {
            batch: fill[batch]
            for batch in self.batches[stage.pk]
            if batch not in had and fill[batch] < K
        }

    def predict(self, rows: list[Row], annotator) -> SimpleNamespace:
        """Where ``annotator`` stands, from the rules alone."""
        mine = [r for r in rows if r.annotator == annotator.pk]

        def of(stage, statuses):
            return [r for r in mine if r.stage == stage.pk and r.status in statuses]

        def possible(stage) -> bool:
            had = {r.batch for r in mine}
            done = Counter(
                r.batch for r in rows if r.group == annotator.group_id and r.status == SUBMITTED
            )
            return any(b not in had and done[b] < K for b in self.batches[stage.pk])

        def complete(stage, *, left: bool) -> bool:
            submitted = len(of(stage, [SUBMITTED]))
            return not of(stage, OPEN) and (left or submitted >= M or not possible(stage))

        current = next((r.pk for r in mine if r.status in OPEN), None)
        active_2 = bool(of(self.stage_2, ACTIVE))
        done_1 = complete(self.stage_1, left=any(r.stage == self.stage_2.pk for r in mine))
        done_2 = done_1 and complete(self.stage_2, left=False)
        last_1 = max((r.submitted_at for r in of(self.stage_1, [SUBMITTED])), default=None)
        stage = self.stage_2 if done_1 else self.stage_1
        return SimpleNamespace(
            current=current,
            done_1=done_1,
            done_2=done_2,
            last_1=last_1,
            stage=stage,
            candidates=self.candidates(rows, annotator, stage),
            waiting=(
                done_1
                and not done_2
                and annotator.pk not in self.exempt
                and not active_2
                and last_1 is not None
                and self.now < last_1 + WAIT
            ),
        )

    # --- rules ------------------------------------------------------------------------

    def has_open_work(self) -> bool:
        return self.open_work

    def has_active_work(self) -> bool:
        return self.active_work

    def checked_claim(self, annotator) -> Assignment | None:
        """Claim for ``annotator`` at the machine's clock and check the outcome against
        the prediction; returns the assignment handed out, if any."""
        # The claim releases overdue work first; do it here so the prediction sees the
        # same state (the claim's own release is then a no-op).
        assignments_expire_overdue(study_id=self.study.pk, now=self.now)
        before = self.snapshot()
        expect = self.predict(before, annotator)

        try:
            result = assignment_claim(annotator=annotator, now=self.now)
        except StageLocked as exc:
            event("claim: stage 2 locked")
            if exc.unlocks_at - self.now <= timedelta(seconds=2):
                event("claim: stage 2 locked seconds before the unlock instant")
            assert expect.current is None
            assert expect.waiting
            assert exc.stage.pk == self.stage_2.pk
            assert exc.unlocks_at == expect.last_1 + WAIT
            assert self.snapshot() == before
            return None
        except NoWorkAvailable as exc:
            finished = exc.code == ErrorCode.STAGES_COMPLETED
            event(f"claim: no work (finished={finished})")
            assert expect.current is None
            assert not expect.waiting
            assert finished is expect.done_2
            if not finished:
                assert not expect.candidates
            assert self.snapshot() == before
            return None

        if expect.current is not None:
            event("claim: current batch again")
            assert result.pk == expect.current
            assert self.snapshot() == before
            return result
        stage, candidates = expect.stage, expect.candidates
        event(f"claim: new batch in stage {stage.position}")
        if stage.pk == self.stage_2.pk and expect.last_1 and expect.last_1 + WAIT == self.now:
            event("claim: new batch in stage 2 at the unlock instant")
        assert not expect.done_2
        assert not expect.waiting
        after = self.snapshot()
        assert sorted(after) == sorted([*before, Row.of(result)])
        assert result.annotator_id == annotator.pk
        assert result.group_id == annotator.group_id
        assert result.stage_id == stage.pk
        assert result.batch_id in self.batches[stage.pk]
        assert result.status == Assignment.Status.ASSIGNED
        assert (result.assigned_at, result.expires_at) == (self.now, self.now + LIMIT)
        assert result.batch_id in candidates
        assert candidates[result.batch_id] == min(candidates.values())  # least filled first
        assert 1 <= result.group_slot <= K
        assert 1 <= result.annotator_slot <= M
        if stage.pk == self.stage_2.pk:
            # Stage 2 only once stage 1 is complete, and not before the wait has passed
            # since the annotator's own last stage-1 submission.
            assert expect.done_1
            if annotator.pk not in self.exempt and expect.last_1 is not None:
                assert expect.last_1 + WAIT <= result.assigned_at
        judged_before = Judgement.objects.filter(
            assignment__annotator=annotator,
            assignment__stage__position__lt=stage.position,
            assignment__batch__context_id=self.contexts[result.batch_id],
        ).exists()
        assert result.is_recurring is judged_before
        return result

    def answer_all_and_submit(self, assignment: Assignment, *, attentive: bool) -> None:
        reflections = Reflection.objects.in_bulk(assignment.order)
        if assignment.expires_at <= self.now:
            first = reflections[assignment.order[0]]
            with pytest.raises(ValidationError) as excinfo:
                judgement_record(
                    assignment=assignment,
                    reflection=first,
                    answer=answer_for(first.kind, attentive=True),
                    now=self.now,
                )
            assert excinfo.value.messages == [
                "The time for this batch ran out; answers can no longer be changed."
            ]
            assignment.refresh_from_db()
            assert (assignment.status, assignment.expired_at) == ("expired", self.now)
            event("submit: too late")
            return
        for reflection_id in assignment.order:
            judgement_record(
                assignment=assignment,
                reflection=reflections[reflection_id],
                answer=answer_for(reflections[reflection_id].kind, attentive=attentive),
                now=self.now,
            )
        submitted = assignment_submit(assignment=assignment, now=self.now)
        assert submitted.status == SUBMITTED  # this study records attention failures only
        assert submitted.submitted_at == self.now
        assert submitted.attention_passed is attentive
        event(f"submit: stage {submitted.stage.position}")

    @rule(i=st.integers(0, 2 * PER_GROUP - 1))
    def claim(self, i):
        self.checked_claim(self.annotators[i])

    @precondition(has_open_work)
    @rule(data=st.data(), attentive=st.booleans())
    def submit_open_batch(self, data, attentive):
        open_ = list(self.assignments().filter(status__in=OPEN).order_by("pk"))
        self.answer_all_and_submit(data.draw(st.sampled_from(open_)), attentive=attentive)

    @rule(i=st.integers(0, 2 * PER_GROUP - 1), minutes=st.integers(1, 40))
    def sitting(self, i, minutes):
        """Claim, answer everything and submit ``minutes`` later, then ask for the next
        batch at once (what the page after a submission does)."""
        annotator = self.annotators[i]
        assignment = self.checked_claim(annotator)
        if assignment is not None:
            self.now += timedelta(minutes=minutes)
            self.answer_all_and_submit(assignment, attentive=True)
            self.checked_claim(annotator)

    @precondition(lambda self: self.waiting)
    @rule(data=st.data(), seconds=st.integers(-2, 2))
    def claim_around_unlock(self, data, seconds):
        """Jump to (about) the instant stage 2 opens for a waiting annotator and claim."""
        annotator, unlocks_at = data.draw(st.sampled_from(self.waiting))
        self.now = max(self.now, unlocks_at + timedelta(seconds=seconds))
        self.checked_claim(annotator)

    @precondition(has_open_work)
    @rule(minutes=st.integers(0, 60))
    def expire_overdue(self, minutes):
        """Move past the time limit of the oldest open batch, then release overdue work."""
        oldest = self.assignments().filter(status__in=OPEN).aggregate(t=Min("expires_at"))["t"]
        self.now = max(self.now, oldest + timedelta(minutes=minutes))
        overdue = set(
            self.assignments()
            .filter(status__in=OPEN, expires_at__lte=self.now)
            .values_list("pk", flat=True)
        )
        assert overdue
        # (Compared with those expired before: one expired by hand at this same instant
        # has this expired_at too.)
        expired = self.assignments().filter(status=Assignment.Status.EXPIRED)
        before = set(expired.values_list("pk", flat=True))
        assert assignments_expire_overdue(study_id=self.study.pk, now=self.now) == len(overdue)
        now_expired = set(expired.filter(expired_at=self.now).values_list("pk", flat=True))
        assert now_expired - before == overdue
        assert not self.assignments().filter(status__in=OPEN, expires_at__lte=self.now).exists()

    @precondition(has_open_work)
    @rule(data=st.data())
    def expire_one(self, data):
        open_ = list(self.assignments().filter(status__in=OPEN).order_by("pk"))
        assignment = data.draw(st.sampled_from(open_))
        assert assignment_expire(assignment=assignment, now=self.now) == 1
        assignment.refresh_from_db()
        assert (assignment.status, assignment.expired_at) == ("expired", self.now)

    @precondition(has_active_work)
    @rule(data=st.data())
    def reject(self, data):
        active = list(self.assignments().filter(status__in=ACTIVE).order_by("pk"))
        assignment = data.draw(st.sampled_from(active))
        rejected = assignment_reject(
            assignment=assignment, reason="Answers look random.", now=self.now
        )
        assert rejected.status == Assignment.Status.REJECTED
        assert rejected.rejected_at == self.now
        assert rejected.rejection_reason == "Answers look random."
        event(f"reject: was {assignment.status}")

    @rule(minutes=st.integers(1, 40) | st.integers(1, 36).map(lambda hours: 60 * hours))
    def advance_clock(self, minutes):
        self.now += timedelta(minutes=minutes)

    @rule(i=st.sampled_from([0, PER_GROUP]))
    def grant_wait_exemption(self, i):
        """A researcher lets the first annotator of a group skip the wait."""
        annotator = self.annotators[i]
        wait_exemption_grant(annotator=annotator, stage=self.stage_2, reason="Travelling.")
        self.exempt.add(annotator.pk)

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def assignment_rules_hold(self):
        """Checked after every step on one snapshot of the study's work, which also
        answers the rules' preconditions until the next step."""
        rows = self.snapshot()
        active = [r for r in rows if r.status in ACTIVE]
        self.open_work = any(r.status in OPEN for r in active)
        self.active_work = bool(active)
        self.waiting = []
        for annotator in self.annotators:
            expect = self.predict(rows, annotator)
            if expect.waiting:
                self.waiting.append((annotator, expect.last_1 + WAIT))

        per_batch = Counter((r.batch, r.group) for r in active)
        assert max(per_batch.values(), default=0) <= K
        per_annotator = Counter((r.annotator, r.stage) for r in active)
        assert max(per_annotator.values(), default=0) <= M
        open_per_annotator = Counter(r.annotator for r in active if r.status in OPEN)
        assert max(open_per_annotator.values(), default=0) <= 1
        per_context = Counter((r.annotator, r.stage, self.contexts[r.batch]) for r in active)
        assert max(per_context.values(), default=0) <= 1

        # An active stage-2 assignment began at least min_wait after its annotator's last
        # (still valid) stage-1 submission, unless a researcher exempted them.
        last_1: dict[int, datetime] = {}
        for r in active:
            if r.stage == self.stage_1.pk and r.status == SUBMITTED:
                last_1[r.annotator] = max(r.submitted_at, last_1.get(r.annotator, r.submitted_at))
        for r in active:
            if (
                r.stage == self.stage_2.pk
                and r.annotator in last_1
                and r.annotator not in self.exempt
            ):
                assert last_1[r.annotator] + WAIT <= r.assigned_at


@pytest.fixture(autouse=True)
def _unanswered_claims_held_until_the_time_limit(settings):
    """The machine's model expires batches at their time limit only; the earlier release
    of claims nobody answers is covered in test_assignments and the concurrency tests."""
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 365 * 24 * 3600


def test_random_claims_submissions_expiries_and_rejections_keep_the_assignment_rules(db):
    study = study_build()

    class OnThisStudy(AssignmentRules):
        study_id = study.pk

    run_state_machine_as_test(
        OnThisStudy,
        settings=settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )
