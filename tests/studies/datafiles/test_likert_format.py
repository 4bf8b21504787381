"""The published Likert format: exported from a study's Likert stages, recognised by
its columns on import, and a faithful interchange format (import, then export, gives
the rows back cell for cell); each bad cell named with its row and column, nothing
written; a study with both instruments exported as a zip of one file per instrument."""

import csv
import io
import json
import re
import zipfile
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from studies.columns import LIKERT_COLUMNS
from studies.exports import ExportOptions, export_instruments, export_rows
from studies.models import (
    Judgement,
    LikertDimension,
    LikertRating,
    Reflection,
    Stage,
    Study,
)
from tests.studies.likert_fixtures import answer_both_stages

pytestmark = pytest.mark.django_db


def context_cell(*turns: tuple[str, str]) -> str:
    return json.dumps([{role: text} for role, text in turns], ensure_ascii=False)


CONTEXT_A = context_cell(("therapist", "-So, how was the week?"), ("client", '=Fine, "mostly".'))
CONTEXT_B = context_cell(("therapist", "@Your sister?"), ("client", "+1: ça va 🙂"))
TEXTS = {
    "-12": (CONTEXT_A, {"Human": "- You feel fine, mostly.", "=GPT-2": "=SUM(A1:A9)"}),
    "=3+4": (CONTEXT_B, {"Human": "@sister: support.", "=GPT-2": "  spaces kept  "}),
}
# name, scale, the ratings given in turn ("" with cannot_judge Yes)
DIMENSIONS = (
    ("fluency", "5", ["1", "5", "3", ""]),
    ("warmth", "slider", ["0", "100", "", "57"]),
    ("detail", "11", ["11", "10", "1", "2"]),
)
STAGES = ("=Ratings one", "Ratings two")
ANNOTATORS = (("-Expert 1", "Experts"), ("-Expert 2", "Experts"), ("@Lay 1", "Lay people"))


def likert_rows(*, group: bool = True) -> list[list[str]]:
    rows = [[*LIKERT_COLUMNS, *(["annotator_group"] if group else [])]]
    n = 0
    for stage in STAGES:
        for dialogue, (context, texts) in TEXTS.items():
            for annotator, group_name in ANNOTATORS:
                for source, text in texts.items():
                    for name, scale, ratings in DIMENSIONS:
                        rating = ratings[n % len(ratings)]
                        n += 1
                        cannot = "Yes" if rating == "" else "No"
                        row = [dialogue, stage, context, source, text, annotator, name, scale]
                        row += [rating, cannot, *([group_name] if group else [])]
                        rows.append(row)
    return rows


def to_csv(rows) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def import_rows(tmp_path, rows, slug="copy", *args) -> str:
    path = tmp_path / "likert.csv"
    path.write_bytes(to_csv(rows).encode("utf-8"))
    out = StringIO()
    call_command("import_annotations", str(path), "--study", slug, *args, stdout=out)
    return out.getvalue()


def export(slug: str, *args: str) -> str:
    out = StringIO()
    call_command("export_annotations", slug, *args, stdout=out)
    return out.getvalue()


def test_import_then_export_gives_back_the_same_rows_cell_for_cell(tmp_path):
    rows = likert_rows()
    summary = import_rows(tmp_path, rows)
    assert "with 72 Likert ratings" in summary and "24 judgements" in summary
    exported = parse(export("copy"))
    assert exported[0] == rows[0]
    assert exported[1:] == rows[1:]  # the export's order is the file's here


def test_the_documented_example_round_trips_byte_for_byte(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[3] / "docs" / "examples" / "likert.csv"
    call_command("import_annotations", str(example), "--study", "example", stdout=StringIO())
    target = tmp_path / "again.csv"
    call_command("export_annotations", "example", "--out", str(target), stderr=StringIO())
    assert target.read_bytes() == example.read_bytes()


def test_an_imported_likert_file_is_a_study_of_likert_stages(tmp_path):
    import_rows(tmp_path, likert_rows())
    study = Study.objects.get(slug="copy")
    stages = list(study.stages.order_by("position"))
    assert [s.name for s in stages] == list(STAGES)
    assert {s.instrument for s in stages} == {Stage.Instrument.LIKERT}
    dimensions = LikertDimension.objects.filter(stage=stages[0]).order_by("position")
    assert [(d.name, d.points, d.offers_cannot_judge) for d in dimensions] == [
        ("fluency", 5, True),
        ("warmth", None, True),
        ("detail", 11, False),
    ]
    assert dimensions[0].labels == ["1", "", "", "", "5"] and dimensions[1].labels == ["0", "100"]
    assert set(study.groups.values_list("name", "pseudonym_prefix")) == {
        ("Experts", "-Expert"),
        ("Lay people", "@Lay"),
    }
    judgements = Judgement.objects.filter(assignment__stage__study=study)
    assert judgements.count() == 24 and not judgements.filter(coherent__isnull=False).exists()
    assert LikertRating.objects.filter(judgement__in=judgements).count() == 72
    assert LikertRating.objects.filter(judgement__in=judgements, cannot_judge=True).count() == 12


def test_groups_named_as_their_prefix_need_no_group_column(tmp_path):
    rows = likert_rows(group=False)
    import_rows(tmp_path, rows)
    exported = parse(export("copy"))
    assert exported[0] == list(LIKERT_COLUMNS)
    assert exported[1:] == rows[1:]
    assert "annotator_group" in parse(export("copy", "--extended"))[0]


def test_a_spreadsheet_safe_file_round_trips(tmp_path):
    import_rows(tmp_path, likert_rows())
    safe = export("copy", "--spreadsheet-safe")
    assert "'=SUM(A1:A9)" in safe
    path = tmp_path / "safe.csv"
    path.write_text(safe, encoding="utf-8", newline="")
    call_command(
        "import_annotations", str(path), "--study", "again", "--spreadsheet-safe", stdout=StringIO()
    )
    assert parse(export("again")) == parse(export("copy"))


def _with(rows, n: int, column: str, value: str) -> list[list[str]]:
    rows = [list(r) for r in rows]
    rows[n][rows[0].index(column)] = value
    return rows


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ((1, "scale", "12"), "row 2, column 'scale': expected the number of points (2 to 11) or slider, not '12'"),
        ((4, "scale", "7"), "row 5, column 'scale': the dimension \"fluency\" of stage \"=Ratings one\" has the scale 5 in row 2: a dimension has one scale"),
        ((1, "rating", "6"), "row 2, column 'rating': expected a whole number from 1 to 5, not '6'"),
        ((2, "rating", "101"), "row 3, column 'rating': expected a whole number from 0 to 100, not '101'"),
        ((1, "rating", "high"), "row 2, column 'rating': expected a whole number from 1 to 5, not 'high'"),
        ((1, "cannot_judge", "yes"), "row 2, column 'cannot_judge': expected Yes or No, not 'yes'"),
        ((1, "cannot_judge", "Yes"), "row 2, column 'rating': a rating is only given when cannot_judge is No"),
        ((1, "dimension", "Fluency!"), "row 2, column 'dimension': 'Fluency!' is not a dimension name"),
        ((2, "dimension", "fluency"), "row 3: duplicate of row 2: the same stage, dialogue, reflection annotator and dimension"),
    ],
    ids=["points", "scale-changes", "above-points", "above-slider", "not-a-number",
         "cannot-judge-case", "both", "name", "duplicate"],
)  # fmt: skip
def test_a_bad_cell_is_named_and_nothing_is_written(tmp_path, change, message):
    rows = _with(likert_rows(), *change)
    if change[1] == "dimension" and change[2] == "fluency":
        rows[2][rows[0].index("scale")] = "5"
        rows[2][rows[0].index("rating")] = "4"
        rows[2][rows[0].index("cannot_judge")] = "No"
    with pytest.raises(CommandError) as raised:
        import_rows(tmp_path, rows)
    assert message in str(raised.value)
    assert not Study.objects.filter(slug="copy").exists()


@pytest.fixture
def mixed_study(loaded_study):
    return answer_both_stages(loaded_study)


def test_the_likert_rows_of_a_live_study(mixed_study):
    second = mixed_study.stages.get(position=2)
    options = ExportOptions(stages=(second.name,))
    assert export_instruments(study=mixed_study, options=options) == ["likert"]
    rows = list(export_rows(study=mixed_study, options=options))
    assert rows[0] == list(LIKERT_COLUMNS)
    body = rows[1:]
    candidates = Reflection.objects.filter(batch_items__batch__stage=second).exclude(
        kind=Reflection.Kind.ATTENTION_CHECK
    )
    first_batch = second.batches.first()
    n = candidates.filter(batch_items__batch=first_batch).count()
    assert len(body) == 2 * n  # two dimensions; the attention check left out
    assert {(r[6], r[7], r[8], r[9]) for r in body} == {
        ("fluency", "5", "4", "No"),
        ("warmth", "slider", "", "Yes"),
    }


def test_a_study_with_both_instruments_exports_a_zip(mixed_study, tmp_path):
    with pytest.raises(CommandError, match=re.escape("pass --out PATH.zip, or --stage")):
        export(mixed_study.slug)
    target = tmp_path / "both.zip"
    call_command("export_annotations", mixed_study.slug, "--out", str(target), stderr=StringIO())
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        assert names == ["pilot-annotations.csv", "pilot-annotations-likert.csv"]
        likert = parse(archive.read(names[1]).decode("utf-8"))
        coherence = parse(archive.read(names[0]).decode("utf-8"))
    assert likert[0] == list(LIKERT_COLUMNS) and len(likert) > 1
    assert coherence[0][6] == "coherent_and_context_consistent" and len(coherence) > 1
    # One instrument's stages: one file, as before.
    first = mixed_study.stages.get(position=1)
    assert parse(export(mixed_study.slug, "--stage", first.name)) == coherence


def test_the_download_of_both_instruments_is_a_zip(admin_client, mixed_study):
    url = reverse("studies:export", args=[mixed_study.slug])
    response = admin_client.get(url, {"file": "xlsx"})
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="pilot-annotations.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["pilot-annotations.xlsx", "pilot-annotations-likert.xlsx"]


def test_an_answer_that_leaves_a_dimension_unrated_is_refused(tmp_path):
    rows = likert_rows()
    del rows[2]  # row 3: the first annotator's warmth of the first reflection
    with pytest.raises(CommandError) as raised:
        import_rows(tmp_path, rows)
    assert (
        "row 2: -Expert 1 rates this reflection on detail, fluency but not on warmth: in "
        'stage "=Ratings one" each candidate is rated on every dimension'
    ) in str(raised.value)
    assert not Study.objects.filter(slug="copy").exists()
