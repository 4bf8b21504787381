"""The codes export (one row per description, coder and code), its command, and the
primary coder's codes in the full annotation export."""

import csv
import io
from io import StringIO

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from studies.exports import CODES_COLUMNS, ExportOptions, codes_csv_chunks, export_csv_chunks
from studies.models import Judgement
from studies.services.coding import code_create, coder_join, coder_make_primary, coding_save
from studies.services.lifecycle import assignment_reject
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)
from tests.studies.coding_fixtures import coded_descriptions
from tests.studies.typed_helpers import assert_same_as_csv, jsonl_frame, parquet_frame

pytestmark = pytest.mark.django_db


@pytest.fixture
def coding_stage(shared_coding_stage):
    """Built once for the module: no test here builds another study of its slug."""
    return shared_coding_stage


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.fixture
def coded(coding_stage, alice, bob):
    """Alice codes the first description with two codes and the second as
    uninformative; Bob codes the first with one code."""
    study = coding_stage.study
    lost = code_create(study=study, slug="lost_context", label="Lost the context")
    parrots = code_create(study=study, slug="parrots", label="Parrots the client")
    ids = coded_descriptions(coding_stage)
    first, second = Judgement.objects.get(pk=ids[0]), Judgement.objects.get(pk=ids[1])
    a, b = coder_join(study=study, user=alice), coder_join(study=study, user=bob)
    coding_save(coder=a, judgement=first, codes=[parrots, lost])
    coding_save(coder=a, judgement=second, uninformative=True)
    coding_save(coder=b, judgement=first, codes=[parrots])
    return {"first": first, "second": second, "alice": a, "bob": b}


def test_one_row_per_description_coder_and_code(coding_stage, coded):
    rows = rows_of("".join(codes_csv_chunks(study=coding_stage.study)))
    assert rows[0] == list(CODES_COLUMNS)
    first, second = coded["first"], coded["second"]
    head = lambda j: [  # noqa: E731
        "pilot",
        "GPT-2 stage",
        "Layperson",
        j.assignment.annotator.pseudonym,
        j.assignment.batch.context.external_id,
        j.reflection.source,
        str(j.pk),
        j.error_description,
    ]
    assert rows[1:] == [
        [*head(first), "alice", "Yes", "lost_context", "No"],
        [*head(first), "alice", "Yes", "parrots", "No"],
        [*head(first), "bob", "No", "parrots", "No"],
        [*head(second), "alice", "Yes", "", "Yes"],
    ]
    coder_make_primary(coder=coded["bob"])
    rows = rows_of("".join(codes_csv_chunks(study=coding_stage.study)))
    assert [(r[8], r[9]) for r in rows[1:]] == [
        ("alice", "No"),
        ("alice", "No"),
        ("bob", "Yes"),
        ("alice", "No"),
    ]


def test_another_stage_has_no_codes(coding_stage, coded):
    other = coding_stage.study.stages.get(position=2)
    assert rows_of("".join(codes_csv_chunks(study=coding_stage.study, stage=other))) == [
        list(CODES_COLUMNS)
    ]


def test_the_full_export_ends_with_the_primary_coders_codes(coding_stage, coded):
    rows = rows_of(
        "".join(export_csv_chunks(study=coding_stage.study, options=ExportOptions(fmt="full")))
    )
    assert rows[0][-2:] == ["error_description", "description_codes"]
    judgement_of = {
        (r[rows[0].index("reflection_id")], r[rows[0].index("annotator")]): r[-1] for r in rows[1:]
    }
    first, second = coded["first"], coded["second"]
    key = lambda j: (str(j.reflection_id), j.assignment.annotator.pseudonym)  # noqa: E731
    assert judgement_of[key(first)] == "lost_context;parrots"
    assert judgement_of[key(second)] == "uninformative"
    assert sorted(judgement_of.values()).count("") == len(rows) - 3
    coder_make_primary(coder=coded["bob"])
    rows = rows_of(
        "".join(export_csv_chunks(study=coding_stage.study, options=ExportOptions(fmt="full")))
    )
    assert {r[-1] for r in rows[1:]} == {"parrots", ""}


def test_without_codings_the_exports_keep_their_columns(coding_stage):
    full = rows_of(
        "".join(export_csv_chunks(study=coding_stage.study, options=ExportOptions(fmt="full")))
    )
    assert full[0][-1] == "error_description"
    assert "description_codes" not in full[0]


def test_the_published_format_never_has_the_codes(coding_stage, coded):
    published = rows_of(
        "".join(export_csv_chunks(study=coding_stage.study, options=ExportOptions()))
    )
    assert published[0][-1] == "error_description"


def test_export_codes_command(coding_stage, coded, tmp_path):
    out = StringIO()
    call_command("export_codes", "pilot", "--stage", "1", stdout=out)
    assert rows_of(out.getvalue()) == rows_of("".join(codes_csv_chunks(study=coding_stage.study)))
    target = tmp_path / "codes.csv"
    call_command("export_codes", "pilot", "--out", str(target), stderr=StringIO())
    assert len(rows_of(target.read_text(encoding="utf-8"))) == 5
    with pytest.raises(CommandError, match='No study with slug "nope"'):
        call_command("export_codes", "nope")
    with pytest.raises(CommandError, match="pilot has no stage 9"):
        call_command("export_codes", "pilot", "--stage", "9")
    with pytest.raises(CommandError, match="no directory"):
        call_command("export_codes", "pilot", "--out", str(tmp_path / "missing" / "x.csv"))


def test_export_codes_command_writes_an_excel_workbook(coding_stage, coded, tmp_path):
    target = tmp_path / "codes.xlsx"
    call_command("export_codes", "pilot", "--excel", "--out", str(target), stderr=StringIO())
    sheet = openpyxl.load_workbook(target, read_only=True).active
    rows = [[cell or "" for cell in row] for row in sheet.iter_rows(values_only=True)]
    assert rows == rows_of("".join(codes_csv_chunks(study=coding_stage.study)))
    with pytest.raises(CommandError, match="binary file: pass --out"):
        call_command("export_codes", "pilot", "--excel")
    assert not list(tmp_path.glob("*.partial"))


def test_codings_of_a_rejected_batch_are_left_out(coding_stage, coded):
    first = coded["first"]
    assignment_reject(assignment=first.assignment, reason="Copied answers.")
    rows = rows_of("".join(codes_csv_chunks(study=coding_stage.study)))
    # The coding page no longer lists the batch's descriptions; nor does the download.
    assert str(first.pk) not in {row[6] for row in rows[1:]}
    assert all(Judgement.objects.analysed().filter(pk=int(row[6])).exists() for row in rows[1:])


def test_export_codes_command_writes_the_typed_files(coding_stage, coded, tmp_path):
    expected = rows_of("".join(codes_csv_chunks(study=coding_stage.study)))
    target = tmp_path / "codes.parquet"
    call_command("export_codes", "pilot", "--file", "parquet", "--out", str(target),
                 stderr=StringIO())  # fmt: skip
    frame = parquet_frame(target.read_bytes())
    assert_same_as_csv(frame, expected)
    assert str(frame["primary"].dtype) == "bool[pyarrow]"
    assert str(frame["judgement_id"].dtype) == "int64[pyarrow]"
    out = StringIO()
    call_command("export_codes", "pilot", "--file", "jsonl", stdout=out)
    assert_same_as_csv(jsonl_frame(out.getvalue()), expected)
