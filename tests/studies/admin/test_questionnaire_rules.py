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
from tests.studies.admin.test_questionnaires import snapshot
from tests.studies.questionnaire_helpers import ids, question, screening


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


@pytest.fixture
def answered_and_fresh(study):
    from tests.studies.questionnaire_helpers import after_stage

    answered = screening(study)
    m = ids(answered)
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    questionnaire_respond(
        annotator=annotator,
        questionnaire=answered,
        answers={m["1"]: [str(m["1:Yes"])], m["3"]: ["2"]},
    )
    return answered, after_stage(study, 1)


def test_a_question_cannot_move_into_a_questionnaire_with_answers(staff_client, answered_and_fresh):
    answered, fresh = answered_and_fresh
    mover = fresh.questions.get(position=2)
    url = reverse("admin:studies_question_change", args=[mover.pk])
    data = form_data(staff_client.get(url))
    data.update({"questionnaire": answered.pk, "position": 9})
    before = snapshot()
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert LOCKED in response.content.decode()
    assert snapshot() == before


def test_a_screening_question_with_an_ending_choice_cannot_become_a_text_question(
    staff_client, study
):
    q = screening(study)
    english = q.questions.get(position=1)
    before = snapshot()
    # On the question's own page.
    url = reverse("admin:studies_question_change", args=[english.pk])
    data = form_data(staff_client.get(url))
    data["kind"] = "text"
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "has no choices" in response.content.decode()
    # In the questionnaire's list of questions.
    url = reverse("admin:studies_questionnaire_change", args=[q.pk])
    data = form_data(staff_client.get(url))
    data["questions-0-kind"] = "text"
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "has no choices" in response.content.decode()
    # Moving the questionnaire after a stage: its ending choices cannot go along.
    data = form_data(staff_client.get(url))
    data.update({"placement": "after_stage", "stage": study.stages.get(position=1).pk})
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "Only the choices of a screening" in response.content.decode()
    assert snapshot() == before


def test_a_choice_question_short_of_choices_is_flagged_and_its_questionnaire_not_asked(
    staff_client, loaded_study
):
    from studies.services.questionnaires import questionnaire_step

    q = screening(loaded_study)
    lonely = question(q, 5, "Pick one", "single", choices=["Only"])
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    assert questionnaire_step(annotator=annotator) is None
    page = staff_client.get(reverse("admin:studies_questionnaire_change", args=[q.pk]))
    assert "Not asked yet" in page.content.decode() and '"Pick one"' in page.content.decode()
    page = staff_client.get(reverse("admin:studies_question_change", args=[lonely.pk]))
    assert "Not asked yet" in page.content.decode()
    Choice.objects.create(question=lonely, position=2, text="Other")
    assert questionnaire_step(annotator=annotator).questionnaire == q
    page = staff_client.get(reverse("admin:studies_questionnaire_change", args=[q.pk]))
    assert "Not asked yet" not in page.content.decode()
    assert Question.objects.filter(questionnaire=q).count() == 5


def test_the_locked_message_offers_only_what_the_rules_allow(staff_client, answered_and_fresh):
    answered, _ = answered_and_fresh
    assert "new questionnaire" not in LOCKED
    url = reverse("admin:studies_questionnaire_change", args=[answered.pk])
    data = form_data(staff_client.get(url))
    data.update({"name": "Screening, reworded", "introduction": "New words."})
    assert staff_client.post(url, data).status_code == 302  # as the message says
    answered.refresh_from_db()
    assert (answered.name, answered.introduction) == ("Screening, reworded", "New words.")


def test_the_admin_checks_for_answers_holding_the_questionnaire_for_update(staff_client, study):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    q = screening(study)
    url = reverse("admin:studies_question_change", args=[q.questions.get(position=1).pk])
    data = form_data(staff_client.get(url))
    data["text"] = "Is English your native language?"
    with CaptureQueriesContext(connection) as queries:
        assert staff_client.post(url, data).status_code == 302
    sql = [x["sql"] or "" for x in queries.captured_queries]
    lock = next(i for i, s in enumerate(sql) if s.endswith("FOR UPDATE"))
    answers = next(i for i, s in enumerate(sql) if "studies_questionnaireresponse" in s)
    update = next(i for i, s in enumerate(sql) if s.startswith('UPDATE "studies_question"'))
    assert lock < answers < update


def test_a_crowd_study_with_an_ending_choice_does_not_open_without_the_code(loaded_study):
    from studies.selectors.readiness import study_missing_for_opening

    phrase = "a screened-out code on the first stage"
    screening(loaded_study)  # "No" ends participation
    assert not any(phrase in m for m in study_missing_for_opening(study=loaded_study))
    Study.objects.filter(pk=loaded_study.pk).update(
        crowd_group=loaded_study.groups.get(name="Layperson")
    )
    loaded_study.refresh_from_db()
    assert any(phrase in m for m in study_missing_for_opening(study=loaded_study))
    Stage.objects.filter(study=loaded_study, position=1).update(screened_out_code="OUT1")
    assert not any(phrase in m for m in study_missing_for_opening(study=loaded_study))
