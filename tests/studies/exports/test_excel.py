"""The Excel download: the same rows as the CSV, every cell a string (so "=1+1" stays
text), from the export function, the admin's download, the API and the command."""

import io
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse
from openpyxl import load_workbook

from studies.datafiles import xlsx
from studies.datafiles.materials import materials_import
from studies.exports import ExportOptions, export_file_write, export_rows
from studies.models import Reflection, Role
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
    study_create,
)
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

TEXTS = ("=1+1", "+31 6 1234", "-- well", "@home", "'=quoted", "Line one\nline two, ✓")


@pytest.fixture
def formula_study(db):
    study = study_create(
        slug="sheet", title="Sheet", stages=[("=Stage", timedelta(0))], groups=["Expert"],
        information_sheet="i", consent_text="c", overlap_k=1,
    )  # fmt: skip
    doc = {
        "contexts": [
            {
                "id": "-7",
                "turns": [{"role": "client", "text": '=HYPERLINK("x")'}],
                "human_reflection": TEXTS[0],
                "synthetic": [
                    {"stage": "=Stage", "source": "-GPT", "text": text} for text in TEXTS[1:]
                ],
                "attention_checks": [{"text": "Bananas are yellow."}],
            }
        ]
    }
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    (annotator,) = annotators_create(group=study.groups.get(), count=1)
    assignment = assignment_create(annotator=annotator, batch=study.stages.get().batches.get())
    for reflection in assignment.batch.reflections.all():
        judgement_record(
            assignment=assignment, reflection=reflection, answer=Answer(coherent=True, empathy=3)
        )
    assignment_submit(assignment=assignment)
    return study


def sheet_rows(data: bytes) -> list[list]:
    workbook = load_workbook(io.BytesIO(data))
    return [list(row) for row in workbook.active.iter_rows(values_only=True)]


def as_text(rows: list[list]) -> list[list[str]]:
    return [["" if cell is None else cell for cell in row] for row in rows]


@pytest.mark.parametrize("fmt", ["published", "full"])
def test_workbook_holds_the_csv_rows_as_strings(formula_study, fmt):
    options = ExportOptions(fmt=fmt, file="xlsx")
    target = io.BytesIO()
    export_file_write(study=formula_study, options=options, target=target)
    rows = sheet_rows(target.getvalue())
    expected = [list(r) for r in export_rows(study=formula_study, options=options)]
    assert as_text(rows) == expected
    assert all(isinstance(cell, str) for row in rows for cell in row if cell is not None)
    workbook = load_workbook(io.BytesIO(target.getvalue()))
    cells = [c for row in workbook.active.iter_rows() for c in row if c.value is not None]
    assert {c.data_type for c in cells} == {"s"}  # text, never a formula ("f")
    assert "=1+1" in {c.value for c in cells}


def test_excel_download_from_the_admin_page_url(formula_study, client):
    client.force_login(user_with_role(formula_study, Role.ANALYST))
    response = client.get(reverse("studies:export", args=["sheet"]), {"file": "xlsx"})
    assert response.status_code == 200
    assert response["Content-Type"] == xlsx.CONTENT_TYPE
    assert 'filename="sheet-annotations.xlsx"' in response["Content-Disposition"]
    rows = sheet_rows(b"".join(response.streaming_content))
    assert rows[0][:2] == ["annomi_dialogue_id", "stage"]
    assert {row[4] for row in rows[1:]} == set(TEXTS)
    assert {row[0] for row in rows[1:]} == {"-7"}


def test_admin_export_page_names_the_three_kinds_of_file(formula_study, admin_client):
    page = admin_client.get(reverse("admin:studies_study_export", args=[formula_study.pk]))
    text = page.content.decode()
    for value in ("csv", "csv-spreadsheet-safe", "xlsx"):
        assert f'name="file" value="{value}"' in text
    assert "Excel workbook (.xlsx)" in text
    assert "exactly as stored" in text


def test_command_writes_a_workbook(formula_study, tmp_path):
    target = tmp_path / "out.xlsx"
    call_command("export_annotations", "sheet", "--excel", "--out", str(target), stderr=StringIO())
    rows = sheet_rows(target.read_bytes())
    assert {row[4] for row in rows[1:]} == set(TEXTS)
    assert not (tmp_path / "out.xlsx.partial").exists()


def test_command_needs_a_file_for_excel_and_one_kind_of_file(formula_study, tmp_path):
    with pytest.raises(CommandError, match="binary file: pass --out PATH"):
        call_command("export_annotations", "sheet", "--excel", stdout=StringIO())
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command(
            "export_annotations", "sheet", "--excel", "--spreadsheet-safe", "--out",
            str(tmp_path / "x.xlsx"), stdout=StringIO(),
        )  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_text_too_long_for_an_excel_cell_is_refused_and_nothing_is_written(
    formula_study, tmp_path, client, monkeypatch
):
    monkeypatch.setattr(xlsx, "MAX_CELL_CHARACTERS", 5)
    with pytest.raises(ValidationError) as info:
        export_file_write(
            study=formula_study, options=ExportOptions(file="xlsx"), target=io.BytesIO()
        )
    assert info.value.message_dict == {
        "file": [
            "row 1, column 'annomi_dialogue_id': 18 characters, but an Excel cell holds at "
            "most 5; download the CSV instead."
        ]
    }
    target = tmp_path / "out.xlsx"
    with pytest.raises(CommandError, match="an Excel cell holds at most 5"):
        call_command("export_annotations", "sheet", "--excel", "--out", str(target))
    assert list(tmp_path.iterdir()) == []

    client.force_login(user_with_role(formula_study, Role.ANALYST))
    response = client.get(reverse("studies:export", args=["sheet"]), {"file": "xlsx"})
    assert response.status_code == 400
    assert "file: row 1, column 'annomi_dialogue_id'" in response.content.decode()


def test_more_rows_than_a_worksheet_holds_are_refused(formula_study, monkeypatch):
    monkeypatch.setattr(xlsx, "MAX_ROWS", 3)
    with pytest.raises(ValidationError, match="more than 3 rows"):
        export_file_write(
            study=formula_study, options=ExportOptions(file="xlsx"), target=io.BytesIO()
        )
    assert Reflection.objects.filter(context__study=formula_study).count() == 7  # untouched
