"""Once annotators answered, the instrument's fields and a stage's answer settings are
locked: a change is refused with a message naming the field and nothing is written
(the admin form, its stage inline and the standalone stage form); the API has no way
to change them."""

import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from studies.models import Batch, Reflection, Stage, Study
from studies.protocol import (
    COHERENCE_QUESTION,
    EMPATHY_STATEMENT,
    NO_ANSWER_CATEGORIES,
    NO_ANSWER_FREE_TEXT,
    default_empathy_labels,
    default_mee_merge,
)
from studies.services import Answer, annotators_create, assignment_create, judgement_record
from tests.conftest import form_data

REASON = "annotators have already answered this study's questions"
CHANGES = {
    "coherence_question": ("Coherence question", "Does it make sense?"),
    "description_prompt": ("Description prompt", "Say what is wrong."),
    "empathy_statement": ("Empathy statement", "The reply shows understanding."),
    "empathy_labels": ("Empathy labels", json.dumps(["no", "hardly", "so-so", "mostly", "yes"])),
    "mee_merge": ("Most evident error merge", json.dumps({"Other": ["malformed", "parroting"]})),
}


@pytest.fixture
def judged(loaded_study):
    """One judgement in the first stage: annotation has started."""
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    batch = Batch.objects.filter(stage__study=loaded_study, stage__position=1).first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    judgement_record(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=assignment.order[0]),
        answer=Answer(coherent=True, empathy=4),
    )
    return loaded_study


def _instrument(study_id: int) -> tuple:
    return Study.objects.values_list(
        "coherence_question",
        "description_prompt",
        "empathy_statement",
        "empathy_labels",
        "mee_merge",
        "title",
    ).get(pk=study_id)


UNCHANGED = (
    COHERENCE_QUESTION,
    "",
    EMPATHY_STATEMENT,
    default_empathy_labels(),
    default_mee_merge(),
    "Pilot study",
)


@pytest.mark.parametrize("field", CHANGES)
def test_a_changed_instrument_field_is_refused_naming_it(admin_client, judged, field):
    label, value = CHANGES[field]
    url = reverse("admin:studies_study_change", args=[judged.pk])
    data = form_data(admin_client.get(url))
    data[field] = value
    data[f"initial-{field}"] = value  # the browser's hidden "initial" value cannot unlock it
    data["title"] = "Renamed in the same save"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert escape(f"{label} cannot change: {REASON}.") in response.content.decode()
    assert _instrument(judged.pk) == UNCHANGED  # the other field was not saved either


def test_the_locked_instrument_is_shown_read_only_and_other_fields_still_save(admin_client, judged):
    url = reverse("admin:studies_study_change", args=[judged.pk])
    response = admin_client.get(url)
    form = response.context["adminform"].form
    for field in CHANGES:
        assert form.fields[field].widget.attrs.get("readonly") is True
        assert form.fields[field].help_text == f"Locked: {REASON}."
    data = form_data(response)
    data["title"] = "Renamed"
    assert admin_client.post(url, data).status_code == 302
    assert _instrument(judged.pk) == (*UNCHANGED[:-1], "Renamed")


def test_the_instrument_can_change_before_annotation_starts(admin_client, loaded_study):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    response = admin_client.get(url)
    assert (
        "readonly"
        not in response.context["adminform"].form.fields["coherence_question"].widget.attrs
    )
    data = form_data(response)
    data["coherence_question"] = "Does it make sense?"
    assert admin_client.post(url, data).status_code == 302
    assert _instrument(loaded_study.pk)[0] == "Does it make sense?"


def test_a_stage_answer_setting_changed_in_the_study_page_is_refused(admin_client, judged):
    url = reverse("admin:studies_study_change", args=[judged.pk])
    data = form_data(admin_client.get(url))
    prefix = next(k for k in data if k.endswith("-position") and data[k] == 1).rsplit("-", 1)[0]
    data[f"{prefix}-no_answer"] = NO_ANSWER_FREE_TEXT
    response = admin_client.post(url, data)
    assert response.status_code == 200
    message = 'After "No" cannot change: annotators already work in this stage.'
    assert escape(message) in response.content.decode()
    stage = Stage.objects.get(study=judged, position=1)
    assert (stage.no_answer, stage.empathy_after_yes) == (NO_ANSWER_CATEGORIES, True)


def test_a_stage_answer_setting_changed_in_the_stage_page_is_refused(admin_client, judged):
    stage = Stage.objects.get(study=judged, position=1)
    url = reverse("admin:studies_stage_change", args=[stage.pk])
    data = form_data(admin_client.get(url))
    data.pop("empathy_after_yes")  # unticked
    response = admin_client.post(url, data)
    assert response.status_code == 200
    message = 'Agreement question after "Yes" cannot change: annotators already work in this stage.'
    assert escape(message) in response.content.decode()
    stage.refresh_from_db()
    assert stage.empathy_after_yes is True


def test_a_stage_s_own_wording_is_locked_once_in_use_and_its_tutorial_is_not(admin_client, judged):
    stage = Stage.objects.get(study=judged, position=1)
    url = reverse("admin:studies_stage_change", args=[stage.pk])
    data = form_data(admin_client.get(url))
    data["coherence_question"] = "Does it fit?"
    data["tutorial_intro"] = "Changed in the same save."
    response = admin_client.post(url, data)
    assert response.status_code == 200
    message = "Coherence question cannot change: annotators already work in this stage."
    assert escape(message) in response.content.decode()
    stage.refresh_from_db()
    assert (stage.coherence_question, stage.tutorial_intro) == ("", "")
    data["coherence_question"] = ""
    assert admin_client.post(url, data).status_code == 302
    stage.refresh_from_db()
    assert stage.tutorial_intro == "Changed in the same save."


def test_a_stage_s_wording_and_tutorial_are_set_on_its_page(admin_client, loaded_study):
    stage = Stage.objects.get(study=loaded_study, position=2)
    url = reverse("admin:studies_stage_change", args=[stage.pk])
    response = admin_client.get(url)
    page = response.content.decode()
    assert "Wording and tutorial of this stage" in page and "Each field left empty" in page
    data = form_data(response)
    data.update(
        coherence_question="Does it fit?",
        description_prompt="Say what does not fit.",
        tutorial_intro="Now the categories.",
        tutorial_example_turns=json.dumps([{"role": "client", "text": "I feel stuck."}]),
    )
    assert admin_client.post(url, data).status_code == 302
    stage.refresh_from_db()
    assert stage.wording.question == "Does it fit?"
    assert stage.tutorial.example_turns == [{"role": "client", "text": "I feel stuck."}]
    assert stage.has_own_tutorial
    # A malformed example dialogue is refused with a message; nothing is written.
    data["tutorial_example_turns"] = json.dumps([{"speaker": "client"}])
    data["tutorial_intro"] = "Not saved."
    response = admin_client.post(url, data)
    assert response.status_code == 200 and "errornote" in response.content.decode()
    stage.refresh_from_db()
    assert stage.tutorial_intro == "Now the categories."


@pytest.mark.parametrize("method", ["put", "patch"])
def test_the_api_cannot_change_the_instrument(admin_client, judged, method):
    response = getattr(admin_client, method)(
        f"/api/studies/{judged.slug}/",
        data={"coherence_question": "Does it make sense?"},
        content_type="application/json",
    )
    assert response.status_code == 405
    assert _instrument(judged.pk) == UNCHANGED


def test_the_study_page_says_which_stages_have_their_own_texts(admin_client, loaded_study):
    second = Stage.objects.get(study=loaded_study, position=2)
    Stage.objects.filter(pk=second.pk).update(tutorial_intro="Now the categories.")
    page = admin_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    text = page.content.decode()
    assert text.count("the study&#x27;s (<a href=") == 1  # stage 1
    assert text.count("its own tutorial (<a href=") == 1  # stage 2
    assert reverse("admin:studies_stage_change", args=[second.pk]) in text
