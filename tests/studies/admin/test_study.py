"""The researcher's admin, end to end through the test client."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.models import Annotator, Batch, ConsentVersion, DialogueContext, Reflection, Study
from studies.protocol import (
    COHERENCE_QUESTION,
    EMPATHY_STATEMENT,
    default_empathy_labels,
    default_mee_merge,
)
from tests.conftest import form_data, materials_doc
from tests.factories import StaffUserFactory

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"

INSTRUMENT = {
    "coherence_question": COHERENCE_QUESTION,
    "empathy_statement": EMPATHY_STATEMENT,
    "empathy_labels": json.dumps(default_empathy_labels()),
    "mee_merge": json.dumps(default_mee_merge()),
}


INLINES = ("stages", "groups", "categories", "consent_versions", "training_quiz", "training_items")


def new_study_post(stages: list[dict] = ()) -> dict:
    """The add form of a study "new-study" as posted, with the instrument's defaults
    and ``stages`` (each a row's fields) as its only inline rows."""
    data = {
        "title": "New study",
        "slug": "new-study",
        "status": "draft",
        "overlap_k": 3,
        "batches_per_stage": 5,
        "batch_time_limit": "00:30:00",
        "seed": 5,
        "attention_failure_policy": "record",
        "information_sheet": "About the study.",
        "consent_text": "I agree.",
        "tutorial_example_turns": "[]",
        "data_languages": "en",  # the add form's default
        **INSTRUMENT,  # the defaults the add form shows
        **{f"{prefix}-TOTAL_FORMS": 0 for prefix in INLINES},
        **{f"{prefix}-INITIAL_FORMS": 0 for prefix in INLINES},
        "stages-TOTAL_FORMS": len(stages),
    }
    for i, row in enumerate(stages):
        data.update({f"stages-{i}-{name}": value for name, value in row.items()})
    return data


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def _counts():
    return (DialogueContext.objects.count(), Reflection.objects.count(), Batch.objects.count())


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:studies_study_changelist",
        "admin:studies_dialoguecontext_changelist",
        "admin:studies_reflection_changelist",
        "admin:studies_batch_changelist",
        "admin:studies_annotator_changelist",
        "admin:studies_assignment_changelist",
        "admin:studies_judgement_changelist",
        "admin:studies_annotatorgroup_changelist",
        "admin:studies_consentversion_changelist",
        "admin:analysis_analysisrun_changelist",
    ],
)
def test_every_admin_list_renders_for_a_researcher(staff_client, loaded_study, url_name):
    response = staff_client.get(reverse(url_name))
    assert response.status_code == 200


def test_study_page_shows_progress_and_the_import_and_invite_buttons(staff_client, loaded_study):
    response = staff_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Import materials" in page and "Create annotators" in page
    assert "3 dialogue contexts" in page
    assert "Slots (batches × k)" in page and "More annotators needed" in page


def test_creating_a_study_in_the_admin_gives_it_default_categories_and_a_consent_version(
    staff_client,
):
    response = staff_client.post(reverse("admin:studies_study_add"), new_study_post())
    assert response.status_code == 302, response.content.decode()[:3000]
    study = Study.objects.get(slug="new-study")
    assert study.categories.count() == 5
    assert list(study.consent_versions.values_list("number", flat=True)) == [1]


def test_admin_rejects_a_stage_with_negative_wait_and_writes_nothing(staff_client, study):
    url = reverse("admin:studies_stage_add")
    response = staff_client.post(
        url, {"study": study.pk, "position": 3, "name": "Third", "min_wait": "-1 00:00:00"}
    )
    assert response.status_code == 200
    assert "The minimum wait cannot be negative (0 is allowed)." in response.content.decode()
    assert study.stages.count() == 2


def test_admin_upload_imports_materials(staff_client, study):
    upload = SimpleUploadedFile("materials.json", json.dumps(materials_doc()).encode())
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    response = staff_client.post(url, {"file": upload}, follow=True)
    assert response.status_code == 200
    assert "Imported materials.json: 3 contexts" in response.content.decode()
    assert Batch.objects.filter(stage__study=study).count() == 6


def test_admin_upload_of_a_bad_file_lists_problems_and_writes_nothing(staff_client, study):
    doc = materials_doc()
    doc["contexts"][1]["synthetic"][0]["stage"] = "GPT-9 stage"
    before = _counts()
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    response = staff_client.post(
        url, {"file": SimpleUploadedFile("m.json", json.dumps(doc).encode())}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was imported: the file has 1 problem(s)" in page
    assert "contexts[1] (id &quot;dlg-2&quot;), synthetic[0], field &#x27;stage&#x27;" in page
    assert "unknown stage &#x27;GPT-9 stage&#x27;" in page
    assert _counts() == before


def test_admin_upload_rejects_other_file_types(staff_client, study):
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    response = staff_client.post(url, {"file": SimpleUploadedFile("m.xlsx", b"PK")})
    assert "Upload a .json or .csv file." in response.content.decode()
    assert DialogueContext.objects.count() == 0


def test_create_annotators_shows_one_invitation_link_each(staff_client, study):
    group = study.groups.get(name="Expert")
    url = reverse("admin:studies_study_create_annotators", args=[study.pk])
    response = staff_client.post(url, {"group": group.pk, "count": 3})
    assert response.status_code == 302  # then a GET shows the links
    page = staff_client.get(response["Location"]).content.decode()
    annotators = list(Annotator.objects.filter(group=group).order_by("number"))
    assert [a.pseudonym for a in annotators] == ["Expert 1", "Expert 2", "Expert 3"]
    for a in annotators:
        assert f"http://testserver/i/{a.access_token}/" in page


def test_reloading_the_links_page_creates_no_more_annotators(staff_client, study):
    group = study.groups.get(name="Expert")
    url = reverse("admin:studies_study_create_annotators", args=[study.pk])
    links_url = staff_client.post(url, {"group": group.pk, "count": 2})["Location"]
    staff_client.get(links_url)
    staff_client.get(links_url)
    assert Annotator.objects.count() == 2


def test_create_annotators_rejects_a_group_of_another_study(staff_client, study):
    other = Study.objects.create(slug="other", title="Other")
    foreign = other.groups.create(name="Layperson", pseudonym_prefix="Layperson")
    url = reverse("admin:studies_study_create_annotators", args=[study.pk])
    response = staff_client.post(url, {"group": foreign.pk, "count": 3})
    assert "Select a valid choice" in response.content.decode()
    assert Annotator.objects.count() == 0


def test_create_annotators_rejects_more_than_a_thousand(staff_client, study):
    group = study.groups.get(name="Expert")
    url = reverse("admin:studies_study_create_annotators", args=[study.pk])
    response = staff_client.post(url, {"group": group.pk, "count": 1001})
    assert "Ensure this value is less than or equal to 1000." in response.content.decode()
    assert Annotator.objects.count() == 0


def test_group_action_leads_to_the_create_annotators_form(staff_client, study):
    group = study.groups.get(name="Layperson")
    response = staff_client.post(
        reverse("admin:studies_annotatorgroup_changelist"),
        {"action": "create_annotators", "_selected_action": [group.pk]},
    )
    assert response.status_code == 302
    assert response["Location"].endswith(f"/create-annotators/?group={group.pk}")


def test_editing_the_consent_text_creates_a_new_version(staff_client, study):
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = form_data(staff_client.get(url))
    data["consent_text"] = "I agree, and I know I may withdraw at any time."
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert list(ConsentVersion.objects.filter(study=study).values_list("number", flat=True)) == [
        2,
        1,
    ]


def test_judgement_list_query_count_does_not_grow_with_rows(
    staff_client, loaded_study, django_assert_max_num_queries
):
    from studies.services import Answer, annotators_create, assignment_create, judgement_record

    annotator = annotators_create(group=loaded_study.groups.first(), count=1)[0]
    for batch in Batch.objects.filter(stage__study=loaded_study)[:3]:
        assignment = assignment_create(annotator=annotator, batch=batch)
        for rid in assignment.order:
            judgement_record(
                assignment=assignment,
                reflection=Reflection.objects.get(pk=rid),
                answer=Answer(coherent=False, categories=frozenset({"off_topic"})),
            )
    with django_assert_max_num_queries(12):
        response = staff_client.get(reverse("admin:studies_judgement_changelist"))
    assert response.status_code == 200
    assert "Off-topic" in response.content.decode()
