"""The stage states of many annotators at once (``annotators_stage_states``) equal
each one's own (``annotator_stage_states``), and the platform-id download built on it
runs a fixed number of queries, whatever the number of workers."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from studies.models import Annotator, CrowdEntry, Study
from studies.selectors import annotator_stage_states, annotators_stage_states
from studies.services import (
    annotators_create,
    assignment_claim,
    consent_version_current,
)
from studies.services.crowd import stage_platform_ids_ready
from tests.studies.services.test_crowd_joins import finish_stage, prolific, stage

pytestmark = pytest.mark.usefixtures("empty_cache")


def join_and_finish(client_factory, study, pid: str, days_ago: float | None):
    client_factory().get(prolific(study, 1, pid))
    if days_ago is not None:
        finish_stage(
            Annotator.objects.get(platform_participant_id=pid),
            when=timezone.now() - timedelta(days=days_ago),
        )


def test_many_at_once_equals_one_by_one(client_factory, crowd_study):
    Study.objects.filter(pk=crowd_study.pk).update(overlap_k=2)
    for pid, days_ago in (("ready", 4), ("waiting", 1), ("started", None), ("part", None)):
        join_and_finish(client_factory, crowd_study, pid, days_ago)
    # A part that ended early (recorded as such, whatever was done in it): the stage is
    # left, the next one is entered through the platform.
    CrowdEntry.objects.filter(annotator__platform_participant_id="part").update(
        outcome=CrowdEntry.Outcome.PARTIAL, returned_at=timezone.now()
    )
    invited = annotators_create(group=crowd_study.groups.get(name="Expert"), count=2)
    invited[0].consented_version = consent_version_current(study=crowd_study)
    invited[0].consented_at = timezone.now()
    invited[0].save()
    assignment_claim(annotator=invited[0])
    now = timezone.now()
    bulk = annotators_stage_states(
        study=crowd_study, annotators=Annotator.objects.filter(study=crowd_study), now=now
    )
    assert len(bulk) == 6
    for annotator in Annotator.objects.filter(study=crowd_study):
        one = annotator_stage_states(annotator=annotator, now=now)
        assert bulk[annotator.pk] == one, annotator
    statuses = {
        a.platform_participant_id: [s.status for s in bulk[a.pk]]
        for a in Annotator.objects.filter(study=crowd_study, platform="prolific")
    }
    assert statuses == {
        "ready": ["done", "on_platform"],
        "waiting": ["done", "waiting"],
        "started": ["open", "locked"],
        "part": ["done", "on_platform"],
    }


def test_the_platform_id_download_runs_a_fixed_number_of_queries(client_factory, crowd_study):
    target = stage(crowd_study, 2)

    def queries() -> tuple[int, list[str]]:
        with CaptureQueriesContext(connection) as captured:
            ids = stage_platform_ids_ready(stage=target, platform="prolific")
        return len(captured), ids

    join_and_finish(client_factory, crowd_study, "r1", 4)
    few, ids = queries()
    assert ids == ["r1"]
    for n in range(2):  # three batches per stage: two more workers can finish stage 1
        join_and_finish(client_factory, crowd_study, f"r{n + 2}", 4)
    join_and_finish(client_factory, crowd_study, "w1", None)
    many, ids = queries()
    assert ids == ["r1", "r2", "r3"]
    assert many == few <= 12  # (two of them the groups taking part and their own waits)
