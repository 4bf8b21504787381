"""When a stage's questionnaire is due: only for annotators who submitted a batch in
the stage, not for those the stage is "done" for because no batch could be theirs."""

from studies.models import Assignment, Study
from studies.services import annotators_create
from studies.services.questionnaires import questionnaire_step
from tests.studies.questionnaire_helpers import after_stage, consent
from tests.studies.services.test_crowd_joins import finish_stage


def test_the_stage_questionnaire_asks_only_those_who_submitted_a_batch(loaded_study, monkeypatch):
    from studies.selectors import stages

    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN, batches_per_stage=1)
    loaded_study.refresh_from_db()
    q = after_stage(loaded_study, 1)
    idle, worker = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=2)
    finish_stage(worker)
    assert questionnaire_step(annotator=worker).questionnaire == q
    consent(idle)
    monkeypatch.setattr(stages, "_possible_batches", lambda **kw: Assignment.objects.none())
    states = stages.annotator_stage_states(annotator=idle)
    assert states[0].status == stages.StageStatus.DONE  # no batch can be theirs
    assert questionnaire_step(annotator=idle) is None
