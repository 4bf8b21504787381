import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from studies.models import (
    Annotator,
    Batch,
    BatchItem,
    DialogueContext,
    PersonalDataPurge,
    Reflection,
    Study,
    StudyRole,
    StudyRoleEvent,
)
from studies.services import annotators_create
from tests.conftest import materials_doc
from tests.factories import StaffUserFactory, StudyFactory, user_with_role

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def _counts():
    return [m.objects.count() for m in (DialogueContext, Reflection, Batch, BatchItem)]


def test_import_materials_command_imports_the_example_csv(study):
    out = StringIO()
    call_command("import_materials", "pilot", str(EXAMPLES / "materials.csv"), stdout=out)
    # ex-1 brings its own check for the GPT-2 stage only; its GPT-3 batch and both
    # batches of ex-2 get checks generated from the other dialogue.
    assert "2 contexts, 9 reflections and 4 batches created" in out.getvalue()
    assert "attention checks generated: 2." in out.getvalue()


def test_import_materials_command_twice_changes_nothing(study):
    call_command("import_materials", "pilot", str(EXAMPLES / "materials.json"), stdout=StringIO())
    before = _counts()
    out = StringIO()
    call_command("import_materials", "pilot", str(EXAMPLES / "materials.json"), stdout=out)
    assert "Nothing to import" in out.getvalue()
    assert _counts() == before


def test_import_materials_command_reports_every_problem_and_writes_nothing(study, tmp_path):
    doc = materials_doc()
    doc["contexts"][0]["turns"][0]["role"] = "coach"
    doc["contexts"][2]["synthetic"][1]["text"] = "  "
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CommandError) as info:
        call_command("import_materials", "pilot", str(path))
    message = str(info.value)
    assert "Nothing was imported: 2 problem(s) in bad.json" in message
    assert "contexts[0] (id \"dlg-1\"), field 'turns': turn 1 has unknown role 'coach'" in message
    assert "contexts[2] (id \"dlg-3\"), synthetic[1], field 'text': empty text" in message
    assert _counts() == [0, 0, 0, 0]


def test_import_materials_command_unknown_study_or_file(study, tmp_path):
    with pytest.raises(CommandError, match='No study with slug "nope"'):
        call_command("import_materials", "nope", str(EXAMPLES / "materials.json"))
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_materials", "pilot", str(tmp_path / "missing.json"))
    odd = tmp_path / "materials.txt"
    odd.write_text("{}")
    with pytest.raises(CommandError, match="pass --format json"):
        call_command("import_materials", "pilot", str(odd))


def test_load_demo_builds_the_demo_study_and_prints_links(db):
    out = StringIO()
    call_command("load_demo", "--force", stdout=out)
    study = Study.objects.get(slug="demo")
    assert study.status == Study.Status.OPEN
    assert study.contexts.count() >= 4
    assert list(study.stages.values_list("name", flat=True)) == ["GPT-2 stage", "GPT-3 stage"]
    assert set(study.groups.values_list("name", flat=True)) == {"Layperson", "Expert"}
    assert study.categories.count() == 5
    assert all(c.example_reflection for c in study.categories.all())
    assert study.tutorial_example_turns and study.tutorial_intro
    assert study.consent_versions.count() == 1
    sources = {
        stage: set(
            Reflection.objects.filter(batches__stage__name=stage, kind="synthetic").values_list(
                "source", flat=True
            )
        )
        for stage in ("GPT-2 stage", "GPT-3 stage")
    }
    assert sources == {"GPT-2 stage": {"GPT-2"}, "GPT-3 stage": {"GPT-3"}}
    assert get_user_model().objects.filter(username="researcher", is_staff=True).exists()
    printed = out.getvalue()
    for annotator in Annotator.objects.filter(study=study):
        assert f"http://127.0.0.1:8000/i/{annotator.access_token}/" in printed
    assert "password: demo-researcher" in printed


def test_load_demo_twice_is_idempotent(db):
    call_command("load_demo", "--force", stdout=StringIO())
    before = [*_counts(), Annotator.objects.count(), Study.objects.count()]
    call_command("load_demo", "--force", stdout=StringIO())
    assert [*_counts(), Annotator.objects.count(), Study.objects.count()] == before


def test_load_demo_refuses_to_run_in_production(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="refusing to run with DEBUG off"):
        call_command("load_demo", stdout=StringIO())
    assert not Study.objects.exists()


# --- purge_personal_data --by: the account must be allowed to purge ----------------------------


@pytest.fixture
def closed_study(loaded_study):
    """``loaded_study``, closed, with an annotator who gave an e-mail address."""
    annotators_create(group=loaded_study.groups.first(), count=1, email="someone@example.org")
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.CLOSED)
    return loaded_study


def _purge_state(study):
    return (
        list(Annotator.objects.filter(study=study).values_list("email", "access_token")),
        Study.objects.get(pk=study.pk).purged_at,
        PersonalDataPurge.objects.count(),
    )


@pytest.mark.parametrize("role", ["collaborator", "analyst", "coder", "viewer", None])
def test_purge_by_an_account_that_may_not_purge_is_refused_and_purges_nothing(closed_study, role):
    other = StudyFactory()
    user = user_with_role(closed_study if role else other, role or "owner", username="dana")
    before = _purge_state(closed_study)
    events = StudyRoleEvent.objects.count()
    expected = (
        f'"dana" is {role} of the study pilot: purging takes a role that may grant and '
        "withdraw roles, purge personal data and delete the study. Nothing purged."
        if role
        else '"dana" has no role in the study pilot. Nothing purged.'
    )
    for dry_run in ((), ("--dry-run",)):
        with pytest.raises(CommandError) as refused:
            call_command(
                "purge_personal_data", "pilot", "--by", "dana", *dry_run, stdout=StringIO()
            )
        assert str(refused.value) == expected
    assert _purge_state(closed_study) == before
    assert StudyRole.objects.filter(user=user).count() == 1
    assert StudyRoleEvent.objects.count() == events


def test_purge_by_an_inactive_owner_is_refused(closed_study):
    user = user_with_role(closed_study, "owner", username="gone")
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    before = _purge_state(closed_study)
    with pytest.raises(CommandError) as refused:
        call_command("purge_personal_data", "pilot", "--by", "gone", stdout=StringIO())
    assert str(refused.value) == '"gone" is not an active staff account. Nothing purged.'
    assert _purge_state(closed_study) == before


@pytest.mark.parametrize("who", ["owner", "superuser"])
def test_purge_by_the_owner_or_a_superuser_purges_and_logs_them(closed_study, who):
    user = (
        user_with_role(closed_study, "owner", username="olga")
        if who == "owner"
        else StaffUserFactory(username="olga")
    )
    out = StringIO()
    call_command("purge_personal_data", "pilot", "--by", "olga", stdout=out)
    assert "Deleted from pilot at" in out.getvalue()
    assert PersonalDataPurge.objects.get().purged_by == user
    assert not Annotator.objects.filter(study=closed_study).exclude(email="").exists()
