"""The admin's questionnaire rules the review found missing: an ending choice needs
the crowd's screened-out code, a question cannot move into a questionnaire with
answers, a question's kind and its choices agree, and a choice question with fewer
than two choices is flagged (and its questionnaire not asked)."""

import pytest
from django.urls import reverse

from studies.models import Choice, Question, Stage, Study
from studies.services import annotators_create
from studies.services.questionnaires import (
    LOCKED,
    SCREENED_OUT_CODE_MISSING,
    questionnaire_respond,
)
from tests.conftest import form_data
from tests.factories import StaffUserFactory

from .questionnaire_helpers import ids, question, screening
from .test_questionnaire_admin import snapshot


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def add_choice(staff_client, q, *, ending=False):
    url = reverse("admin:studies_question_change", args=[q.pk])
    data = form_data(staff_client.get(url))
    n = data["choices-TOTAL_FORMS"]
    data.update({f"choices-{n}-position": 9, f"choices-{n}-text": "Maybe"})
    if ending:
        data[f"choices-{n}-ends_participation"] = "on"
    data["choices-TOTAL_FORMS"] = n + 1
    return staff_client.post(url, data)


def test_an_ending_choice_needs_the_first_stages_screened_out_code_in_a_crowd_study(
    staff_client, study
):
    Study.objects.filter(pk=study.pk).update(crowd_group=study.groups.get(name="Layperson"))
    q = screening(study)
    english = q.questions.get(position=1)
    before = snapshot()
    response = add_choice(staff_client, english, ending=True)
    assert response.status_code == 200
    assert SCREENED_OUT_CODE_MISSING in response.content.decode()
    assert snapshot() == before
    Stage.objects.filter(study=study, position=1).update(screened_out_code="OUT1")
    assert add_choice(staff_client, english, ending=True).status_code == 302
    assert english.choices.filter(text="Maybe", ends_participation=True).exists()
