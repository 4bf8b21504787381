"""The study page's crowd and tutorial sections start collapsed, and open by
themselves when they hold what the study lacks."""

import pytest
from django.urls import reverse

from studies.models import Stage, Study
from tests.factories import StaffUserFactory

CROWD = "Crowd platform (Prolific, MTurk)"
TUTORIAL = "Tutorial"
TUTORIAL_TEXTS = {
    "tutorial_intro": "You will judge response candidates.",
    "tutorial_example_turns": [{"role": "client", "text": "I barely slept."}],
    "tutorial_example_notes": "A coherent reflection.",
    "tutorial_empathy_explanation": "Then say how much you agree.",
}


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def collapsed(client, study) -> dict[str, bool]:
    url = (
        reverse("admin:studies_study_change", args=[study.pk])
        if study is not None
        else reverse("admin:studies_study_add")
    )
    form = client.get(url).context["adminform"]
    return {fs.name: fs.is_collapsible for fs in form if fs.name in (CROWD, TUTORIAL)}


def test_a_study_lacking_nothing_there_keeps_both_collapsed(staff_client, study):
    Study.objects.filter(pk=study.pk).update(**TUTORIAL_TEXTS)
    assert collapsed(staff_client, study) == {CROWD: True, TUTORIAL: True}


def test_an_empty_tutorial_opens_its_section(staff_client, study):
    assert collapsed(staff_client, study) == {CROWD: True, TUTORIAL: False}
    Study.objects.filter(pk=study.pk).update(**{**TUTORIAL_TEXTS, "tutorial_example_notes": " "})
    assert collapsed(staff_client, study)[TUTORIAL] is False
    assert collapsed(staff_client, None) == {CROWD: True, TUTORIAL: False}  # a new study


def test_stages_on_a_platform_without_a_crowd_group_open_the_crowd_section(staff_client, study):
    Study.objects.filter(pk=study.pk).update(**TUTORIAL_TEXTS)
    study.stages.filter(position=1).update(platform_task_ids="prolific-6543")
    assert collapsed(staff_client, study) == {CROWD: False, TUTORIAL: True}
    study.crowd_group = study.groups.get(name="Layperson")
    study.save(update_fields=["crowd_group"])
    assert collapsed(staff_client, study)[CROWD] is True


def test_a_crowd_study_missing_a_stage_code_opens_the_crowd_section(staff_client, study):
    Study.objects.filter(pk=study.pk).update(
        crowd_group=study.groups.get(name="Layperson"), **TUTORIAL_TEXTS
    )
    assert collapsed(staff_client, study)[CROWD] is True
    Stage.objects.filter(study=study, position=2).update(partial_completion_code="")
    assert collapsed(staff_client, study)[CROWD] is False
