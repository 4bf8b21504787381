"""Per-stage groups, k and m, and groups' own waits: an annotator whose group does not
take part in a stage skips it, and their next stage waits from their last batch in a
stage they took part in, for that stage's wait for their group; a stage's own k and m
bound its batches; progress, the claim and the database follow."""

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.utils import timezone

from studies.datafiles.materials import materials_import
from studies.errors import ErrorCode
from studies.models import Assignment, Stage, StageGroupWait, Study
from studies.selectors import (
    StageStatus,
    annotator_stage_states,
    annotators_stage_states,
    study_progress,
)
from studies.selectors.stages import stage_tutorial_due
from studies.services import (
    NoWorkAvailable,
    StageLocked,
    assignment_claim,
    assignment_create,
    study_create,
    unlock_notifications_send,
)
from studies.services.stages import stage_groups_validate
from tests.conftest import materials_doc
from tests.studies.services.test_assignments import consented, do_batch

T0 = timezone.now().replace(microsecond=0)
STAGES = ("Lay stage", "Expert stage", "Last stage")


@pytest.fixture
def three_stages(db):
    """Three contexts, three stages (waits 0, 2 days, 1 day), k=2, m=2, open; the
    second stage is the experts' only."""
    study = study_create(
        slug="phases",
        title="Phases",
        stages=[
            (STAGES[0], timedelta(0)),
            (STAGES[1], timedelta(days=2)),
            (STAGES[2], timedelta(days=1)),
        ],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        seed=7,
    )
    materials_import(study=study, content=json.dumps(materials_doc(stages=STAGES)), fmt="json")
    Study.objects.filter(pk=study.pk).update(
        status=Study.Status.OPEN, overlap_k=2, batches_per_stage=2
    )
    study.refresh_from_db()
    study.stages.get(position=2).groups.set([study.groups.get(name="Expert")])
    return study


def statuses(annotator, now) -> list[str]:
    return [s.status for s in annotator_stage_states(annotator=annotator, now=now)]


def finish_stage(annotator, start):
    do_batch(annotator, start)
    return do_batch(annotator, start + timedelta(minutes=10))


def test_a_group_not_taking_part_skips_the_stage_and_waits_from_its_last_stage(three_stages):
    (lay,) = consented(three_stages, "Layperson")
    (expert,) = consented(three_stages, "Expert")
    finished = finish_stage(lay, T0).submitted_at
    finish_stage(expert, T0)
    after = finished + timedelta(minutes=1)
    # The layperson skips the experts' stage; the last stage waits its own day from
    # their last batch of the first stage (not the experts' stage's two days).
    assert statuses(lay, after) == [StageStatus.DONE, StageStatus.SKIPPED, StageStatus.WAITING]
    state = annotator_stage_states(annotator=lay, now=after)[2]
    assert state.unlocks_at == finished + timedelta(days=1)
    with pytest.raises(StageLocked) as locked:
        assignment_claim(annotator=lay, now=after)
    assert locked.value.stage.position == 3
    assignment = assignment_claim(annotator=lay, now=finished + timedelta(days=1))
    assert assignment.stage.position == 3
    # The expert takes the second stage after its two days.
    assert statuses(expert, after)[1] == StageStatus.WAITING
    assert assignment_claim(annotator=expert, now=T0 + timedelta(days=3)).stage.position == 2


def test_a_group_own_wait_replaces_the_stages_for_that_group(three_stages):
    last = three_stages.stages.get(position=3)
    expert_stage = three_stages.stages.get(position=2)
    layperson = three_stages.groups.get(name="Layperson")
    StageGroupWait.objects.create(stage=last, group=layperson, min_wait=timedelta(0))
    StageGroupWait.objects.create(
        stage=expert_stage,
        group=three_stages.groups.get(name="Expert"),
        min_wait=timedelta(hours=1),
    )
    (lay,) = consented(three_stages, "Layperson")
    (expert,) = consented(three_stages, "Expert")
    finished = finish_stage(lay, T0).submitted_at
    expert_finished = finish_stage(expert, T0).submitted_at
    assert statuses(lay, finished)[2] == StageStatus.OPEN
    state = annotator_stage_states(annotator=expert, now=expert_finished)[1]
    assert (state.status, state.unlocks_at) == (
        StageStatus.WAITING,
        expert_finished + timedelta(hours=1),
    )


def test_the_many_annotators_reading_equals_each_ones(three_stages):
    """``annotators_stage_states`` (the progress pages, crowd lists) follows the same
    rule as one annotator's states."""
    StageGroupWait.objects.create(
        stage=three_stages.stages.get(position=3),
        group=three_stages.groups.get(name="Expert"),
        min_wait=timedelta(hours=5),
    )
    lay = consented(three_stages, "Layperson", count=2)
    experts = consented(three_stages, "Expert", count=2)
    finish_stage(lay[0], T0)
    finish_stage(experts[0], T0)
    do_batch(experts[1], T0)
    now = T0 + timedelta(hours=2)
    many = annotators_stage_states(
        study=three_stages, annotators=three_stages.annotators.all(), now=now
    )
    for annotator in [*lay, *experts]:
        one = annotator_stage_states(annotator=annotator, now=now)
        assert [(s.status, s.unlocks_at, s.submitted) for s in many[annotator.pk]] == [
            (s.status, s.unlocks_at, s.submitted) for s in one
        ], annotator.pseudonym


def test_a_stage_of_its_own_k_and_m(three_stages):
    """The first stage takes one layperson per batch (k = 1) and one batch each (m = 1):
    three laypeople share its three batches, and a fourth finds none left there."""
    Stage.objects.filter(study=three_stages, position=1).update(overlap_k=1, batches_per_stage=1)
    people = consented(three_stages, "Layperson", count=4)
    batches = {do_batch(person, T0).batch_id for person in people[:3]}
    assert len(batches) == 3
    assert statuses(people[0], T0)[0] == StageStatus.DONE  # m = 1 batch
    # The fourth finds the first stage finished for them (every batch has its one
    # layperson), skips the experts' and, having done no batch, waits for nothing.
    assert statuses(people[3], T0)[:2] == [StageStatus.DONE, StageStatus.SKIPPED]
    assert assignment_claim(annotator=people[3], now=T0).stage.position == 3
    progress = study_progress(study=three_stages)
    first = progress.stages[0]
    assert (first.k, first.m, first.slots) == (1, 1, 3)
    lay_cell = progress.cell(stage_position=1, group_id=people[0].group_id)
    assert (lay_cell.slots, lay_cell.submitted, lay_cell.open_slots) == (3, 3, 0)
    assert progress.stages[1].k == 2  # the study's


def test_progress_leaves_out_the_groups_not_taking_part(three_stages):
    (lay,) = consented(three_stages, "Layperson")
    progress = study_progress(study=three_stages)
    cell = progress.cell(stage_position=2, group_id=lay.group_id)
    assert (cell.takes_part, cell.slots, cell.annotators_needed, cell.without_work) == (
        False,
        0,
        0,
        0,
    )
    expert_cell = progress.cell(
        stage_position=2, group_id=three_stages.groups.get(name="Expert").pk
    )
    assert expert_cell.takes_part and expert_cell.slots == 6


def test_a_batch_is_not_given_to_a_group_not_taking_part(three_stages):
    (lay,) = consented(three_stages, "Layperson")
    batch = three_stages.stages.get(position=2).batches.first()
    with pytest.raises(ValidationError, match="does not take part in Expert stage"):
        assignment_create(annotator=lay, batch=batch)
    assert not Assignment.objects.exists()


def test_a_group_with_work_in_a_stage_keeps_taking_part(three_stages):
    expert_stage = three_stages.stages.get(position=2)
    (expert,) = consented(three_stages, "Expert")
    assignment_create(annotator=expert, batch=expert_stage.batches.first())
    layperson = three_stages.groups.get(name="Layperson")
    with pytest.raises(ValidationError) as refused:
        stage_groups_validate(stage=expert_stage, groups=[layperson])
    assert refused.value.message_dict["groups"] == [
        "Annotators of these groups already have batches in this stage, so they keep "
        "taking part: Expert."
    ]
    stage_groups_validate(stage=expert_stage, groups=[])  # every group: fine
    other = study_create(slug="other", title="Other", groups=["Outsider"])
    with pytest.raises(ValidationError, match="not of this study: Outsider"):
        stage_groups_validate(stage=expert_stage, groups=list(other.groups.all()))


def test_every_stage_skipped_means_done(three_stages):
    """A group that takes part in no stage has nothing to do: the claim says so."""
    expert = three_stages.groups.get(name="Expert")
    for stage in three_stages.stages.all():
        stage.groups.set([expert])
    (lay,) = consented(three_stages, "Layperson")
    assert set(statuses(lay, T0)) == {StageStatus.SKIPPED}
    with pytest.raises(NoWorkAvailable) as none:
        assignment_claim(annotator=lay, now=T0)
    assert none.value.code == ErrorCode.STAGES_COMPLETED


def test_a_stage_with_its_own_tutorial_after_a_skipped_one_asks_for_it_first(three_stages):
    """The layperson skips the experts' stage: the last stage's own tutorial is the one
    due, read before its first batch (not a dead end)."""
    Stage.objects.filter(study=three_stages, position=3).update(
        tutorial_intro="How the last stage works."
    )
    (lay,) = consented(three_stages, "Layperson")
    finished = finish_stage(lay, T0).submitted_at
    later = finished + timedelta(days=1)
    states = annotator_stage_states(annotator=lay, now=later)
    assert states[2].status == StageStatus.OPEN
    assert stage_tutorial_due(annotator=lay, states=states).position == 3


def test_the_unlock_email_follows_a_groups_own_wait(three_stages):
    """The last stage opens at once for experts, after two hours for laypeople (their
    own wait): laypeople are mailed when theirs ends, experts not at all."""
    last = three_stages.stages.get(position=3)
    Stage.objects.filter(pk=last.pk).update(min_wait=timedelta(0))
    StageGroupWait.objects.create(
        stage=last, group=three_stages.groups.get(name="Layperson"), min_wait=timedelta(hours=2)
    )
    (lay,) = consented(three_stages, "Layperson", email="lay@example.org")
    finished = finish_stage(lay, T0).submitted_at
    assert unlock_notifications_send(now=finished + timedelta(hours=1)) == 0
    assert unlock_notifications_send(now=finished + timedelta(hours=3)) == 1
    assert [m.to for m in mail.outbox] == [["lay@example.org"]]
