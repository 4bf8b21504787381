"""The admin refuses edits that would change the meaning of data already collected."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from studies.models import (
    Assignment,
    Batch,
    DialogueContext,
    ErrorCategory,
    Reflection,
    Role,
    Stage,
    Study,
    WaitExemption,
)
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    judgement_record,
)
from tests.conftest import form_data
from tests.factories import StaffUserFactory, StudyFactory, user_with_role


@pytest.fixture
def researcher(db):
    return StaffUserFactory()


@pytest.fixture
def staff_client(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def judged(loaded_study):
    """One Layperson assignment whose every item was answered No + off-topic."""
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    batch = Batch.objects.filter(stage__study=loaded_study, stage__position=1).first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    for rid in assignment.order:
        judgement_record(
            assignment=assignment,
            reflection=Reflection.objects.get(pk=rid),
            answer=Answer(False, frozenset({"off_topic"})),
        )
    return assignment


def test_a_judged_reflection_text_cannot_be_edited(staff_client, judged):
    reflection = judged.batch.reflections.get(kind="synthetic", batch_items__position=2)
    url = reverse("admin:studies_reflection_change", args=[reflection.pk])
    data = form_data(staff_client.get(url))
    data["text"] = "A quietly improved wording."
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "Text cannot change: annotators have already judged this reflection." in (
        response.content.decode()
    )
    reflection.refresh_from_db()
    assert reflection.text != "A quietly improved wording."


def test_an_unjudged_reflection_can_still_be_corrected(staff_client, loaded_study):
    reflection = Reflection.objects.filter(context__study=loaded_study, kind="synthetic").first()
    url = reverse("admin:studies_reflection_change", args=[reflection.pk])
    data = form_data(staff_client.get(url))
    data["text"] = "A corrected typo."
    assert staff_client.post(url, data).status_code == 302
    reflection.refresh_from_db()
    assert reflection.text == "A corrected typo."


def test_a_judged_context_keeps_its_turns(staff_client, judged):
    context = judged.batch.context
    url = reverse("admin:studies_dialoguecontext_change", args=[context.pk])
    data = form_data(staff_client.get(url))
    data["turns"] = json.dumps([{"role": "client", "text": "Something else."}])
    response = staff_client.post(url, data)
    assert "Turns cannot change" in response.content.decode()
    context.refresh_from_db()
    assert context.turns[0]["role"] == "therapist"


def test_a_used_category_cannot_be_renamed_or_deleted(staff_client, judged, loaded_study):
    category = ErrorCategory.objects.get(study=loaded_study, slug="off_topic")
    url = reverse("admin:studies_errorcategory_change", args=[category.pk])
    data = form_data(staff_client.get(url))
    data["slug"] = "irrelevant"
    response = staff_client.post(url, data)
    assert "Slug cannot change: judgements already chose this category." in (
        response.content.decode()
    )
    delete = staff_client.post(
        reverse("admin:studies_errorcategory_delete", args=[category.pk]), {"post": "yes"}
    )
    assert delete.status_code == 403
    assert ErrorCategory.objects.filter(pk=category.pk, slug="off_topic").exists()


def test_deleting_a_used_category_from_the_study_page_is_refused(
    staff_client, judged, loaded_study
):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(staff_client.get(url))
    category = ErrorCategory.objects.get(study=loaded_study, slug="off_topic")
    index = next(
        k.split("-")[1]
        for k, v in data.items()
        if k.endswith("-id") and v == category.pk and k.startswith("categories-")
    )
    data[f"categories-{index}-DELETE"] = "on"
    response = staff_client.post(url, data)
    assert "&quot;Off-topic&quot; cannot be deleted: judgements already chose it." in (
        response.content.decode()
    )
    assert ErrorCategory.objects.filter(pk=category.pk).exists()


def test_a_new_category_gets_the_next_unused_bit(staff_client, loaded_study):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(staff_client.get(url))
    n = data["categories-TOTAL_FORMS"]
    data["categories-TOTAL_FORMS"] = n + 1
    data.update(
        {
            f"categories-{n}-slug": "too_vague",
            f"categories-{n}-label": "Too vague",
            f"categories-{n}-order": 6,
            f"categories-{n}-definition": "Says nothing specific.",
        }
    )
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert ErrorCategory.objects.get(study=loaded_study, slug="too_vague").bit == 5


def test_a_group_prefix_is_fixed_once_annotators_are_named_with_it(staff_client, study):
    group = study.groups.get(name="Expert")
    annotators_create(group=group, count=1)
    url = reverse("admin:studies_annotatorgroup_change", args=[group.pk])
    data = form_data(staff_client.get(url))
    data["pseudonym_prefix"] = "Specialist"
    response = staff_client.post(url, data)
    assert "Pseudonym prefix cannot change" in response.content.decode()
    group.refresh_from_db()
    assert group.pseudonym_prefix == "Expert"


def test_a_stage_cannot_be_moved_to_another_study(staff_client, study):
    other = Study.objects.create(slug="other", title="Other")
    stage = study.stages.get(position=1)
    url = reverse("admin:studies_stage_change", args=[stage.pk])
    data = form_data(staff_client.get(url))
    data["study"] = other.pk  # not a field of the change form: ignored
    staff_client.post(url, data)
    stage.refresh_from_db()
    assert stage.study_id == study.pk


def test_batches_cannot_be_added_by_hand(staff_client, loaded_study):
    assert staff_client.get(reverse("admin:studies_batch_add")).status_code == 403
    batch = Batch.objects.filter(stage__study=loaded_study).first()
    page = staff_client.get(reverse("admin:studies_batch_change", args=[batch.pk]))
    assert page.status_code == 200
    assert 'name="items-0-reflection"' not in page.content.decode()  # items shown read-only


def test_the_seed_is_read_only_once_materials_exist(staff_client, loaded_study, study):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(staff_client.get(url))
    assert "seed" not in data
    data["seed"] = 1
    staff_client.post(url, data)
    loaded_study.refresh_from_db()
    assert loaded_study.seed == 1234


def test_rejecting_asks_for_a_reason_and_records_who(staff_client, researcher, judged):
    url = reverse("admin:studies_assignment_changelist")
    base = {"action": "reject", "_selected_action": [judged.pk]}
    page = staff_client.post(url, base)
    assert "Reject assignments" in page.content.decode()
    missing = staff_client.post(url, {**base, "apply": "1", "reason": ""})
    assert "This field is required." in missing.content.decode()
    assert Assignment.objects.get(pk=judged.pk).status == Assignment.Status.IN_PROGRESS

    staff_client.post(url, {**base, "apply": "1", "reason": "Answered at random"})
    judged.refresh_from_db()
    assert judged.status == Assignment.Status.REJECTED
    assert (judged.rejected_by, judged.rejection_reason) == (researcher, "Answered at random")


def test_rejecting_needs_a_role_that_manages_annotators(client, judged):
    """An analyst reads the assignments but is not offered the action; posted anyway,
    nothing is rejected."""
    analyst = user_with_role(judged.stage.study, Role.ANALYST)
    client.force_login(analyst)
    url = reverse("admin:studies_assignment_changelist")
    response = client.get(url)
    assert response.status_code == 200
    assert "Reject the selected assignments" not in response.content.decode()
    client.post(
        url,
        {"action": "reject", "_selected_action": [judged.pk], "apply": "1", "reason": "No"},
    )
    assert Assignment.objects.get(pk=judged.pk).status == Assignment.Status.IN_PROGRESS


def test_exemption_granted_in_the_admin_records_who_and_when(staff_client, researcher, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    stage2 = Stage.objects.get(study=study, position=2)
    url = reverse("admin:studies_annotator_change", args=[annotator.pk])
    data = form_data(staff_client.get(url))
    data.update(
        {
            "wait_exemptions-TOTAL_FORMS": 1,
            "wait_exemptions-0-stage": stage2.pk,
            "wait_exemptions-0-reason": "Travelling next week",
        }
    )
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    exemption = WaitExemption.objects.get()
    assert (exemption.annotator, exemption.stage, exemption.granted_by) == (
        annotator,
        stage2,
        researcher,
    )
    assert exemption.granted_at <= timezone.now()


@pytest.mark.parametrize("role", [Role.ANALYST, Role.VIEWER, Role.CODER])
def test_import_needs_a_role_that_configures_the_study(client, study, role):
    client.force_login(user_with_role(study, role))
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    response = client.get(url)
    assert response.status_code == 403
    assert f"Your role in this study ({role.label.lower()}) does not allow this" in (
        response.content.decode()
    )
    response = client.post(url, {"file": SimpleUploadedFile("materials.json", b"{}")})
    assert response.status_code == 403
    assert not DialogueContext.objects.exists()


def test_import_of_a_study_without_a_role_in_it_is_not_found(client, study):
    client.force_login(user_with_role(StudyFactory(), Role.OWNER))
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    response = client.get(url)
    assert response.status_code == 404
    assert study.title not in response.content.decode()
