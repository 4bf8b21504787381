"""The assignment rules of the protocol, one behaviour per test, with an explicit clock."""

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from studies.datafiles.materials import materials_import
from studies.errors import ErrorCode
from studies.models import (
    Annotator,
    Assignment,
    Judgement,
    Reflection,
    Stage,
    StageUnlockNotice,
    Study,
    WaitExemption,
)
from studies.selectors import StageStatus, annotator_stage_states, stage_unlock_time, study_progress
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
    unlock_notifications_send,
    wait_exemption_grant,
)
from studies.tasks import expire_overdue_assignments_task
from tests.conftest import materials_doc

T0 = timezone.now().replace(microsecond=0)


@pytest.fixture
def open_study(loaded_study):
    """Three contexts, two stages (3-day wait), k=2, m=2, open."""
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, overlap_k=2, batches_per_stage=2
    )
    loaded_study.refresh_from_db()
    return loaded_study


def consented(study, group_name="Layperson", count=1, email=""):
    group = study.groups.get(name=group_name)
    annotators = annotators_create(group=group, count=count, email=email)
    version = consent_version_current(study=study)
    for a in annotators:
        a.consented_version, a.consented_at = version, T0
        a.save()
    return annotators


def answer_all(assignment, now, *, attention_ok=True):
    for rid in assignment.order:
        reflection = Reflection.objects.get(pk=rid)
        if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            answer = (
                Answer(False, frozenset({"off_topic"})) if attention_ok else Answer(True, empathy=5)
            )
        else:
            answer = Answer(True, empathy=4)
        judgement_record(assignment=assignment, reflection=reflection, answer=answer, now=now)


def do_batch(annotator, now, **kwargs):
    assignment = assignment_claim(annotator=annotator, now=now)
    answer_all(assignment, now, **kwargs)
    return assignment_submit(assignment=assignment, now=now + timedelta(minutes=5))


def finish_stage_1(annotator, start=T0):
    do_batch(annotator, start)
    return do_batch(annotator, start + timedelta(minutes=10))


# --- claiming --------------------------------------------------------------------------


def test_claim_gives_a_first_stage_batch_with_deadline_and_slots(open_study):
    (annotator,) = consented(open_study)
    assignment = assignment_claim(annotator=annotator, now=T0)
    assert assignment.stage.position == 1
    assert assignment.expires_at == T0 + timedelta(minutes=30)
    assert (assignment.group_slot, assignment.annotator_slot) == (1, 1)
    assert assignment.group_id == annotator.group_id


def test_claim_returns_the_open_assignment_instead_of_a_second_one(open_study):
    (annotator,) = consented(open_study)
    first = assignment_claim(annotator=annotator, now=T0)
    again = assignment_claim(annotator=annotator, now=T0 + timedelta(minutes=1))
    assert again.pk == first.pk
    assert Assignment.objects.count() == 1


def test_claims_fill_the_least_filled_batches_first(open_study):
    annotators = consented(open_study, count=3)
    batches = [assignment_claim(annotator=a, now=T0).batch_id for a in annotators]
    assert len(set(batches)) == 3  # three stage-1 batches, one each before any doubles


def test_a_batch_gets_at_most_k_annotators_per_group(open_study):
    annotators = consented(open_study, count=4)  # k=2, 3 batches: 6 slots
    for a in annotators:
        do_batch(a, T0)
    for a in annotators[:2]:
        do_batch(a, T0 + timedelta(hours=1))
    per_batch = {}
    for a in Assignment.objects.filter(stage__position=1):
        per_batch[a.batch_id] = per_batch.get(a.batch_id, 0) + 1
    assert sorted(per_batch.values()) == [2, 2, 2]
    (late,) = consented(open_study)
    # No batch of stage 1 can ever be theirs: the stage is finished for them, and with
    # nothing submitted in it they wait for nothing.
    (first, _) = annotator_stage_states(annotator=late, now=T0 + timedelta(hours=2))
    assert (first.status, first.submitted) == (StageStatus.DONE, 0)
    assert assignment_claim(annotator=late, now=T0 + timedelta(hours=2)).stage.position == 2


def test_groups_have_separate_slots(open_study):
    lay = consented(open_study, "Layperson", count=6)
    experts = consented(open_study, "Expert", count=1)
    for a in lay:
        do_batch(a, T0)
    # Every lay slot of stage 1 is taken, the experts' are untouched.
    assert assignment_claim(annotator=experts[0], now=T0).group.name == "Expert"


def test_an_annotator_gets_at_most_m_batches_per_stage(open_study):
    (annotator,) = consented(open_study)
    finish_stage_1(annotator)
    with pytest.raises(StageLocked):
        assignment_claim(annotator=annotator, now=T0 + timedelta(hours=1))
    assert Assignment.objects.filter(annotator=annotator, stage__position=1).count() == 2


def test_other_takers_counts_who_else_could_still_take_each_batch(open_study):
    """The tie-break of the claim order: for each batch, the group's other active
    annotators with room in the stage who never had it (any status), compared with
    the count done the plain way."""
    from studies.services.claims import _other_takers

    me, *others = consented(open_study, count=5)
    stage = open_study.stages.order_by("position").first()
    batches = list(stage.batches.order_by("pk").values_list("pk", flat=True))
    first = assignment_claim(annotator=others[0], now=T0)  # has 1 of m = 2: room
    assignment_expire(assignment=first, now=T0)  # expired: had the batch all the same
    assignment_claim(annotator=others[0], now=T0)
    do_batch(others[1], T0)
    do_batch(others[1], T0)  # m = 2 batches done: no room left in the stage
    others[2].is_active = False
    others[2].save()  # withdrawn: cannot take anything
    takers = _other_takers(annotator=me, stage=stage, study=open_study, batch_ids=batches)
    active = Assignment.objects.filter(stage=stage, status__in=Assignment.ACTIVE)
    with_room = {
        a.pk
        for a in others
        if Annotator.objects.get(pk=a.pk).is_active
        and active.filter(annotator=a).count() < open_study.batches_per_stage
    }
    assert with_room == {others[0].pk, others[3].pk}
    expected = {
        b: len(
            with_room
            - set(stage.assignments.filter(batch_id=b).values_list("annotator_id", flat=True))
        )
        for b in batches
    }
    assert takers == expected
    assert sorted(takers.values()) != [2] * len(batches)  # someone's history counted


def test_claim_needs_consent_and_an_open_study(open_study, loaded_study):
    group = open_study.groups.get(name="Layperson")
    (no_consent,) = annotators_create(group=group, count=1)
    with pytest.raises(ValidationError, match="give your consent first"):
        assignment_claim(annotator=no_consent, now=T0)
    (annotator,) = consented(open_study)
    Study.objects.filter(pk=open_study.pk).update(status=Study.Status.CLOSED)
    with pytest.raises(NoWorkAvailable, match="not open") as info:
        assignment_claim(annotator=annotator, now=T0)
    assert info.value.code == ErrorCode.STUDY_NOT_OPEN
    assert not Assignment.objects.exists()


def _claim_sequence(slug: str, seed: int) -> list[str]:
    """A fresh study with ten contexts, k=1, m=1: which dialogue each of ten
    annotators gets, in claim order."""
    study = study_create(
        slug=slug,
        title=slug,
        stages=[("GPT-2 stage", timedelta(0)), ("GPT-3 stage", timedelta(0))],
        groups=["Layperson"],
        information_sheet="Info.",
        consent_text="I agree.",
        seed=seed,
        status=Study.Status.OPEN,
        overlap_k=1,
        batches_per_stage=1,
    )
    materials_import(study=study, content=json.dumps(materials_doc(10)), fmt="json")
    annotators = consented(study, count=10)
    return [assignment_claim(annotator=a, now=T0).batch.context.external_id for a in annotators]


def test_claim_choice_is_reproducible_from_the_seed(db):
    first = _claim_sequence("copy-a", seed=99)
    assert _claim_sequence("copy-b", seed=99) == first
    assert sorted(first) == sorted(f"dlg-{i}" for i in range(1, 11))
    assert _claim_sequence("copy-c", seed=100) != first


# --- stages and waiting periods ----------------------------------------------------------


def test_second_stage_is_locked_until_the_wait_elapses_to_the_second(open_study):
    (annotator,) = consented(open_study)
    last = finish_stage_1(annotator)
    unlock = last.submitted_at + timedelta(days=3)
    stage2 = Stage.objects.get(study=open_study, position=2)
    assert stage_unlock_time(annotator=annotator, stage=stage2) == unlock

    with pytest.raises(StageLocked) as info:
        assignment_claim(annotator=annotator, now=unlock - timedelta(seconds=1))
    assert info.value.unlocks_at == unlock and info.value.stage == stage2
    assert info.value.code == ErrorCode.STAGE_WAITING
    assert not Assignment.objects.filter(stage=stage2).exists()

    assignment = assignment_claim(annotator=annotator, now=unlock)
    assert assignment.stage == stage2


def test_second_stage_stays_locked_while_the_first_is_incomplete(open_study):
    (annotator,) = consented(open_study)
    do_batch(annotator, T0)  # 1 of m=2
    states = annotator_stage_states(annotator=annotator, now=T0 + timedelta(days=30))
    assert [s.status for s in states] == [StageStatus.OPEN, StageStatus.LOCKED]
    assert states[1].unlocks_at is None


def test_home_states_show_done_waiting_and_the_unlock_time(open_study):
    (annotator,) = consented(open_study)
    last = finish_stage_1(annotator)
    states = annotator_stage_states(annotator=annotator, now=last.submitted_at)
    assert [s.status for s in states] == [StageStatus.DONE, StageStatus.WAITING]
    assert states[1].unlocks_at == last.submitted_at + timedelta(days=3)


def test_zero_wait_opens_the_next_stage_at_once(open_study):
    Stage.objects.filter(study=open_study, position=2).update(min_wait=timedelta(0))
    (annotator,) = consented(open_study)
    last = finish_stage_1(annotator)
    assert assignment_claim(annotator=annotator, now=last.submitted_at).stage.position == 2


def test_an_exemption_lets_one_annotator_skip_the_wait(open_study, django_user_model):
    researcher = django_user_model.objects.create_user("r", password="x", is_staff=True)
    first, second = consented(open_study, count=2)
    last_first = finish_stage_1(first)
    finish_stage_1(second, start=T0 + timedelta(hours=1))
    stage2 = Stage.objects.get(study=open_study, position=2)
    exemption = wait_exemption_grant(
        annotator=first, stage=stage2, by=researcher, reason="Leaves the country"
    )
    assert exemption.granted_by == researcher and exemption.granted_at is not None
    now = last_first.submitted_at + timedelta(minutes=1)
    assert assignment_claim(annotator=first, now=now).stage == stage2
    with pytest.raises(StageLocked):
        assignment_claim(annotator=second, now=now + timedelta(hours=2))


def test_no_exemption_for_the_first_stage_or_another_study(open_study, db):
    (annotator,) = consented(open_study)
    stage1 = Stage.objects.get(study=open_study, position=1)
    with pytest.raises(ValidationError, match="first stage has no waiting period"):
        wait_exemption_grant(annotator=annotator, stage=stage1)
    other = Study.objects.create(slug="other", title="Other")
    foreign = Stage.objects.create(study=other, position=2, name="Later")
    with pytest.raises(ValidationError, match="another study"):
        wait_exemption_grant(annotator=annotator, stage=foreign)
    assert not WaitExemption.objects.exists()


def test_finishing_every_stage_says_so(open_study):
    Stage.objects.filter(study=open_study, position=2).update(min_wait=timedelta(0))
    (annotator,) = consented(open_study)
    finish_stage_1(annotator)
    do_batch(annotator, T0 + timedelta(hours=1))
    do_batch(annotator, T0 + timedelta(hours=2))
    with pytest.raises(NoWorkAvailable) as info:
        assignment_claim(annotator=annotator, now=T0 + timedelta(hours=3))
    assert info.value.code == ErrorCode.STAGES_COMPLETED


# --- recurrence --------------------------------------------------------------------------


def test_a_stage_two_batch_of_a_judged_context_is_marked_recurring(open_study):
    Stage.objects.filter(study=open_study, position=2).update(min_wait=timedelta(0))
    Study.objects.filter(pk=open_study.pk).update(overlap_k=3, batches_per_stage=3)
    (annotator,) = consented(open_study)
    for i in range(3):  # every stage-1 context: stage 2 must recur
        do_batch(annotator, T0 + timedelta(minutes=10 * i))
    assignment = assignment_claim(annotator=annotator, now=T0 + timedelta(hours=1))
    assert assignment.stage.position == 2 and assignment.is_recurring is True


def test_avoid_recurrence_option_prefers_new_contexts(open_study):
    Stage.objects.filter(study=open_study, position=2).update(min_wait=timedelta(0))
    Study.objects.filter(pk=open_study.pk).update(avoid_recurrence=True)
    (annotator,) = consented(open_study)
    stage1 = finish_stage_1(annotator)
    seen = set(
        Assignment.objects.filter(annotator=annotator, stage__position=1).values_list(
            "batch__context__external_id", flat=True
        )
    )
    assignment = assignment_claim(annotator=annotator, now=stage1.submitted_at)
    assert assignment.batch.context.external_id not in seen
    assert assignment.is_recurring is False


# --- abandoned and invalid work --------------------------------------------------------------


def test_an_overdue_assignment_expires_lazily_and_frees_its_slot(open_study):
    Study.objects.filter(pk=open_study.pk).update(overlap_k=1, batches_per_stage=1)
    first, second, third, fourth = consented(open_study, count=4)
    for a in (first, second, third):
        assignment_claim(annotator=a, now=T0)
    for a in Assignment.objects.all():  # each started: held until the time limit
        judgement_record(
            assignment=a,
            reflection=Reflection.objects.get(pk=a.order[0]),
            answer=Answer(True, empathy=2),
            now=T0 + timedelta(minutes=1),
        )
    with pytest.raises(NoWorkAvailable):
        assignment_claim(annotator=fourth, now=T0 + timedelta(minutes=29))
    late = assignment_claim(annotator=fourth, now=T0 + timedelta(minutes=30))
    assert Assignment.objects.filter(status=Assignment.Status.EXPIRED).count() == 3
    assert late.group_slot == 1


def test_a_claim_with_no_answer_expires_after_the_configured_time(open_study, settings):
    """Workers who claim and never answer (or made-up crowd ids) must not hold slots
    for the whole time limit."""
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 10 * 60
    Study.objects.filter(pk=open_study.pk).update(overlap_k=1, batches_per_stage=1)
    first, second, third, fourth = consented(open_study, count=4)
    for a in (first, second, third):
        assignment_claim(annotator=a, now=T0)
    with pytest.raises(NoWorkAvailable):
        assignment_claim(annotator=fourth, now=T0 + timedelta(minutes=9, seconds=59))
    late = assignment_claim(annotator=fourth, now=T0 + timedelta(minutes=10))
    assert Assignment.objects.filter(status=Assignment.Status.EXPIRED).count() == 3
    assert late.group_slot == 1
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 20 * 60
    assert assignments_expire_overdue(now=T0 + timedelta(minutes=29)) == 0
    assert assignments_expire_overdue(now=T0 + timedelta(minutes=30)) == 1


def test_answers_of_an_expired_assignment_are_kept_but_no_longer_accepted(open_study):
    (annotator,) = consented(open_study)
    assignment = assignment_claim(annotator=annotator, now=T0)
    first, second = (Reflection.objects.get(pk=rid) for rid in assignment.order[:2])
    judgement_record(
        assignment=assignment, reflection=first, answer=Answer(True, empathy=2), now=T0
    )
    with pytest.raises(ValidationError, match="time for this batch ran out"):
        judgement_record(
            assignment=assignment,
            reflection=second,
            answer=Answer(True, empathy=2),
            now=T0 + timedelta(minutes=31),
        )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED
    assert list(Judgement.objects.values_list("reflection_id", flat=True)) == [first.pk]


def test_submitting_after_the_deadline_expires_instead(open_study):
    (annotator,) = consented(open_study)
    assignment = assignment_claim(annotator=annotator, now=T0)
    answer_all(assignment, T0)
    with pytest.raises(ValidationError, match="ran out before it was submitted"):
        assignment_submit(assignment=assignment, now=T0 + timedelta(minutes=30))
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED and assignment.submitted_at is None


def test_the_periodic_task_expires_overdue_assignments(open_study):
    (annotator,) = consented(open_study)
    assignment = assignment_claim(annotator=annotator, now=timezone.now() - timedelta(hours=1))
    assert expire_overdue_assignments_task() == 1
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED


def test_submit_needs_every_item_answered(open_study):
    (annotator,) = consented(open_study)
    assignment = assignment_claim(annotator=annotator, now=T0)
    first = Reflection.objects.get(pk=assignment.order[0])
    judgement_record(
        assignment=assignment, reflection=first, answer=Answer(True, empathy=3), now=T0
    )
    with pytest.raises(ValidationError, match=f"{len(assignment.order) - 1} of 4 response"):
        assignment_submit(assignment=assignment, now=T0)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


def test_submit_is_idempotent(open_study):
    (annotator,) = consented(open_study)
    submitted = do_batch(annotator, T0)
    again = assignment_submit(assignment=submitted, now=T0 + timedelta(minutes=9))
    assert again.submitted_at == submitted.submitted_at


def test_attention_outcome_is_recorded_and_by_default_nothing_else(open_study):
    good, bad = consented(open_study, count=2)
    assert do_batch(good, T0).attention_passed is True
    failed = do_batch(bad, T0, attention_ok=False)
    assert failed.attention_passed is False
    assert failed.status == Assignment.Status.SUBMITTED


def test_reject_policy_rejects_a_failed_attention_check_and_frees_the_slot(open_study):
    Study.objects.filter(pk=open_study.pk).update(
        attention_failure_policy=Study.AttentionPolicy.REJECT
    )
    (annotator,) = consented(open_study)
    failed = do_batch(annotator, T0, attention_ok=False)
    assert failed.status == Assignment.Status.REJECTED
    assert "attention check" in failed.rejection_reason
    # The annotator is not told: a double submit answers as for a submitted batch.
    assert assignment_submit(assignment=failed, now=T0 + timedelta(minutes=6)).pk == failed.pk
    # The slot is free again and the annotator may do another batch in its place.
    assert assignment_claim(annotator=annotator, now=T0 + timedelta(minutes=7)).stage.position == 1


def test_a_researcher_rejects_with_a_reason_and_the_slot_is_released(open_study, django_user_model):
    researcher = django_user_model.objects.create_user("r", password="x", is_staff=True)
    Study.objects.filter(pk=open_study.pk).update(overlap_k=1, batches_per_stage=1)
    annotators = consented(open_study, count=4)
    done = [do_batch(a, T0) for a in annotators[:3]]
    with pytest.raises(ValidationError) as info:
        assignment_reject(assignment=done[0], reason="   ", by=researcher)
    assert info.value.message_dict == {"reason": ["Give a reason for the rejection."]}
    assert Assignment.objects.get(pk=done[0].pk).status == Assignment.Status.SUBMITTED

    rejected = assignment_reject(assignment=done[0], reason="Random answers", by=researcher)
    assert (rejected.status, rejected.rejected_by, rejected.rejection_reason) == (
        Assignment.Status.REJECTED,
        researcher,
        "Random answers",
    )
    assert assignment_claim(annotator=annotators[3], now=T0 + timedelta(hours=1)).batch_id == (
        done[0].batch_id
    )
    with pytest.raises(ValidationError, match="this one is rejected"):
        assignment_reject(assignment=done[0], reason="Twice")


# --- capacity and notifications -------------------------------------------------------------


def test_capacity_counts_slots_and_the_annotators_still_needed(open_study):
    lay = consented(open_study, count=1)
    do_batch(lay[0], T0)
    assignment_claim(annotator=lay[0], now=T0 + timedelta(minutes=10))
    progress = study_progress(study=open_study)
    rows = {(s.position, g.name): g for s in progress.stages for g in s.groups}
    stage1 = rows[(1, "Layperson")]
    # 3 batches × k=2 = 6 slots; 1 done, 1 in progress, 4 open; the one annotator has no
    # capacity left (m=2), so 4 open slots need 2 more annotators.
    assert (stage1.slots, stage1.submitted, stage1.in_progress, stage1.open_slots) == (6, 1, 1, 4)
    assert stage1.annotators_needed == 2
    assert rows[(1, "Expert")].annotators_needed == 3


def test_unlock_email_goes_once_to_annotators_with_an_address(open_study, settings):
    settings.SITE_URL = "https://study.example"
    (with_mail,) = consented(open_study, email="someone@example.org")
    (without,) = consented(open_study)
    last = finish_stage_1(with_mail)
    finish_stage_1(without)
    unlock = last.submitted_at + timedelta(days=3)
    assert unlock_notifications_send(now=unlock - timedelta(seconds=1)) == 0
    assert unlock_notifications_send(now=unlock) == 1
    assert unlock_notifications_send(now=unlock + timedelta(hours=1)) == 0
    (message,) = mail.outbox
    assert message.to == ["someone@example.org"]
    assert f"https://study.example/i/{with_mail.access_token}/" in message.body
    assert StageUnlockNotice.objects.get().annotator == with_mail


def test_the_unlock_email_job_reads_everyone_in_a_fixed_number_of_queries(open_study):
    (waiting,) = consented(open_study, email="someone@example.org")
    last = finish_stage_1(waiting).submitted_at

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert unlock_notifications_send(now=last) == 0  # nobody's wait is over yet
        return len(captured)

    few = queries()
    consented(open_study, count=2, email="someone@example.org")
    consented(open_study, "Expert", count=3, email="someone@example.org")
    assert queries() == few


def test_the_unlock_email_job_mails_everyone_whose_wait_is_over_once(open_study):
    people = consented(open_study, count=2, email="someone@example.org")
    (expert,) = consented(open_study, "Expert", email="expert@example.org")
    last = max(finish_stage_1(a).submitted_at for a in [*people, expert])
    unlock = last + timedelta(days=3)
    with CaptureQueriesContext(connection) as captured:
        assert unlock_notifications_send(now=unlock) == 3
    assert (
        sorted(m.to[0] for m in mail.outbox) == ["expert@example.org"] + ["someone@example.org"] * 2
    )
    notices = [q for q in captured if q["sql"].startswith("INSERT")]
    assert len(notices) == 3  # one notice per e-mail
    assert unlock_notifications_send(now=unlock + timedelta(hours=1)) == 0
