"""The published CSV is a faithful interchange format: a file with exactly the
exported columns, imported with ``import_annotations`` and exported with
``export_annotations --format published``, comes back row for row and cell for cell,
texts included (those a spreadsheet would take for a formula too)."""

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from studies.datafiles.published import PUBLISHED_COLUMNS
from studies.models import Judgement, Reflection, Study

pytestmark = pytest.mark.django_db


def context_cell(*turns: tuple[str, str]) -> str:
    """The dialogue_context cell as the export writes it (one-key turns)."""
    return json.dumps([{role: text} for role, text in turns], ensure_ascii=False)


# Transcribed speech often starts with "-"; the rest start with every other formula
# trigger, or carry quotes, commas, line breaks, apostrophes and non-ASCII text.
CONTEXT_A = context_cell(
    ("therapist", "-So, how was the week?"),
    ("client", '=Honestly? "Fine", I guess,\nmostly.'),
)
CONTEXT_B = context_cell(
    ("therapist", "@You mentioned your sister."),
    ("client", "+1 on that: ça va, Schwester, 妹妹 🙂"),
)
TEXTS_A = {
    "Human": "- You feel the week was fine, mostly.",
    "-GPT-2": "=SUM(A1:A9)",
    "@model": '+ "Fine", you say, and\nyet something is off.',
    "Vendor, Inc.": "'=already escaped by someone",
}
TEXTS_B = {
    "Human": "@sister: you want her support.",
    "-GPT-2": "  -leading and trailing spaces are kept  ",
    "@model": "'-- an apostrophe before a dash",
    "Vendor, Inc.": "Ünïcödé, עברית and 中文, all kept.",
}
STAGES = ("=Stage one", "-Stage two, revised")
ANNOTATORS = ("-Expert 1", "-Expert 2", "@Lay 1")
ANSWERS = (  # coherent, then the five category cells
    ("Yes", "", "", "", "", ""),
    ("No", "", "Yes", "", "", ""),
    ("No", "Yes", "", "Yes", "", "Yes"),
    ("No", "", "", "", "", ""),
)


def published_rows() -> list[list[str]]:
    rows = [list(PUBLISHED_COLUMNS)]
    n = 0
    for stage in STAGES:
        for dialogue, context, texts in (("-12", CONTEXT_A, TEXTS_A), ("=3+4", CONTEXT_B, TEXTS_B)):
            for annotator in ANNOTATORS:
                for source, text in texts.items():
                    answer = ANSWERS[n % len(ANSWERS)]
                    n += 1
                    rows.append([dialogue, stage, context, source, text, annotator, *answer])
    return rows


def to_csv(rows: list[list[str]]) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def export(slug: str, *args: str) -> str:
    out = StringIO()
    call_command("export_annotations", slug, "--format", "published", *args, stdout=out)
    return out.getvalue()


def test_import_then_export_gives_back_the_same_rows_cell_for_cell(tmp_path):
    rows = published_rows()
    assert sum(1 for r in rows[1:] for cell in r if cell[:1] in "-=+@") > len(rows)  # fixture
    path = tmp_path / "published.csv"
    path.write_bytes(to_csv(rows).encode("utf-8"))
    call_command("import_annotations", str(path), "--study", "copy", stdout=StringIO())

    exported = parse(export("copy"))
    assert exported[0] == rows[0]
    assert sorted(exported[1:]) == sorted(rows[1:])


def test_import_keeps_texts_as_written(tmp_path):
    path = tmp_path / "published.csv"
    path.write_text(to_csv(published_rows()), encoding="utf-8")
    call_command("import_annotations", str(path), "--study", "copy", stdout=StringIO())
    study = Study.objects.get(slug="copy")
    stored = set(Reflection.objects.filter(context__study=study).values_list("text", flat=True))
    assert stored == {*TEXTS_A.values(), *TEXTS_B.values()}
    assert set(study.contexts.values_list("external_id", flat=True)) == {"-12", "=3+4"}
    assert list(study.stages.order_by("position").values_list("name", flat=True)) == list(STAGES)
    turns = study.contexts.get(external_id="-12").turns
    assert turns[1] == {"role": "client", "text": '=Honestly? "Fine", I guess,\nmostly.'}
    assert Judgement.objects.filter(assignment__stage__study=study).count() == 48


def test_spreadsheet_safe_round_trip_gives_back_the_exact_texts(tmp_path):
    path = tmp_path / "published.csv"
    path.write_text(to_csv(published_rows()), encoding="utf-8")
    call_command("import_annotations", str(path), "--study", "copy", stdout=StringIO())

    safe = export("copy", "--spreadsheet-safe")
    safe_rows = parse(safe)
    by_source = {r[3]: r for r in safe_rows[1:]}
    assert by_source["'-GPT-2"][0] in ("'-12", "'=3+4")
    assert by_source["'-GPT-2"][1].startswith("'")  # stage names too
    assert "'=SUM(A1:A9)" in {r[4] for r in safe_rows[1:]}
    assert "''=already escaped by someone" in {r[4] for r in safe_rows[1:]}
    assert all(not cell.startswith(("=", "+", "-", "@")) for r in safe_rows for cell in r)

    safe_path = tmp_path / "safe.csv"
    safe_path.write_text(safe, encoding="utf-8")
    call_command(
        "import_annotations",
        str(safe_path),
        "--study",
        "again",
        "--spreadsheet-safe",
        stdout=StringIO(),
    )
    assert sorted(parse(export("again"))) == sorted(published_rows())


def test_the_documented_example_round_trips_byte_for_byte(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[3] / "docs" / "examples" / "published.csv"
    call_command("import_annotations", str(example), "--study", "example", stdout=StringIO())
    target = tmp_path / "again.csv"
    call_command("export_annotations", "example", "--out", str(target), stderr=StringIO())
    assert sorted(target.read_bytes().splitlines()) == sorted(example.read_bytes().splitlines())
    study = Study.objects.get(slug="example")
    assert study.contexts.count() == 2 and study.annotators.count() == 2


# --- descriptions (two-phase studies) -----------------------------------------------------

DESCRIPTIONS = (
    "",  # a Yes
    '-It says "never", the client said "sometimes".',
    "=Not what the client said,\nat all 🙃",
    "لا علاقة له بالحوار",  # a No with no category, only a description
)


def described_rows() -> list[list[str]]:
    """``published_rows`` plus the ``error_description`` column, last."""
    rows = published_rows()
    out = [[*rows[0], "error_description"]]
    for n, row in enumerate(rows[1:]):
        out.append([*row, DESCRIPTIONS[n % len(DESCRIPTIONS)]])
    return out


@pytest.mark.parametrize("safe", [False, True], ids=["exact", "spreadsheet-safe"])
def test_descriptions_round_trip_cell_for_cell(tmp_path, safe):
    rows = described_rows()
    path = tmp_path / "described.csv"
    path.write_text(to_csv(rows), encoding="utf-8")
    call_command("import_annotations", str(path), "--study", "copy", stdout=StringIO())
    study = Study.objects.get(slug="copy")
    stored = Judgement.objects.filter(assignment__stage__study=study)
    assert stored.exclude(error_description="").count() == 36
    only_text = stored.filter(error_description=DESCRIPTIONS[3])
    assert only_text.count() == 12
    assert set(only_text.values_list("coherent", "error_flags")) == {(False, 0)}
    # The stages had categories and descriptions: they ask for both.
    assert set(study.stages.values_list("no_answer", flat=True)) == {"both"}
    exported = parse(export("copy", *(["--spreadsheet-safe"] if safe else [])))
    assert exported[0] == rows[0]
    if not safe:
        assert sorted(exported[1:]) == sorted(rows[1:])
        return
    assert all(not cell.startswith(("=", "+", "-", "@")) for r in exported for cell in r)
    again = tmp_path / "safe.csv"
    again.write_text(to_csv(exported), encoding="utf-8")
    call_command(
        "import_annotations", str(again), "--study", "again", "--spreadsheet-safe",
        stdout=StringIO(),
    )  # fmt: skip
    assert sorted(parse(export("again"))[1:]) == sorted(rows[1:])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (1, "a description is only given when coherent_and_context_consistent is No"),
        (2, "2,001 characters; at most 2,000 are allowed"),
    ],
)
def test_bad_descriptions_are_refused_and_nothing_is_written(tmp_path, row, message):
    rows = described_rows()
    rows[row][-1] = "A description on a Yes." if row == 1 else "x" * 2001
    assert rows[1][6] == "Yes" and rows[2][6] == "No"  # the fixture's answers
    path = tmp_path / "bad.csv"
    path.write_text(to_csv(rows), encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        call_command("import_annotations", str(path), "--study", "copy", stdout=StringIO())
    assert message in str(caught.value)
    assert not Study.objects.filter(slug="copy").exists()


def test_full_export_ends_with_the_description(tmp_path):
    path = tmp_path / "described.csv"
    path.write_text(to_csv(described_rows()), encoding="utf-8")
    call_command("import_annotations", str(path), "--study", "copy", stdout=StringIO())
    out = StringIO()
    call_command("export_annotations", "copy", "--format", "full", stdout=out)
    full = parse(out.getvalue())
    assert full[0][-1] == "error_description"
    assert sorted({r[-1] for r in full[1:]}) == sorted(DESCRIPTIONS)
