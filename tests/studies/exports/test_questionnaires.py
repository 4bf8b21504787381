"""The questionnaire answers file (studies.exports.questionnaires): one row per
answer, pseudonyms only, texts only here; screened-out people absent; CSV, the
spreadsheet-safe CSV and Excel; the annotation exports unchanged."""

import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from studies.services import annotators_create
from studies.services.questionnaires import questionnaire_respond
from tests.factories import StaffUserFactory
from tests.studies.questionnaire_helpers import consent, ids, screening
from tests.studies.typed_helpers import assert_same_as_csv, jsonl_frame, parquet_frame


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


@pytest.fixture
def answered(study):
    q = screening(study)
    m = ids(q)
    layperson = study.groups.get(name="Layperson")
    kept, out = annotators_create(group=layperson, count=2)
    questionnaire_respond(
        annotator=kept,
        questionnaire=q,
        answers={
            m["1"]: [str(m["1:Yes"])],
            m["2"]: [str(m["2:Neither"]), str(m["2:Linguistics"])],
            m["3"]: ["4"],
            m["4"]: ["=1+1 is how I count"],
        },
    )
    questionnaire_respond(
        annotator=out,
        questionnaire=q,
        answers={m["1"]: [str(m["1:No"])], m["3"]: ["1"], m["4"]: ["secret"]},
    )
    consent(kept)
    return q


def rows_of(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_one_row_per_answer_by_pseudonym_and_nothing_of_the_screened_out(staff_client, answered):
    response = staff_client.get(reverse("studies:export_questionnaires", args=["pilot"]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="pilot-questionnaires.csv"'
    rows = rows_of(response)
    assert rows[0] == [
        "study",
        "questionnaire",
        "placement",
        "stage",
        "annotator",
        "annotator_group",
        "submitted_at",
        "question_position",
        "question",
        "question_kind",
        "answer",
    ]
    body = [(r[4], r[7], r[9], r[10]) for r in rows[1:]]
    assert body == [
        ("Layperson 1", "1", "single", "Yes"),
        ("Layperson 1", "2", "multiple", "Linguistics"),
        ("Layperson 1", "2", "multiple", "Neither"),
        ("Layperson 1", "3", "scale", "4"),
        ("Layperson 1", "4", "text", "=1+1 is how I count"),
    ]
    assert all(r[:4] == ["pilot", "Screening", "screening", ""] for r in rows[1:])
    assert (
        "secret"
        not in b"".join(
            staff_client.get(
                reverse("studies:export_questionnaires", args=["pilot"])
            ).streaming_content
        ).decode()
    )


def test_the_spreadsheet_safe_file_escapes_formula_like_answers(staff_client, answered):
    url = reverse("studies:export_questionnaires", args=["pilot"])
    rows = rows_of(staff_client.get(url, {"file": "csv-spreadsheet-safe"}))
    assert rows[-1][-1] == "'=1+1 is how I count"


def test_the_excel_file_has_a_questionnaires_sheet(staff_client, answered):
    from openpyxl import load_workbook

    url = reverse("studies:export_questionnaires", args=["pilot"])
    response = staff_client.get(url, {"file": "xlsx"})
    assert response["Content-Disposition"] == 'attachment; filename="pilot-questionnaires.xlsx"'
    book = load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    assert book.sheetnames == ["questionnaires"]
    values = list(book["questionnaires"].values)
    assert len(values) == 6 and values[-1][-1] == "=1+1 is how I count"


def test_an_unknown_file_kind_is_refused_with_a_message(staff_client, answered):
    url = reverse("studies:export_questionnaires", args=["pilot"])
    response = staff_client.get(url, {"file": "pdf"})
    assert response.status_code == 400
    assert (
        'file: Choose "csv", "csv-spreadsheet-safe", "xlsx", "jsonl" or "parquet", not "pdf".'
        in response.content.decode()
    )


def test_the_command_writes_the_answers_and_the_annotations_export_is_unchanged(
    answered, tmp_path, capsys
):
    out = tmp_path / "answers.csv"
    call_command("export_annotations", "pilot", "--questionnaires", "--out", str(out))
    rows = list(csv.reader(out.open(encoding="utf-8", newline="")))
    assert len(rows) == 6 and rows[1][4] == "Layperson 1"
    call_command("export_annotations", "pilot", "--format", "full")
    header = capsys.readouterr().out.splitlines()[0]
    assert "questionnaire" not in header


def test_the_admin_export_page_offers_the_answers(staff_client, answered):
    page = staff_client.get(reverse("admin:studies_study_export", args=[answered.study_id]))
    assert reverse("studies:export_questionnaires", args=["pilot"]).encode() in page.content


def test_the_answers_as_typed_files(staff_client, answered):
    url = reverse("studies:export_questionnaires", args=["pilot"])
    expected = rows_of(staff_client.get(url))
    response = staff_client.get(url, {"file": "parquet"})
    assert response["Content-Disposition"] == 'attachment; filename="pilot-questionnaires.parquet"'
    frame = parquet_frame(b"".join(response.streaming_content))
    assert_same_as_csv(frame, expected)
    assert str(frame["question_position"].dtype) == "int64[pyarrow]"
    assert str(frame["answer"].dtype) == "string[pyarrow]"
    response = staff_client.get(url, {"file": "jsonl"})
    assert_same_as_csv(jsonl_frame(b"".join(response.streaming_content).decode()), expected)
