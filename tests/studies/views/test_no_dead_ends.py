"""No dead ends: when a stage is finished for an annotator, "Start a batch" only when a
claim would succeed, the progress table's annotators without work, the time-up panel,
plural forms, and times never shown earlier than they are."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from studies.models import Assignment, CrowdEntry, Judgement, Stage, Study
from studies.selectors import annotator_stage_states, study_progress
from studies.services import (
    annotators_create,
    assignment_claim,
    consent_version_current,
)
from studies.times import time_display, time_html, time_rounded_up


@pytest.fixture
def staff_client(client, db):
    from tests.factories import StaffUserFactory

    client.force_login(StaffUserFactory())
    return client


@pytest.fixture
def small_study(loaded_study):
    """k = 1 and m = 1: three batches per stage, one layperson each."""
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, overlap_k=1, batches_per_stage=1, tutorial_intro="How."
    )
    loaded_study.refresh_from_db()
    return loaded_study


def ready(study, count=1, group="Layperson"):
    people = annotators_create(group=study.groups.get(name=group), count=count)
    for a in people:
        a.consented_version = consent_version_current(study=study)
        a.consented_at = a.tutorial_completed_at = timezone.now()
        a.save()
    return people


def submit(annotator, *, now=None):
    now = now or timezone.now()
    a = assignment_claim(annotator=annotator, now=now - timedelta(minutes=5))
    Judgement.objects.bulk_create(
        Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=3) for rid in a.order
    )
    Assignment.objects.filter(pk=a.pk).update(status="submitted", submitted_at=now)
    return a


def signed_in(client, annotator):
    client.get(f"/i/{annotator.access_token}/")
    return client


def test_when_others_submitted_every_batch_the_stage_is_finished_and_the_next_opens(
    client, small_study
):
    others = ready(small_study, count=3)
    for a in others:
        submit(a)
    (invited,) = ready(small_study)
    first, second = annotator_stage_states(annotator=invited)
    assert (first.status, first.submitted, second.status) == ("done", 0, "open")
    assert second.unlocks_at is None  # nothing submitted in stage 1: no wait
    page = signed_in(client, invited).get("/s/pilot/").content.decode()
    assert "finished: no more batches for you in it" in page
    assert "Start a batch" in page
    assert client.post("/s/pilot/start/").status_code == 302


def test_start_is_offered_only_when_a_claim_would_succeed(client, small_study):
    holders = ready(small_study, count=3)
    for a in holders:
        assignment_claim(annotator=a)  # every slot held, nobody submitted
    (waiting,) = ready(small_study)
    (first, _) = annotator_stage_states(annotator=waiting)
    assert first.status == "busy"
    page = signed_in(client, waiting).get("/s/pilot/").content.decode()
    assert "Start a batch" not in page
    assert "is being worked on by others right now" in page
    assert "at most 30 minutes after they started" in page


def test_the_progress_table_shows_who_can_no_longer_get_work(small_study, staff_client):
    for a in ready(small_study, count=3):
        submit(a)
    ready(small_study, count=2)  # invited too late for stage 1
    cell = study_progress(study=small_study).cell(
        stage_position=1, group_id=small_study.groups.get(name="Layperson").pk
    )
    assert (cell.without_work, cell.annotators_needed) == (2, 0)
    later = study_progress(study=small_study).cell(
        stage_position=2, group_id=small_study.groups.get(name="Layperson").pk
    )
    assert (later.without_work, later.open_slots, later.annotators_needed) == (0, 3, 0)
    page = staff_client.get(f"/admin/studies/study/{small_study.pk}/change/").content.decode()
    assert "Can no longer get work" in page


def test_more_annotators_needed_counts_only_those_who_can_still_get_work(small_study):
    Study.objects.filter(pk=small_study.pk).update(overlap_k=2, batches_per_stage=3)
    small_study.refresh_from_db()
    (busy,) = ready(small_study)
    for _ in range(3):
        submit(busy)  # had every batch of stage 1: no more work there
    cell = study_progress(study=small_study).cell(
        stage_position=1, group_id=small_study.groups.get(name="Layperson").pk
    )
    # 6 slots, 3 taken, the one annotator can take no more: 3 open slots need one more.
    assert (cell.open_slots, cell.without_work, cell.annotators_needed) == (3, 0, 1)


def test_a_crowd_worker_enters_each_stage_through_the_platform(client, small_study):
    Study.objects.filter(pk=small_study.pk).update(
        crowd_group=small_study.groups.get(name="Layperson")
    )
    Stage.objects.filter(study=small_study).update(min_wait=timedelta(0))
    first_key = small_study.stages.get(position=1).join_key
    client.get(f"/s/pilot/join/{first_key}?PROLIFIC_PID=p1&STUDY_ID=a&SESSION_ID=b")
    (worker,) = small_study.annotators.all()
    worker.consented_version = consent_version_current(study=small_study)
    worker.consented_at = worker.tutorial_completed_at = timezone.now()
    worker.save()
    submit(worker)
    first, second = annotator_stage_states(annotator=worker)
    assert (first.status, second.status) == ("done", "on_platform")
    page = client.get("/s/pilot/").content.decode()
    assert "Start a batch" not in page
    assert "please start it from there" in page
    code = small_study.stages.get(position=1).completion_code
    assert f"https://app.prolific.com/submissions/complete?cc={code}" in page
    assert CrowdEntry.objects.get().outcome == "completed"
    refused = client.post("/s/pilot/start/")
    assert "start it from its own task on the crowd platform" in refused.content.decode()
    assert Assignment.objects.filter(stage__position=2).count() == 0


def test_a_crowd_worker_waiting_is_told_when_and_how_they_come_back(client, small_study):
    Study.objects.filter(pk=small_study.pk).update(
        crowd_group=small_study.groups.get(name="Layperson")
    )
    key = small_study.stages.get(position=1).join_key
    client.get(
        f"/s/pilot/join/{key}?workerId=W1&assignmentId=A1&hitId=H&turkSubmitTo=https://www.mturk.com"
    )
    (worker,) = small_study.annotators.all()
    worker.consented_version = consent_version_current(study=small_study)
    worker.consented_at = worker.tutorial_completed_at = timezone.now()
    worker.save()
    submit(worker)
    response = client.get("/s/pilot/")
    page = response.content.decode()
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in page
    assert 'name="assignmentId" value="A1"' in page
    assert "https://www.mturk.com" in response["Content-Security-Policy"]
    assert "You will be invited back through the crowd platform" in page
    assert "opens for you on" in page and "data-local" in page


def test_the_time_up_panel_says_what_happened_and_what_next(client, small_study):
    (annotator,) = ready(small_study)
    assignment = assignment_claim(annotator=annotator)
    Assignment.objects.filter(pk=assignment.pk).update(
        assigned_at=timezone.now() - timedelta(hours=1),
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    page = signed_in(client, annotator).get(f"/s/pilot/b/{assignment.pk}/1/").content.decode()
    assert "The time for this batch ran out" in page
    assert "kept, but they will not be counted" in page
    assert "go back to your page" in page
    home = client.get("/s/pilot/").content.decode()
    assert "time ran out (answers kept, not counted)" in home


def test_one_minute_is_singular(client, small_study):
    Study.objects.filter(pk=small_study.pk).update(batch_time_limit=timedelta(minutes=1))
    (annotator,) = ready(small_study)
    page = signed_in(client, annotator).get("/s/pilot/").content.decode()
    assert "up to 1 minute." in page and "1 minutes" not in page
    Study.objects.filter(pk=small_study.pk).update(batch_time_limit=timedelta(seconds=90))
    assert "up to 2 minutes." in client.get("/s/pilot/").content.decode()


@pytest.mark.parametrize(
    ("moment", "shown"),
    [
        (datetime(2026, 12, 7, 14, 5, 0, tzinfo=UTC), "Monday 7 December 2026, 14:05 UTC"),
        (datetime(2026, 12, 7, 14, 5, 0, 1, tzinfo=UTC), "Monday 7 December 2026, 14:06 UTC"),
        (datetime(2026, 12, 7, 23, 59, 30, tzinfo=UTC), "Tuesday 8 December 2026, 00:00 UTC"),
    ],
)
def test_times_are_rounded_up_never_truncated(moment, shown):
    assert time_display(moment) == shown
    assert time_rounded_up(moment) >= moment
    assert "data-local>" in time_html(moment)


def test_an_unlock_time_is_shown_rounded_up(client, small_study):
    (annotator,) = ready(small_study)
    submitted = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=30)
    submit(annotator, now=submitted)
    unlock = submitted + timedelta(days=3)
    page = signed_in(client, annotator).get("/s/pilot/").content.decode()
    assert time_display(unlock) in page
    assert f'datetime="{time_rounded_up(unlock):%Y-%m-%dT%H:%M:%SZ}"' in page
