"""The data-file core (studies.datafiles): the reader, the header check, the problem
collector and the one way a refused file is reported, and the same rules holding in
all three formats (materials, published annotations, automatic scores)."""

import csv
import io
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.importers import AutomaticScoresImportError, automatic_scores_import
from analysis.models import AutomaticScore
from studies.datafiles import (
    MAX_REPORTED_PROBLEMS,
    CsvRecords,
    DataFileError,
    Problems,
    header_check,
    read_text,
)
from studies.datafiles.materials import MaterialsImportError, materials_import
from studies.datafiles.published import (
    PUBLISHED_COLUMNS,
    AnnotationsImportError,
    annotations_import,
)
from studies.models import Batch, DialogueContext, Reflection, Study

# --------------------------------------------------------------------------- the core


def test_problems_are_reported_in_row_order_file_wide_first():
    problems = Problems()
    problems.at_cell(7, "stage", "unknown stage")
    problems.at_row(3, "duplicate of row 2")
    problems.add("file", "contains no contexts")
    problems.add('dialogue "x" (first in row 3)', "no row gives its dialogue_context", row=3)
    problems.at_cell(3, "score", "empty score")
    error = problems.error()
    assert [str(p) for p in error.problems] == [
        "file: contains no contexts",
        "row 3: duplicate of row 2",
        'dialogue "x" (first in row 3): no row gives its dialogue_context',
        "row 3, column 'score': empty score",
        "row 7, column 'stage': unknown stage",
    ]
    assert str(error) == "\n".join(error.lines()) == "\n".join(str(p) for p in error.problems)


def test_problem_list_keeps_the_first_rows_and_counts_the_rest():
    problems = Problems()
    for row in range(500, 1, -1):  # found last row first
        problems.at_row(row, "bad")
    error = problems.error()
    assert error.total == 499
    assert [p.row for p in error.problems] == list(range(2, 2 + MAX_REPORTED_PROBLEMS))
    assert error.lines()[-1] == f"... and {499 - MAX_REPORTED_PROBLEMS} more"
    report = error.report("big.csv")
    assert report.startswith("Nothing was imported: 499 problem(s) in big.csv:\n  row 2: bad\n")
    assert report.endswith(f"\n  ... and {499 - MAX_REPORTED_PROBLEMS} more")


def test_raise_if_any_raises_the_format_error_only_with_problems():
    problems = Problems(MaterialsImportError)
    problems.raise_if_any()
    problems.add("file", "bad")
    with pytest.raises(MaterialsImportError) as info:
        problems.raise_if_any()
    assert isinstance(info.value, DataFileError)


@pytest.mark.parametrize(
    "source",
    [
        "\ufeffa,b\r\n",
        b"\xef\xbb\xbfa,b\r\n",
        io.BytesIO(b"a,b\r\n"),
        io.StringIO("a,b\r\n"),
    ],
    ids=["str-with-bom", "bytes-with-bom", "binary-file", "text-file"],
)
def test_read_text_accepts_text_bytes_and_files(source):
    problems = Problems()
    assert read_text(source, problems) == "a,b\r\n"
    assert not problems


def test_read_text_names_the_first_byte_that_is_not_utf8(tmp_path):
    problems = Problems()
    path = tmp_path / "latin.csv"
    path.write_bytes("abc,d\r\ncaf\u00e9\r\n".encode("latin-1"))
    assert read_text(path, problems) is None
    assert [str(p) for p in problems.shown()] == [
        "file: not UTF-8 text (byte 10): save it as UTF-8"
    ]


def test_csv_rows_are_numbered_as_a_spreadsheet_counts_them():
    problems = Problems()
    text = 'h1,h2\r\n\r\n"two\r\nlines",x\r\n,\r\nlast,y\r\n'
    assert list(CsvRecords(io.StringIO(text, newline=""), problems)) == [
        (1, ["h1", "h2"]),
        (3, ["two\r\nlines", "x"]),
        (5, ["last", "y"]),
    ]
    assert not problems


def test_header_check_names_missing_duplicated_and_ignored_columns():
    problems = Problems()
    header = header_check(
        1, [" a ", "", "notes", "b"], problems, required=("a",), optional=("b", "c")
    )
    assert header.positions == {"a": 0, "b": 3}
    assert header.ignored == ("(unnamed column 2)", "'notes'")
    assert not problems
    assert (
        header_check(2, ["a", "b", "b", "a", "a", "x", "x"], problems, required=("a", "c")) is None
    )
    assert [str(p) for p in problems.shown()] == [
        "row 2 (header): missing column(s): c",
        "row 2 (header): column 'a' appears 3 times",
        "row 2 (header): column 'b' appears 2 times",
        "row 2 (header): column 'x' appears 2 times",
    ]


def test_header_check_allows_repeated_unnamed_columns():
    problems = Problems()
    header = header_check(1, ["", "a", " ", ""], problems, required=("a",))
    assert header.positions == {"a": 1}
    assert not problems


# --------------------------------------------------------- duplicated columns, all formats


def test_materials_csv_with_a_duplicated_column_is_refused(study):
    rows = [
        ["annomi_dialogue_id", "stage", "dialogue_context", "reflection_source", "reflection",
         "reflection"],
        ["d1", "", '[{"client": "Hi."}]', "Human", "You say hi.", "Second text."],
        ["d1", "GPT-2 stage", "", "GPT-2", "Hello.", "Other text."],
    ]  # fmt: skip
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    with pytest.raises(MaterialsImportError) as info:
        materials_import(study=study, content=out.getvalue(), fmt="csv")
    assert [str(p) for p in info.value.problems] == [
        "row 1 (header): column 'reflection' appears 2 times"
    ]
    assert DialogueContext.objects.count() == Reflection.objects.count() == 0


def test_published_file_with_a_duplicated_column_is_refused(db):
    header = ",".join(PUBLISHED_COLUMNS) + ",reflection\r\n"
    with pytest.raises(AnnotationsImportError) as info:
        annotations_import(path_or_file=io.StringIO(header), study_slug="dup")
    assert [str(p) for p in info.value.problems] == [
        "row 1 (header): column 'reflection' appears 2 times"
    ]
    assert not Study.objects.filter(slug="dup").exists()


def test_scores_file_with_a_duplicated_column_is_refused(loaded_study):
    content = "stage,annomi_dialogue_id,reflection,evaluator,score,reflection\r\n"
    with pytest.raises(AutomaticScoresImportError) as info:
        automatic_scores_import(study=loaded_study, file=content)
    assert [str(p) for p in info.value.problems] == [
        "row 1 (header): column 'reflection' appears 2 times"
    ]
    assert not AutomaticScore.objects.exists()


MATERIALS_HEADER = "annomi_dialogue_id,stage,dialogue_context,reflection_source,reflection"
SCORES_HEADER = "stage,annomi_dialogue_id,reflection,evaluator,score"
DUPLICATED_NOTES = "row 1 (header): column 'notes' appears 2 times"


@pytest.mark.parametrize(
    "command, header, args",
    [
        ("import_materials", MATERIALS_HEADER, ["pilot"]),
        ("import_annotations", ",".join(PUBLISHED_COLUMNS), []),
        ("import_scores", SCORES_HEADER, ["pilot"]),
    ],
)
def test_commands_refuse_any_column_name_given_twice(loaded_study, tmp_path, command, header, args):
    """Even a column the import ignores: two columns of one name are a mistake in the
    file, and which one a reader takes is a guess."""
    path = tmp_path / "file.csv"
    path.write_text(f"{header},notes,notes\r\n")
    before = (DialogueContext.objects.count(), Study.objects.count())
    extra = ["--study", "copy"] if command == "import_annotations" else []
    with pytest.raises(CommandError) as info:
        call_command(command, *args, str(path), *extra, stdout=StringIO())
    assert str(info.value) == (
        f"Nothing was imported: 1 problem(s) in file.csv:\n  {DUPLICATED_NOTES}"
    )
    assert (DialogueContext.objects.count(), Study.objects.count()) == before
    assert not AutomaticScore.objects.exists()


@pytest.mark.parametrize(
    "url_name, header",
    [
        ("admin:studies_study_import_materials", MATERIALS_HEADER),
        ("admin:analysis_automaticscore_import", SCORES_HEADER),
    ],
)
def test_admin_uploads_refuse_any_column_name_given_twice(
    admin_client, loaded_study, url_name, header
):
    before = DialogueContext.objects.count()
    upload = SimpleUploadedFile("file.csv", f"{header},notes,notes\r\n".encode())
    page = admin_client.post(reverse(url_name, args=[loaded_study.pk]), {"file": upload})
    text = page.content.decode()
    assert "Nothing was imported: the file has 1 problem(s)" in text
    assert "column &#x27;notes&#x27; appears 2 times" in text
    assert DialogueContext.objects.count() == before
    assert not AutomaticScore.objects.exists()


def test_materials_csv_row_wider_than_the_header_is_refused(study):
    rows = [
        ["annomi_dialogue_id", "stage", "dialogue_context", "reflection_source", "reflection"],
        ["d1", "", '[{"client": "Hi."}]', "Human", "You say hi.", "surplus"],
    ]
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    with pytest.raises(MaterialsImportError) as info:
        materials_import(study=study, content=out.getvalue(), fmt="csv")
    assert "row 2: 6 cells but the header has 5 columns" in str(info.value)
    assert DialogueContext.objects.count() == 0


# ------------------------------------------------- one report: commands, admin and API


def many_bad_scores(study) -> str:
    rows = ["stage,annomi_dialogue_id,reflection,evaluator,score"]
    rows += [f"GPT-2 stage,dlg-1,No such text {n},METEOR,0.5" for n in range(60)]
    return "\r\n".join(rows) + "\r\n"


def test_commands_report_a_refused_file_the_same_way(loaded_study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(many_bad_scores(loaded_study))
    with pytest.raises(CommandError) as info:
        call_command("import_scores", "pilot", str(path), stdout=StringIO())
    lines = str(info.value).splitlines()
    assert lines[0] == "Nothing was imported: 60 problem(s) in scores.csv:"
    assert lines[1] == (
        "  row 2, column 'reflection': no reflection of dialogue \"dlg-1\" has this text"
    )
    assert lines[-1] == f"  ... and {60 - MAX_REPORTED_PROBLEMS} more"
    assert len(lines) == 1 + MAX_REPORTED_PROBLEMS + 1
    assert not AutomaticScore.objects.exists()

    bad = tmp_path / "published.csv"
    bad.write_text(",".join(PUBLISHED_COLUMNS[:-1]) + "\r\n")
    with pytest.raises(CommandError) as info:
        call_command("import_annotations", str(bad), "--study", "x", stdout=StringIO())
    assert str(info.value) == (
        "Nothing was imported: 1 problem(s) in published.csv:\n"
        "  row 1 (header): missing column(s): parroting"
    )
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_annotations", str(tmp_path / "nope.csv"), "--study", "x")
    assert not Study.objects.filter(slug="x").exists()


def test_admin_lists_the_first_problems_and_counts_the_rest(admin_client, loaded_study):
    url = reverse("admin:analysis_automaticscore_import", args=[loaded_study.pk])
    upload = SimpleUploadedFile("scores.csv", many_bad_scores(loaded_study).encode())
    page = admin_client.post(url, {"file": upload}).content.decode()
    assert "Nothing was imported: the file has 60 problem(s), listed below." in page
    assert "Problems found (60):" in page
    assert page.count("no reflection of dialogue") == MAX_REPORTED_PROBLEMS
    assert f"... and {60 - MAX_REPORTED_PROBLEMS} more" in page
    assert not AutomaticScore.objects.exists()


def test_admin_materials_upload_with_a_duplicated_column_is_refused(admin_client, study):
    header = "annomi_dialogue_id,stage,dialogue_context,reflection_source,reflection,stage\r\n"
    url = reverse("admin:studies_study_import_materials", args=[study.pk])
    upload = SimpleUploadedFile("m.csv", header.encode())
    page = admin_client.post(url, {"file": upload}).content.decode()
    assert "Nothing was imported: the file has 1 problem(s)" in page
    assert "column &#x27;stage&#x27; appears 2 times" in page
    assert Batch.objects.count() == DialogueContext.objects.count() == 0
