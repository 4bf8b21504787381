""" "Stage finished for an annotator" has one home (``studies.protocol.stage_finished``):
the stage states of one annotator and the progress table's count of annotators who can
no longer get work agree."""

import pytest
from django.utils import timezone

from studies.models import Assignment, Judgement, Study
from studies.protocol import stage_finished
from studies.selectors import annotator_stage_states, study_progress
from studies.services import (
    annotators_create,
    assignment_claim,
    consent_version_current,
)


@pytest.mark.parametrize(
    ("open_", "submitted", "possible", "left", "finished"),
    [
        (0, 2, True, False, True),  # m batches submitted
        (0, 0, False, False, True),  # nothing can be theirs any more
        (0, 1, True, True, True),  # left for a later stage
        (0, 1, True, False, False),  # can still get a batch
        (1, 2, False, True, False),  # something open: never finished
    ],
)
def test_the_rule(open_, submitted, possible, left, finished):
    assert (
        stage_finished(open_=open_, submitted=submitted, m=2, batch_possible=possible, left=left)
        is finished
    )


def test_the_stage_states_and_the_progress_table_agree(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, overlap_k=1, batches_per_stage=2
    )
    loaded_study.refresh_from_db()
    group = loaded_study.groups.get(name="Layperson")
    people = annotators_create(group=group, count=4)
    for person in people:
        person.consented_version = consent_version_current(study=loaded_study)
        person.consented_at = timezone.now()
        person.save()
    for person in people[:3]:  # three batches, k = 1: the fourth person gets none
        a = assignment_claim(annotator=person)
        Judgement.objects.bulk_create(
            Judgement(assignment=a, reflection_id=r, coherent=True, empathy=3) for r in a.order
        )
        Assignment.objects.filter(pk=a.pk).update(status="submitted", submitted_at=timezone.now())
    first_stage_states = [annotator_stage_states(annotator=p)[0] for p in people]
    without_work = sum(s.status == "done" and s.submitted < 2 for s in first_stage_states)
    cell = study_progress(study=loaded_study).cell(stage_position=1, group_id=group.pk)
    assert without_work == cell.without_work == 4
