"""Building questionnaires in the admin: questions inline, choices inline on each
question; once answers exist nothing about the questions or choices can change, and
every refusal writes nothing."""

import pytest
from django.urls import reverse

from studies.models import Choice, Question, Questionnaire
from studies.services import annotators_create
from studies.services.questionnaires import LOCKED, questionnaire_respond
from tests.conftest import form_data
from tests.factories import StaffUserFactory
from tests.studies.questionnaire_helpers import ids, screening


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


@pytest.fixture
def answered(study):
    q = screening(study)
    m = ids(q)
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    questionnaire_respond(
        annotator=annotator, questionnaire=q, answers={m["1"]: [str(m["1:Yes"])], m["3"]: ["2"]}
    )
    return q


def snapshot():
    return (
        list(Questionnaire.objects.values_list("pk", "name", "placement", "stage")),
        list(Question.objects.values_list("pk", "position", "text", "kind", "required")),
        list(Choice.objects.values_list("pk", "text", "ends_participation")),
    )


def test_a_researcher_builds_a_screening_questionnaire_with_its_questions(staff_client, study):
    add = reverse("admin:studies_questionnaire_add")
    data = {
        "study": study.pk,
        "name": "Screening",
        "placement": "screening",
        "introduction": "Two questions.",
        "questions-TOTAL_FORMS": 2,
        "questions-INITIAL_FORMS": 0,
        "questions-0-position": 1,
        "questions-0-text": "Is English your first language?",
        "questions-0-kind": "single",
        "questions-0-required": "on",
        "questions-1-position": 2,
        "questions-1-text": "How sure are you?",
        "questions-1-kind": "scale",
    }
    assert staff_client.post(add, data).status_code == 302
    question = Question.objects.get(position=1)
    url = reverse("admin:studies_question_change", args=[question.pk])
    page = staff_client.get(url)
    data = form_data(page)
    data.update(
        {
            "choices-TOTAL_FORMS": 2,
            "choices-0-position": 1,
            "choices-0-text": "Yes",
            "choices-1-position": 2,
            "choices-1-text": "No",
            "choices-1-ends_participation": "on",
        }
    )
    assert staff_client.post(url, data).status_code == 302
    assert list(question.choices.values_list("text", "ends_participation")) == [
        ("Yes", False),
        ("No", True),
    ]


def test_only_screening_choices_end_participation_and_only_choice_questions_have_choices(
    staff_client, study
):
    from tests.studies.questionnaire_helpers import after_stage

    q = after_stage(study, 1)
    scale = q.questions.get(position=2)
    single = q.questions.get(position=1)
    before = snapshot()
    for question, choice, message in (
        (single, {"choices-2-ends_participation": "on"}, "Only the choices of a screening"),
        (scale, {}, "has no choices"),
    ):
        url = reverse("admin:studies_question_change", args=[question.pk])
        data = form_data(staff_client.get(url))
        n = data["choices-TOTAL_FORMS"]
        data.update({f"choices-{n}-position": 9, f"choices-{n}-text": "Maybe"})
        data.update({k.replace("-2-", f"-{n}-"): v for k, v in choice.items()})
        data["choices-TOTAL_FORMS"] = n + 1
        response = staff_client.post(url, data)
        assert response.status_code == 200
        assert message in response.content.decode()
    assert snapshot() == before


def test_a_stage_of_another_study_is_refused(staff_client, study):
    from studies.services import study_create

    other = study_create(slug="other", title="Other", stages=[("S", "0")], groups=["G"])
    data = {
        "study": study.pk,
        "name": "After",
        "placement": "after_stage",
        "stage": other.stages.get().pk,
        "questions-TOTAL_FORMS": 0,
        "questions-INITIAL_FORMS": 0,
    }
    response = staff_client.post(reverse("admin:studies_questionnaire_add"), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["stage"] == [
        'The stage "S" belongs to another study ("Other"): choose one of the stages of '
        '"Pilot study".'
    ]
    assert not Questionnaire.objects.exists()
    # The form shown again lists the posted study's stages only.
    assert stage_menu(response) == set(study.stages.values_list("pk", flat=True))


def stage_menu(response) -> set[int]:
    field = response.context["adminform"].form.fields["stage"]
    return {int(str(value)) for value, _ in field.choices if value != ""}


def test_the_stage_menu_lists_only_the_questionnaires_studys_stages(staff_client, study):
    from studies.services import study_create

    other = study_create(slug="other", title="Other", stages=[("S", "0")], groups=["G"])
    own = set(study.stages.values_list("pk", flat=True))
    questionnaire = Questionnaire.objects.create(
        study=study, name="After", placement="after_stage", stage=study.stages.first()
    )
    change = staff_client.get(
        reverse("admin:studies_questionnaire_change", args=[questionnaire.pk])
    )
    assert stage_menu(change) == own
    page = change.content.decode()
    assert f'<option value="{other.stages.get().pk}"' not in page
    add = staff_client.get(reverse("admin:studies_questionnaire_add") + f"?study={study.pk}")
    assert stage_menu(add) == own
    # Before a study is chosen, each stage is named with its study.
    blank = staff_client.get(reverse("admin:studies_questionnaire_add"))
    assert stage_menu(blank) == own | {other.stages.get().pk}
    assert "S (other)" in blank.content.decode()


@pytest.mark.parametrize(
    "change",
    ["edit question", "delete question", "add question", "placement"],
)
def test_a_questionnaire_with_answers_refuses_changes_to_its_questions(
    staff_client, answered, change
):
    url = reverse("admin:studies_questionnaire_change", args=[answered.pk])
    data = form_data(staff_client.get(url))
    if change == "edit question":
        data["questions-0-text"] = "Is English your mother tongue?"
    elif change == "delete question":
        data["questions-3-DELETE"] = "on"
    elif change == "add question":
        n = data["questions-TOTAL_FORMS"]
        data.update(
            {
                f"questions-{n}-position": 9,
                f"questions-{n}-text": "New?",
                f"questions-{n}-kind": "text",
            }
        )
        data["questions-TOTAL_FORMS"] = n + 1
    else:
        data["placement"] = "after_stage"
        data["stage"] = answered.study.stages.first().pk
    before = snapshot()
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert LOCKED in response.content.decode().replace("&#x27;", "'")
    assert snapshot() == before


def test_a_questionnaire_with_answers_still_takes_a_new_introduction(staff_client, answered):
    url = reverse("admin:studies_questionnaire_change", args=[answered.pk])
    data = form_data(staff_client.get(url))
    data["introduction"] = "Clearer words."
    assert staff_client.post(url, data).status_code == 302
    answered.refresh_from_db()
    assert answered.introduction == "Clearer words."


@pytest.mark.parametrize("change", ["edit choice", "delete choice", "edit question"])
def test_a_question_with_answers_refuses_changes_to_it_and_its_choices(
    staff_client, answered, change
):
    question = answered.questions.get(position=1)
    url = reverse("admin:studies_question_change", args=[question.pk])
    data = form_data(staff_client.get(url))
    if change == "edit choice":
        data["choices-0-ends_participation"] = "on"
    elif change == "delete choice":
        data["choices-1-DELETE"] = "on"
    else:
        data["required"] = ""
    before = snapshot()
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert LOCKED in response.content.decode().replace("&#x27;", "'")
    assert snapshot() == before


@pytest.mark.parametrize("model", ["questionnaire", "question"])
def test_deleting_a_questionnaire_or_question_with_answers_is_refused(
    staff_client, answered, model
):
    obj = answered if model == "questionnaire" else answered.questions.first()
    url = reverse(f"admin:studies_{model}_delete", args=[obj.pk])
    before = snapshot()
    response = staff_client.post(url, {"post": "yes"}, follow=True)
    assert LOCKED in response.content.decode().replace("&#x27;", "'")
    assert snapshot() == before
    changelist = staff_client.get(reverse(f"admin:studies_{model}_changelist"))
    assert b"delete_selected" not in changelist.content


def test_a_questionnaire_without_answers_can_be_deleted(staff_client, study):
    q = screening(study)
    url = reverse("admin:studies_questionnaire_delete", args=[q.pk])
    assert staff_client.post(url, {"post": "yes"}).status_code == 302
    assert not Questionnaire.objects.exists()
