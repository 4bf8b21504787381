"""Crowd admission and the end of a stage without work (studies.services.crowd_joins,
studies.services.crowd): joined workers hold their place, and a worker left without
any batch gets no completion code."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from studies.models import Annotator, CrowdEntry, Study
from studies.services import annotators_create, assignment_claim, consent_version_current
from studies.services.crowd_joins import stage_places_left
from tests.studies.services.test_crowd_joins import finish_stage, prolific, snapshot, stage

pytestmark = pytest.mark.usefixtures("empty_cache")


@pytest.fixture
def one_slot_each(crowd_study):
    """k = 1: stage 1 has three slots (three batches)."""
    Study.objects.filter(pk=crowd_study.pk).update(overlap_k=1)
    crowd_study.refresh_from_db()
    return crowd_study


def test_workers_who_joined_but_have_not_claimed_hold_their_place(client_factory, one_slot_each):
    for pid in ("p1", "p2", "p3"):
        assert client_factory().get(prolific(one_slot_each, 1, pid)).status_code == 302
    before = snapshot()
    response = client_factory().get(prolific(one_slot_each, 1, "p4"))
    assert response.status_code == 403
    assert "This study has all the participants it needs." in response.content.decode()
    assert snapshot() == before


def test_a_join_older_than_the_hold_frees_its_place(client_factory, one_slot_each, settings):
    for pid in ("p1", "p2", "p3"):
        client_factory().get(prolific(one_slot_each, 1, pid))
    CrowdEntry.objects.filter(annotator__platform_participant_id="p1").update(
        created_at=timezone.now() - timedelta(seconds=settings.CROWD_JOIN_HOLD + 1)
    )
    assert client_factory().get(prolific(one_slot_each, 1, "p4")).status_code == 302


def test_a_joined_worker_who_claimed_counts_once(client_factory, one_slot_each):
    client_factory().get(prolific(one_slot_each, 1, "p1"))
    worker = Annotator.objects.get()
    worker.consented_version = consent_version_current(study=one_slot_each)
    worker.consented_at = timezone.now()
    worker.save()
    assignment_claim(annotator=worker)
    group = one_slot_each.groups.get(name="Layperson")
    assert stage_places_left(stage=stage(one_slot_each, 1), group=group, now=timezone.now()) == 2


def test_admission_runs_a_constant_number_of_queries(client_factory, crowd_study):
    """Admission counts slots, held slots and joined workers, never the whole progress
    table: the same number of queries with 2 or 12 people in the study."""
    group = crowd_study.groups.get(name="Layperson")
    target = stage(crowd_study, 1)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            stage_places_left(stage=target, group=group, now=timezone.now())
        return len(captured)

    for pid in ("a", "b"):
        client_factory().get(prolific(crowd_study, 1, pid))
    few = queries()
    annotators_create(group=group, count=10)
    assert queries() == few <= 3


def test_a_worker_left_without_any_batch_gets_no_completion_code(client, one_slot_each):
    """Others submitted every batch before the worker claimed one: the stage is over
    for them with nothing done, so the completion code (payment) is not given."""
    from studies.models import Stage

    Stage.objects.filter(pk=stage(one_slot_each, 1).pk).update(screened_out_code="NOWORK1")
    client.get(prolific(one_slot_each, 1, "late"))
    worker = Annotator.objects.get()
    worker.consented_version = consent_version_current(study=one_slot_each)
    worker.consented_at = worker.tutorial_completed_at = timezone.now()
    worker.save()
    for other in annotators_create(group=worker.group, count=3):
        finish_stage(other)
    page = client.get("/s/pilot/").content.decode()
    completion = stage(one_slot_each, 1).completion_code
    assert completion not in page
    assert "there is no work for you in this stage" in page
    assert "cc=NOWORK1" in page
    entry = CrowdEntry.objects.get(annotator=worker)
    assert entry.outcome == "no_work" and entry.returned_at is not None


def test_a_worker_who_submitted_gets_the_completion_code(client, one_slot_each):
    client.get(prolific(one_slot_each, 1, "p1"))
    worker = Annotator.objects.get()
    finish_stage(worker)
    page = client.get("/s/pilot/").content.decode()
    assert stage(one_slot_each, 1).completion_code in page
    assert CrowdEntry.objects.get(annotator=worker).outcome == "completed"
