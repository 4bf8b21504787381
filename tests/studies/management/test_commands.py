import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from studies.models import Annotator, Batch, BatchItem, DialogueContext, Reflection, Study
from tests.conftest import materials_doc

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
