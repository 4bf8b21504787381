"""Opening a study to annotators requires what they need, listing what is missing:
the same rule in the admin form and in the service that opens a study."""

import json
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from studies.models import Stage, Study
from studies.protocol import (
    COHERENCE_QUESTION,
    EMPATHY_STATEMENT,
    default_empathy_labels,
    default_mee_merge,
)
from studies.selectors import study_missing_for_opening
from studies.services import study_create, study_open
from tests.conftest import form_data
from tests.factories import StaffUserFactory

TUTORIAL = {
    "tutorial_intro": "You will judge response candidates.",
    "tutorial_example_turns": [{"role": "client", "text": "I drink too much."}],
    "tutorial_example_notes": "A coherent candidate follows the client.",
    "tutorial_empathy_explanation": "Then say how far you agree.",
}

INSTRUMENT = {
    "coherence_question": COHERENCE_QUESTION,
    "empathy_statement": EMPATHY_STATEMENT,
    "empathy_labels": json.dumps(default_empathy_labels()),
    "mee_merge": json.dumps(default_mee_merge()),
}


@pytest.fixture
def ready_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(**TUTORIAL)
    loaded_study.refresh_from_db()
    return loaded_study


def test_a_study_with_texts_tutorial_stages_groups_and_materials_opens(ready_study):
    assert study_missing_for_opening(study=ready_study) == []
    study_open(study=ready_study)
    ready_study.refresh_from_db()
    assert ready_study.status == Study.Status.OPEN


def test_an_empty_study_lists_everything_annotators_would_miss_and_stays_a_draft(db):
    study = study_create(slug="empty", title="Empty")
    with pytest.raises(ValidationError) as caught:
        study_open(study=study)
    message = caught.value.messages[0]
    assert message == (
        "Annotators cannot start yet: the study needs the information sheet; the consent "
        "text; the tutorial's introduction; the tutorial's worked example dialogue; the "
        "notes on the tutorial's worked example; the tutorial's explanation of the "
        "agreement scale; a stage; an annotator group; materials (import the dialogue "
        "contexts)."
    )
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT


def test_a_stage_without_materials_and_a_category_without_definition_are_named(ready_study):
    Stage.objects.create(study=ready_study, position=3, name="BART stage")
    ready_study.categories.filter(slug="parroting").update(definition="")
    assert study_missing_for_opening(study=ready_study) == [
        'a label and definition of the error category "parroting"',
        'materials for the stage "BART stage"',
    ]
    with pytest.raises(ValidationError, match='materials for the stage "BART stage"'):
        study_open(study=ready_study)
    assert Study.objects.get(pk=ready_study.pk).status == Study.Status.DRAFT


def test_the_demo_study_is_ready_to_open(db):
    call_command("load_demo", "--force", "--no-judgements", stdout=StringIO())
    study = Study.objects.get(slug="demo")
    assert study_missing_for_opening(study=study) == []
    assert study.status == Study.Status.OPEN


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def test_the_admin_refuses_to_open_a_study_with_an_empty_tutorial_and_changes_nothing(
    staff_client, loaded_study
):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(staff_client.get(url))
    data["status"] = "open"
    data["title"] = "Renamed"
    response = staff_client.post(url, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Annotators cannot start yet: the study needs the tutorial&#x27;s introduction" in page
    loaded_study.refresh_from_db()
    assert (loaded_study.status, loaded_study.title) == (Study.Status.DRAFT, "Pilot study")


def test_the_admin_opens_a_study_once_the_tutorial_is_written_in_the_same_form(
    staff_client, loaded_study
):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(staff_client.get(url))
    data.update({**TUTORIAL, "status": "open"})
    data["tutorial_example_turns"] = '[{"role": "client", "text": "I drink too much."}]'
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    loaded_study.refresh_from_db()
    assert loaded_study.status == Study.Status.OPEN


def test_a_new_study_cannot_be_created_open_and_is_told_to_save_a_draft_first(staff_client):
    response = staff_client.post(
        reverse("admin:studies_study_add"),
        {
            "title": "New study",
            "slug": "new-study",
            "status": "open",
            "overlap_k": 3,
            "batches_per_stage": 5,
            "batch_time_limit": "30 minutes",
            "seed": 5,
            "attention_failure_policy": "record",
            "information_sheet": "About the study.",
            "consent_text": "I agree.",
            **TUTORIAL,
            **INSTRUMENT,  # the defaults the add form shows
            "tutorial_example_turns": '[{"role": "client", "text": "I drink too much."}]',
            **{
                f"{prefix}-{kind}_FORMS": 0
                for prefix in (
                    "stages",
                    "groups",
                    "categories",
                    "consent_versions",
                    "training_quiz",
                    "training_items",
                )
                for kind in ("TOTAL", "INITIAL")
            },
        },
    )
    assert response.status_code == 200
    assert (
        "Annotators cannot start yet: the study needs materials (save the study as a draft "
        "first, then import them)." in response.content.decode()
    )
    assert not Study.objects.filter(slug="new-study").exists()
