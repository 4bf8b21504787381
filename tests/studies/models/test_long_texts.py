"""Long texts are stored whole and exported back whole on every import path: the
materials command, the admin and the API, and the published annotations. PostgreSQL
refuses an index row over 2,704 bytes, so no unique index may hold a text itself.
Texts over the materials' cap (studies.limits) are refused with their place on every
path, and nothing is written."""

import csv
import io
import json
import random
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from studies.datafiles.materials import MaterialsImportError, materials_import
from studies.datafiles.published import PUBLISHED_COLUMNS
from studies.limits import MATERIAL_TEXT_MAX_LENGTH
from studies.models import DialogueContext, Reflection
from tests.conftest import materials_doc

pytestmark = [pytest.mark.django_db]


def prose(n: int, seed: int) -> str:
    """``n`` characters of text that does not compress (PostgreSQL compresses index
    rows, so a repetitive text would fit), with multi-byte letters, line breaks and
    quotes, not starting or ending with a space."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzçäé妹“”\"', \n"
    return "".join(rng.choice(letters) for _ in range(n - 2)).join("<>")


# Far over PostgreSQL's index-row limit (2,704 bytes).
LONG = prose(10_000, 1)
TOO_LONG = prose(MATERIAL_TEXT_MAX_LENGTH + 1, 3)


def long_materials() -> dict:
    doc = materials_doc(n_contexts=2)
    doc["contexts"][0]["human_reflection"] = "H" + LONG
    doc["contexts"][0]["turns"][1]["text"] = "T" + LONG
    doc["contexts"][1]["synthetic"][0]["text"] = "S" + LONG
    return doc


def assert_long_materials_stored() -> None:
    texts = set(Reflection.objects.values_list("text", flat=True))
    assert {"H" + LONG, "S" + LONG} <= texts
    turns = DialogueContext.objects.get(external_id="dlg-1").turns
    assert turns[1]["text"] == "T" + LONG


def test_command_imports_long_texts_whole(study, tmp_path):
    path = tmp_path / "materials.json"
    path.write_text(json.dumps(long_materials()), encoding="utf-8")
    call_command("import_materials", "pilot", str(path), stdout=StringIO())
    assert_long_materials_stored()


def test_admin_imports_long_texts_whole(admin_client, study):
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    upload = SimpleUploadedFile("m.json", json.dumps(long_materials()).encode())
    response = admin_client.post(url, {"file": upload})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert_long_materials_stored()


def test_api_imports_long_texts_whole(admin_client, study):
    response = admin_client.post(
        "/api/studies/pilot/materials/",
        json.dumps(long_materials()),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content[:2000]
    assert_long_materials_stored()


def test_materials_csv_cells_beyond_the_csv_modules_default_limit_are_read(study):
    """A dialogue_context cell holds every turn: three turns at the cap are a cell
    longer than the csv module's default field limit (131,072 characters)."""
    turns = [prose(MATERIAL_TEXT_MAX_LENGTH, seed) for seed in (4, 5, 6)]
    cell = json.dumps([{"client": turns[0]}, {"therapist": turns[1]}, {"client": turns[2]}])
    assert len(cell) > 131_072
    out = io.StringIO()
    csv.writer(out).writerows(
        [
            ["annomi_dialogue_id", "stage", "dialogue_context", "reflection_source", "reflection"],
            ["d1", "", cell, "Human", "H" + LONG],
            ["d1", "GPT-2 stage", "", "GPT-2", "S" + LONG],
            ["d2", "", json.dumps([{"client": "Bye."}]), "Human", "You say bye."],
            ["d2", "GPT-2 stage", "", "GPT-2", "Bye to you."],
        ]
    )
    materials_import(study=study, content=out.getvalue(), fmt="csv")
    context = DialogueContext.objects.get(external_id="d1")
    assert [turn["text"] for turn in context.turns] == turns
    assert {"H" + LONG, "S" + LONG} <= set(Reflection.objects.values_list("text", flat=True))


def test_published_round_trip_keeps_a_10_kb_reflection_and_turn_exactly(tmp_path):
    context = json.dumps(
        [{"therapist": "T" + LONG}, {"client": "Short answer."}], ensure_ascii=False
    )
    answers = ("Yes", "", "", "", "", "")
    rows = [list(PUBLISHED_COLUMNS)]
    for stage in ("Stage one", "Stage two"):
        for annotator in ("Expert 1", "Expert 2"):
            rows.append(["12", stage, context, "Human", "H" + LONG, annotator, *answers])
            rows.append(["12", stage, context, "GPT-2", f"{stage} " + LONG, annotator, *answers])
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    path = tmp_path / "published.csv"
    path.write_text(out.getvalue(), encoding="utf-8")

    call_command("import_annotations", str(path), "--study", "long", stdout=StringIO())
    exported = StringIO()
    call_command("export_annotations", "long", "--format", "published", stdout=exported)

    back = list(csv.reader(io.StringIO(exported.getvalue(), newline="")))
    assert back[0] == rows[0]
    assert sorted(back[1:]) == sorted(rows[1:])


# --- over the cap: refused with its place on every path -------------------------------------

OVER = f"longer than {MATERIAL_TEXT_MAX_LENGTH:,} characters"


def too_long_materials() -> dict:
    doc = materials_doc(n_contexts=2)
    doc["contexts"][0]["human_reflection"] = TOO_LONG
    doc["contexts"][1]["turns"][1]["text"] = TOO_LONG
    doc["contexts"][1]["synthetic"][2]["text"] = TOO_LONG
    return doc


TOO_LONG_PROBLEMS = [  # the turns are read first, the reflections checked after
    f"contexts[1] (id \"dlg-2\"), field 'turns': turn 2 is {OVER}",
    f"contexts[0] (id \"dlg-1\"), field 'human_reflection': {OVER}",
    f"contexts[1] (id \"dlg-2\"), synthetic[2], field 'text': {OVER}",
]


def nothing_written() -> bool:
    return not DialogueContext.objects.exists() and not Reflection.objects.exists()


def test_service_refuses_texts_over_the_cap_with_their_place(study):
    with pytest.raises(MaterialsImportError) as info:
        materials_import(study=study, content=json.dumps(too_long_materials()), fmt="json")
    assert [str(p) for p in info.value.problems] == TOO_LONG_PROBLEMS
    assert nothing_written()


def test_command_refuses_texts_over_the_cap_with_their_place(study, tmp_path):
    from django.core.management import CommandError

    path = tmp_path / "materials.json"
    path.write_text(json.dumps(too_long_materials()), encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("import_materials", "pilot", str(path), stdout=StringIO())
    assert str(info.value).splitlines()[1:] == [f"  {p}" for p in TOO_LONG_PROBLEMS]
    assert nothing_written()


def test_admin_refuses_a_csv_text_over_the_cap_with_its_row(admin_client, study):
    out = io.StringIO()
    csv.writer(out).writerows(
        [
            ["annomi_dialogue_id", "stage", "dialogue_context", "reflection_source", "reflection"],
            ["d1", "", json.dumps([{"client": "Hi."}]), "Human", "You say hi."],
            ["d1", "GPT-2 stage", "", "GPT-2", TOO_LONG],
        ]
    )
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    upload = SimpleUploadedFile("m.csv", out.getvalue().encode())
    page = admin_client.post(url, {"file": upload}).content.decode()
    assert "Nothing was imported" in page
    assert f"<strong>row 3, column &#x27;reflection&#x27;</strong>: {OVER}" in page
    assert nothing_written()


def test_api_refuses_texts_over_the_cap_with_their_place(admin_client, study):
    response = admin_client.post(
        "/api/studies/pilot/materials/",
        json.dumps(too_long_materials()),
        content_type="application/json",
    )
    assert response.status_code == 400
    body = response.json()
    assert [f"{i['where']}: {i['message']}" for i in body["issues"]] == TOO_LONG_PROBLEMS
    assert nothing_written()


def test_published_import_refuses_texts_over_the_cap_with_their_place(tmp_path):
    from django.core.management import CommandError

    from studies.models import Study

    answers = ("Yes", "", "", "", "", "")
    context = json.dumps([{"therapist": "How are you?"}, {"client": TOO_LONG}])
    rows = [
        list(PUBLISHED_COLUMNS),
        ["12", "Stage one", context, "Human", "You are fine.", "Expert 1", *answers],
        ["12", "Stage one", context, "GPT-2", TOO_LONG, "Expert 1", *answers],
    ]
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    path = tmp_path / "published.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("import_annotations", str(path), "--study", "long", stdout=StringIO())
    lines = str(info.value).splitlines()[1:]
    assert f"  row 2, column 'dialogue_context': turn 2 is {OVER}" in lines
    assert f"  row 3, column 'reflection': {OVER}" in lines
    assert not Study.objects.filter(slug="long").exists()
