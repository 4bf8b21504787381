"""Whole studies run through the services on a simulated clock.

The main simulation: 15 contexts, 2 stages, 2 groups of 9 annotators, k = 3, m = 5,
a 3-day wait before stage 2. 15 × 3 = 9 × 5, so supply and demand match exactly and
every slot must be used. Annotators work honestly (every item answered, the attention
check failed as intended) in one-hour sessions, one after the other, and each starts
stage 2 at the very instant their own wait ends. Every service call gets ``now=``.

The last two tests pin rules that are easy to break: a stage the annotator has left
is never reopened, and annotators who take turns rather than work in sessions still
get m batches each when supply equals demand (a plain random pick can strand the
last of them).
"""

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Count

from studies.datafiles.materials import materials_import
from studies.errors import ErrorCode
from studies.models import Annotator, Assignment, Judgement, Reflection, Study
from studies.services import (
    Answer,
    NoWorkAvailable,
    StageLocked,
    annotators_create,
    assignment_claim,
    assignment_reject,
    assignment_submit,
    consent_version_current,
    judgement_record,
    study_create,
)
from tests.conftest import materials_doc

N_CONTEXTS = 15
PER_GROUP = 9
K = 3
M = 5
WAIT = timedelta(days=3)
T0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
SESSION = timedelta(hours=1)
PER_BATCH = timedelta(minutes=10)
SUBMITTED = Assignment.Status.SUBMITTED


@pytest.fixture
def sim_study(study):
    """The ``study`` fixture (k = 3, m = 5, 3-day waits) with 15 contexts, open."""
    assert (study.overlap_k, study.batches_per_stage) == (K, M)
    assert list(study.stages.order_by("position").values_list("min_wait", flat=True)) == [
        WAIT,
        WAIT,
    ]
    materials_import(study=study, content=json.dumps(materials_doc(N_CONTEXTS)), fmt="json")
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    return study


def enrol(study, per_group: int) -> list[Annotator]:
    """``per_group`` consented annotators in each group, in the order they will work:
    Expert 1, Layperson 1, Expert 2, ..."""
    for group in study.groups.all():
        annotators_create(group=group, count=per_group)
    Annotator.objects.filter(study=study).update(
        consented_version=consent_version_current(study=study), consented_at=T0 - timedelta(days=1)
    )
    return list(Annotator.objects.filter(study=study).order_by("number", "group__name"))


def honest_answer(kind: str) -> Answer:
    if kind == Reflection.Kind.ATTENTION_CHECK:
        return Answer(coherent=False, categories=frozenset({"off_topic"}))
    return Answer(coherent=True, empathy=4)


def annotate_and_submit(assignment: Assignment, *, start: datetime) -> datetime:
    """Answer every item one minute apart, submit a minute later; returns the
    submission time."""
    reflections = Reflection.objects.in_bulk(assignment.order)
    now = start
    for reflection_id in assignment.order:
        now += timedelta(minutes=1)
        reflection = reflections[reflection_id]
        judgement_record(
            assignment=assignment,
            reflection=reflection,
            answer=honest_answer(reflection.kind),
            now=now,
        )
    now += timedelta(minutes=1)
    submitted = assignment_submit(assignment=assignment, now=now)
    assert submitted.status == SUBMITTED
    return now


def work_session(annotator: Annotator, *, start: datetime, stage_position: int) -> datetime:
    """Claim, annotate and submit m batches of one stage; returns the last submission
    time."""
    now, last = start, None
    for _ in range(M):
        assignment = assignment_claim(annotator=annotator, now=now)
        assert assignment.stage.position == stage_position
        assert assignment.assigned_at == now
        last = annotate_and_submit(assignment, start=now)
        now += PER_BATCH
    return last


def test_a_study_annotated_honestly_ends_with_exact_overlap_workload_and_recurrence(sim_study):
    annotators = enrol(sim_study, PER_GROUP)

    last_in_stage_1 = {}
    for i, annotator in enumerate(annotators):
        last_in_stage_1[annotator.pk] = work_session(
            annotator, start=T0 + i * SESSION, stage_position=1
        )

    for annotator in annotators:
        unlocks_at = last_in_stage_1[annotator.pk] + WAIT
        with pytest.raises(StageLocked) as excinfo:
            assignment_claim(annotator=annotator, now=unlocks_at - timedelta(seconds=1))
        assert excinfo.value.stage.position == 2
        assert excinfo.value.unlocks_at == unlocks_at
        work_session(annotator, start=unlocks_at, stage_position=2)

    assert not Assignment.objects.exclude(status=SUBMITTED).exists()

    per_batch = Counter(
        Assignment.objects.filter(status=SUBMITTED)
        .values("batch", "group")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    assert per_batch == {K: N_CONTEXTS * 2 * 2}  # every (batch, group): 30 batches × 2 groups

    per_annotator = Counter(
        Assignment.objects.filter(status=SUBMITTED)
        .values("annotator", "stage")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    assert per_annotator == {M: 2 * PER_GROUP * 2}  # every (annotator, stage): 18 × 2 stages

    assert list(
        Assignment.objects.values_list("attention_passed", flat=True).order_by().distinct()
    ) == [True]

    judged_in_stage_1 = set(
        Judgement.objects.filter(assignment__stage__position=1).values_list(
            "assignment__annotator_id", "assignment__batch__context_id"
        )
    )
    stage_2 = Assignment.objects.filter(stage__position=2).values_list(
        "pk", "annotator_id", "batch__context_id"
    )
    expected_recurring = {pk for pk, who, context in stage_2 if (who, context) in judged_in_stage_1}
    recurring = set(Assignment.objects.filter(is_recurring=True).values_list("pk", flat=True))
    assert recurring == expected_recurring
    assert len(recurring) == len(expected_recurring) > 0  # 15 contexts, 5 per stage: some recur

    after = max(Assignment.objects.values_list("submitted_at", flat=True)) + timedelta(days=30)
    for annotator in annotators:
        with pytest.raises(NoWorkAvailable) as excinfo:
            assignment_claim(annotator=annotator, now=after)
        assert excinfo.value.code == ErrorCode.STAGES_COMPLETED
        assert str(excinfo.value) == "You have completed every stage of this study."
    assert Assignment.objects.count() == 2 * PER_GROUP * 2 * M


def test_second_stage_opens_exactly_when_the_annotators_own_wait_ends(sim_study):
    annotator = enrol(sim_study, 1)[0]
    last = work_session(annotator, start=T0, stage_position=1)
    unlocks_at = last + WAIT

    with pytest.raises(StageLocked) as excinfo:
        assignment_claim(annotator=annotator, now=unlocks_at - timedelta(seconds=1))
    assert excinfo.value.stage.position == 2
    assert excinfo.value.unlocks_at == unlocks_at
    assert not Assignment.objects.filter(stage__position=2).exists()

    assignment = assignment_claim(annotator=annotator, now=unlocks_at)
    assert assignment.stage.position == 2
    assert assignment.assigned_at == unlocks_at
    assert assignment.annotator_id == annotator.pk


def test_an_annotator_who_started_stage_2_is_not_sent_back_to_stage_1(sim_study):
    """annotator_stage_states: a stage is complete once the annotator has work in a
    later stage, "so a slot that opens up later never reopens a stage they have left"
    (and the protocol: stages in order). A researcher rejecting one of their stage-1
    batches, then their stage-2 batch running out of time, must not send them back."""
    annotator = enrol(sim_study, 1)[0]
    last = work_session(annotator, start=T0, stage_position=1)
    started = assignment_claim(annotator=annotator, now=last + WAIT)
    assert started.stage.position == 2
    spam = Assignment.objects.filter(annotator=annotator, stage__position=1).earliest("pk")
    assignment_reject(assignment=spam, reason="Copy-pasted answers.", now=last + WAIT)

    later = started.expires_at + timedelta(minutes=1)  # the stage-2 batch expired
    after = assignment_claim(annotator=annotator, now=later)

    assert after.stage.position == 2
    assert after.pk != started.pk


def test_annotators_taking_turns_still_get_m_batches_when_supply_equals_demand(db):
    """Three annotators of one group take turns, one batch each, on three batches with
    k = 2 and m = 2: 3 × 2 = 3 × 2, so the protocol (exactly k per batch, m per annotator)
    leaves one way to finish, every annotator with 2 batches and every batch with 2
    annotators. The picks follow the study seed, so try several: a plain random pick
    among the least-filled batches strands the last annotator for some of them."""
    outcomes = {}
    for seed in range(10):
        study = study_create(
            slug=f"turns-{seed}",
            title="Taking turns",
            stages=[("GPT-2 stage", WAIT), ("GPT-3 stage", WAIT)],
            groups=["Layperson"],
            information_sheet="What the study is about.",
            consent_text="I agree to take part.",
            overlap_k=2,
            batches_per_stage=2,
            seed=seed,
        )
        materials_import(study=study, content=json.dumps(materials_doc(3)), fmt="json")
        Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
        annotators = enrol(study, 3)
        now, turns = T0, []
        for _ in range(2):
            for annotator in annotators:
                try:
                    assignment = assignment_claim(annotator=annotator, now=now)
                except (NoWorkAvailable, StageLocked) as exc:
                    turns.append(f"{annotator.pseudonym}: {exc}")
                    continue
                turns.append(f"{annotator.pseudonym}: {assignment.batch.context.external_id}")
                now = annotate_and_submit(assignment, start=now) + timedelta(minutes=1)
        per_batch = sorted(
            Assignment.objects.filter(stage__study=study, status=SUBMITTED)
            .values("batch")
            .annotate(n=Count("id"))
            .values_list("n", flat=True)
        )
        outcomes[seed] = (per_batch, turns)

    stranded = {
        seed: turns for seed, (per_batch, turns) in outcomes.items() if per_batch != [2] * 3
    }
    assert not stranded, "\n".join(f"seed {seed}: {'; '.join(t)}" for seed, t in stranded.items())
