"""The admin's definition pages: *Export the definition* on a study's page and *Import a
study definition* on the list, each through the roles, each bad file listed with
nothing written."""

import pytest
import yaml
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.admin.definition import DEFINITION_MAX_BYTES
from studies.definition import definition_text, study_definition
from studies.models import Role, Stage, Study, StudyRole
from tests.factories import StaffMemberFactory

pytestmark = pytest.mark.django_db


def member(study, role):
    user = StaffMemberFactory()
    StudyRole.objects.create(study=study, user=user, role=role)
    return user


def creator():
    user = StaffMemberFactory()
    user.user_permissions.add(Permission.objects.get(codename="create_study"))
    return user


def export_url(study):
    return reverse("admin:studies_study_definition", args=[study.pk])


IMPORT_URL = "/admin/studies/study/import-definition/"


def test_any_role_exports_the_definition_from_the_study_page(client, loaded_study):
    client.force_login(member(loaded_study, Role.VIEWER))
    page = client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    assert export_url(loaded_study) in page.content.decode()
    form = client.get(export_url(loaded_study)).content.decode()
    assert "Download the definition" in form
    assert "with_codes" not in form  # a viewer may not take the crowd codes
    response = client.get(export_url(loaded_study), {"kind": "yaml"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="pilot-study.yaml"'
    assert yaml.safe_load(response.content) == study_definition(loaded_study)
    json_file = client.get(export_url(loaded_study), {"kind": "json"})
    assert json_file.content.decode() == definition_text(study_definition(loaded_study), "json")
    refused = client.get(export_url(loaded_study), {"kind": "yaml", "with_codes": "on"})
    assert refused.status_code == 403
    assert "manage crowd settings" in refused.content.decode()


def test_codes_with_a_role_that_manages_crowd_settings(client, loaded_study):
    client.force_login(member(loaded_study, Role.COLLABORATOR))
    assert "with_codes" in client.get(export_url(loaded_study)).content.decode()
    response = client.get(export_url(loaded_study), {"kind": "yaml", "with_codes": "on"})
    stage = loaded_study.stages.get(position=1)
    assert yaml.safe_load(response.content)["stages"][0]["completion_code"] == (
        stage.completion_code
    )


def test_no_role_no_definition(client, loaded_study):
    client.force_login(StaffMemberFactory())
    assert client.get(export_url(loaded_study)).status_code == 404


def test_import_makes_a_draft_study_owned_by_the_importer(client, loaded_study):
    user = creator()
    client.force_login(user)
    listing = client.get(reverse("admin:studies_study_changelist")).content.decode()
    assert IMPORT_URL in listing
    text = definition_text(study_definition(loaded_study))
    upload = SimpleUploadedFile("pilot.yaml", text.encode())
    response = client.post(IMPORT_URL, {"file": upload, "slug": "pilot-2", "title": ""})
    copy = Study.objects.get(slug="pilot-2")
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:studies_study_change", args=[copy.pk])
    assert copy.status == Study.Status.DRAFT and copy.title == loaded_study.title
    assert StudyRole.objects.get(study=copy, user=user).role == Role.OWNER
    page = client.get(response["Location"]).content.decode()
    assert "Created the draft study" in page


def test_a_bad_file_lists_its_problems_and_writes_nothing(client, loaded_study):
    client.force_login(creator())
    definition = study_definition(loaded_study)
    definition["study"]["slug"] = "broken"
    definition["stages"][0]["overlap_k"] = -1
    definition["stages"][1]["groups"] = ["Nobody"]
    counts = (Study.objects.count(), Stage.objects.count())
    upload = SimpleUploadedFile("broken.yaml", definition_text(definition).encode())
    response = client.post(IMPORT_URL, {"file": upload})
    assert response.status_code == 422
    html = response.content.decode()
    assert "The file was not imported; nothing was written." in html
    assert "stages[0].overlap_k: -1 is less than the minimum of 0" in html
    assert counts == (Study.objects.count(), Stage.objects.count())
    not_text = client.post(IMPORT_URL, {"file": SimpleUploadedFile("x.yaml", b"\xff\xfe\x00")})
    assert "The file is not UTF-8 text." in not_text.content.decode()
    assert counts == (Study.objects.count(), Stage.objects.count())


def test_who_may_not_create_studies_may_not_import(client, loaded_study):
    client.force_login(member(loaded_study, Role.OWNER))
    listing = client.get(reverse("admin:studies_study_changelist")).content.decode()
    assert IMPORT_URL not in listing
    text = definition_text(study_definition(loaded_study))
    response = client.post(IMPORT_URL, {"file": SimpleUploadedFile("p.yaml", text.encode())})
    assert response.status_code == 403
    assert "may not create studies" in response.content.decode()
    assert Study.objects.count() == 1


def test_a_file_over_the_size_limit_is_refused_unread(client, loaded_study):
    client.force_login(creator())
    huge = SimpleUploadedFile("huge.yaml", b"# " + b"x" * DEFINITION_MAX_BYTES)
    response = client.post(IMPORT_URL, {"file": huge})
    assert response.status_code == 200  # the form again, with its error
    assert "The file is larger than 2 MB: a definition is far smaller." in (
        response.content.decode()
    )
    assert Study.objects.count() == 1
