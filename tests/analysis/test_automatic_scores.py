"""Automatic-evaluator scores: the CSV import (analysis/importers.py), its command and
admin page, the table's constraints and the selector that hands scores to the report."""

import csv
import io
import json
import math
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.importers import AutomaticScoresImportError, automatic_scores_import
from analysis.models import AutomaticScore
from analysis.selectors.judgements import automatic_scores_frame
from studies.datafiles.materials import materials_import
from studies.models import BatchItem, Reflection, Role, Study
from tests.conftest import materials_doc
from tests.factories import StaffMemberFactory, StaffUserFactory, StudyFactory, user_with_role

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
STAGES = ("GPT-2 stage", "GPT-3 stage")
COLUMNS = ["stage", "annomi_dialogue_id", "reflection", "evaluator", "score"]


# --- helpers -------------------------------------------------------------------------


def human(i: int) -> str:
    return f"Problem {i} has been weighing on you."


def synthetic(stage: str, j: int, i: int) -> str:
    return f"{stage} candidate {j} for dialogue {i}."


def score_rows(evaluator: str = "METEOR") -> list[dict]:
    """One score per analysed item of ``loaded_study`` (3 dialogues × 2 stages × the
    human and two synthetic reflections = 18 rows). Row ``i`` is row ``i + 2``."""
    rows = []
    for i in (1, 2, 3):
        for s, stage in enumerate(STAGES):
            for n, text in enumerate((human(i), synthetic(stage, 1, i), synthetic(stage, 2, i))):
                rows.append(
                    {
                        "stage": stage,
                        "annomi_dialogue_id": f"dlg-{i}",
                        "reflection": text,
                        "evaluator": evaluator,
                        "score": f"{i / 10 + s / 100 + n / 1000:.3f}",
                    }
                )
    return rows


def to_csv(rows: list[dict], header=COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def row_of(index: int) -> str:
    return f"row {index + 2}"


def stored() -> list[tuple]:
    return sorted(
        AutomaticScore.objects.values_list(
            "study_id", "stage_id", "reflection_id", "evaluator", "score", "imported_at"
        )
    )


def rejected(study, content) -> list:
    """Import ``content``, expect AutomaticScoresImportError, check nothing changed."""
    before = stored()
    with pytest.raises(AutomaticScoresImportError) as excinfo:
        automatic_scores_import(study=study, file=content)
    assert stored() == before
    issues = excinfo.value.problems
    assert issues
    assert str(excinfo.value) == "\n".join(f"{i.where}: {i.message}" for i in issues)
    return issues


def only_issue(issues) -> tuple[str, str]:
    assert len(issues) == 1, issues
    return issues[0].where, issues[0].message


def attention_text(study, stage: str, dialogue: str) -> str:
    return Reflection.objects.get(
        kind=Reflection.Kind.ATTENTION_CHECK,
        batch_items__batch__stage__name=stage,
        batch_items__batch__stage__study=study,
        context__external_id=dialogue,
    ).text


@pytest.fixture
def scored_study(loaded_study):
    """``loaded_study`` with the 18 METEOR scores of ``score_rows()`` imported."""
    automatic_scores_import(study=loaded_study, file=to_csv(score_rows()))
    return loaded_study


# --- a clean import ------------------------------------------------------------------


def test_import_stores_one_score_per_row_against_the_named_item(loaded_study):
    summary = automatic_scores_import(study=loaded_study, file=to_csv(score_rows()).encode())
    assert (summary.created, summary.updated, summary.unchanged) == (18, 0, 0)
    assert str(summary) == "18 scores created, 0 updated, 0 unchanged."
    score = AutomaticScore.objects.select_related("stage", "reflection__context").get(
        stage__name="GPT-3 stage", reflection__text=synthetic("GPT-3 stage", 2, 2)
    )
    assert score.study == loaded_study
    assert score.reflection.context.external_id == "dlg-2"
    assert score.reflection.kind == Reflection.Kind.SYNTHETIC
    assert (score.evaluator, score.score) == ("METEOR", pytest.approx(0.212))
    assert score.imported_at is not None


def test_the_human_reflection_takes_one_score_per_stage(scored_study):
    reflection = Reflection.objects.get(context__study=scored_study, text=human(1))
    scores = AutomaticScore.objects.filter(reflection=reflection).order_by("stage__position")
    assert [(s.stage.name, s.score) for s in scores] == [
        ("GPT-2 stage", pytest.approx(0.1)),
        ("GPT-3 stage", pytest.approx(0.11)),
    ]


def test_reimporting_the_same_file_changes_nothing(scored_study):
    before = stored()
    summary = automatic_scores_import(study=scored_study, file=to_csv(score_rows()))
    assert (summary.created, summary.updated, summary.unchanged) == (0, 0, 18)
    assert summary.changed is False
    assert str(summary) == "Nothing to import: the study already holds exactly these 18 scores."
    assert stored() == before


def test_reimporting_a_corrected_file_replaces_only_the_changed_scores(scored_study):
    untouched = AutomaticScore.objects.exclude(reflection__text=human(3)).order_by("pk")
    before = list(untouched.values_list("pk", "score", "imported_at"))
    rows = score_rows()
    rows[12]["score"] = "0.999"  # dlg-3, GPT-2 stage, human
    rows[15]["score"] = "-2.5"  # dlg-3, GPT-3 stage, human
    summary = automatic_scores_import(study=scored_study, file=to_csv(rows))
    assert (summary.created, summary.updated, summary.unchanged) == (0, 2, 16)
    assert AutomaticScore.objects.count() == 18
    corrected = AutomaticScore.objects.filter(reflection__text=human(3)).order_by("stage__position")
    assert [s.score for s in corrected] == [0.999, -2.5]
    assert all(s.imported_at > before[0][2] for s in corrected)
    assert list(untouched.values_list("pk", "score", "imported_at")) == before


def test_a_second_evaluator_adds_scores_and_keeps_the_first(scored_study):
    rows = score_rows("LLM judge")[:4]
    summary = automatic_scores_import(study=scored_study, file=to_csv(rows))
    assert (summary.created, summary.updated, summary.unchanged) == (4, 0, 0)
    counts = dict(
        AutomaticScore.objects.values_list("evaluator").annotate(n=Count("pk")).order_by()
    )
    assert counts == {"METEOR": 18, "LLM judge": 4}


def test_scores_the_file_leaves_out_are_kept(scored_study):
    automatic_scores_import(study=scored_study, file=to_csv(score_rows()[:2]))
    assert AutomaticScore.objects.count() == 18


def test_extra_columns_are_ignored_and_named_in_the_summary(loaded_study):
    rows = [dict(r, model_version="v2", notes="x") for r in score_rows()[:3]]
    header = ["notes", *COLUMNS, "model_version"]
    summary = automatic_scores_import(study=loaded_study, file=to_csv(rows, header))
    assert summary.created == 3
    assert summary.ignored_columns == ("'notes'", "'model_version'")
    assert str(summary).endswith(" Ignored columns: 'notes', 'model_version'.")


def test_columns_may_come_in_any_order(loaded_study):
    header = list(reversed(COLUMNS))
    summary = automatic_scores_import(study=loaded_study, file=to_csv(score_rows(), header))
    assert summary.created == 18


def test_utf8_with_byte_order_mark_and_spaces_around_cells_are_accepted(loaded_study):
    rows = [
        {k: f"  {v} " for k, v in row.items()} for row in score_rows()[:3]
    ]  # as a spreadsheet may pad them
    content = ("\ufeff" + to_csv(rows)).encode("utf-8")
    assert automatic_scores_import(study=loaded_study, file=content).created == 3
    assert set(AutomaticScore.objects.values_list("evaluator", flat=True)) == {"METEOR"}


def test_an_open_file_is_accepted(loaded_study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(to_csv(score_rows()), encoding="utf-8")
    with path.open("rb") as handle:
        assert automatic_scores_import(study=loaded_study, file=handle).created == 18


def test_blank_lines_are_skipped_but_still_counted_in_row_numbers(loaded_study):
    lines = to_csv(score_rows()[:3]).splitlines()
    lines.insert(2, "")  # between rows 2 and 3 of the file
    lines.insert(3, ",,,,")
    lines[5] = lines[5].replace(",METEOR,", ",,")  # now row 6
    issues = rejected(loaded_study, "\n".join(lines) + "\n")
    assert only_issue(issues) == ("row 6, column 'evaluator'", "empty evaluator name")


def test_scores_may_be_negative_integers_or_in_exponent_notation(loaded_study):
    rows = score_rows()[:3]
    for row, value in zip(rows, ("-3", "4", "1.5e-3"), strict=True):
        row["score"] = value
    automatic_scores_import(study=loaded_study, file=to_csv(rows))
    assert sorted(AutomaticScore.objects.values_list("score", flat=True)) == [-3.0, 0.0015, 4.0]


def test_an_evaluator_name_of_exactly_100_characters_is_accepted(loaded_study):
    rows = score_rows("E" * 100)[:1]
    automatic_scores_import(study=loaded_study, file=to_csv(rows))
    assert AutomaticScore.objects.get().evaluator == "E" * 100


def test_import_reads_the_study_once_whatever_the_size_of_the_file(
    loaded_study, django_assert_max_num_queries
):
    with CaptureQueriesContext(connection) as small:
        automatic_scores_import(study=loaded_study, file=to_csv(score_rows("A")[:2]))
    rows = score_rows("B")
    rows[:2] = score_rows("A")[:2]
    rows[0]["score"] = "7"  # one update among the creations
    with CaptureQueriesContext(connection) as large:
        summary = automatic_scores_import(study=loaded_study, file=to_csv(rows))
    assert (summary.created, summary.updated, summary.unchanged) == (16, 1, 1)
    # The larger file adds one bulk UPDATE, nothing per row.
    assert len(large) <= len(small) + 1
    with django_assert_max_num_queries(12):
        automatic_scores_import(study=loaded_study, file=to_csv(score_rows("C")))


# --- bad input: every problem named with its row, nothing written ----------------------


def test_unknown_stage(scored_study):
    rows = score_rows()
    rows[4]["stage"] = "GPT-9 stage"
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (
        f"{row_of(4)}, column 'stage'",
        "unknown stage 'GPT-9 stage' (the study has: GPT-2 stage, GPT-3 stage)",
    )


def test_unknown_dialogue_id(scored_study):
    rows = score_rows()
    rows[7]["annomi_dialogue_id"] = "dlg-77"
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (
        f"{row_of(7)}, column 'annomi_dialogue_id'",
        'unknown dialogue id "dlg-77": no context of the study has it',
    )


def test_a_dialogue_of_another_study_is_unknown(scored_study):
    other = StudyFactory()
    other.stages.create(position=1, name="GPT-2 stage")
    issues = rejected(other, to_csv(score_rows()[:1]))
    assert only_issue(issues) == (
        "row 2, column 'annomi_dialogue_id'",
        'unknown dialogue id "dlg-1": no context of the study has it',
    )


def test_reflection_text_not_in_the_dialogue(scored_study):
    rows = score_rows()
    rows[2]["reflection"] = "A reflection nobody wrote."
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (
        f"{row_of(2)}, column 'reflection'",
        'no reflection of dialogue "dlg-1" has this text',
    )


def test_reflection_of_the_dialogue_but_of_another_stage(scored_study):
    rows = score_rows()
    rows[1]["reflection"] = synthetic("GPT-3 stage", 1, 1)  # row 1 is in the GPT-2 stage
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (
        f"{row_of(1)}, column 'reflection'",
        "this reflection of dialogue \"dlg-1\" is not in its batch for stage 'GPT-2 stage'",
    )


def test_dialogue_without_a_batch_in_the_stage(study):
    doc = materials_doc(n_contexts=2)
    doc["contexts"][1]["synthetic"] = [
        s for s in doc["contexts"][1]["synthetic"] if s["stage"] == "GPT-2 stage"
    ]
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    rows = [r for r in score_rows() if r["annomi_dialogue_id"] == "dlg-2"]
    issues = rejected(study, to_csv(rows[3:4]))  # the human reflection, GPT-3 stage
    assert only_issue(issues) == (
        "row 2, column 'reflection'",
        "dialogue \"dlg-2\" has no batch in stage 'GPT-3 stage'",
    )


@pytest.mark.parametrize("stage", STAGES)
def test_attention_check_items_are_refused(scored_study, stage):
    rows = score_rows()
    rows[0].update(stage=stage, reflection=attention_text(scored_study, stage, "dlg-1"))
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (
        "row 2, column 'reflection'",
        "an attention-check item: it is not analysed, so it takes no score",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "empty score"),
        ("   ", "empty score"),
        ("high", "not a number: 'high'"),
        ("0,75", "not a number: '0,75' (use a dot as the decimal separator)"),
        ("NaN", "not a finite number: 'NaN'"),
        ("nan", "not a finite number: 'nan'"),
        ("inf", "not a finite number: 'inf'"),
        ("-Infinity", "not a finite number: '-Infinity'"),
        ("1e400", "not a finite number: '1e400'"),
        ("9" * 400, f"not a finite number: '{'9' * 40}...'"),
    ],
)
def test_score_that_is_not_a_finite_number(scored_study, value, message):
    rows = score_rows()
    rows[5]["score"] = value
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (f"{row_of(5)}, column 'score'", message)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("stage", "empty stage"),
        ("annomi_dialogue_id", "empty dialogue id"),
        ("reflection", "empty text"),
        ("evaluator", "empty evaluator name"),
    ],
)
def test_empty_cell(scored_study, column, message):
    rows = score_rows()
    rows[3][column] = " "
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (f"{row_of(3)}, column '{column}'", message)


def test_evaluator_name_longer_than_100_characters(loaded_study):
    issues = rejected(loaded_study, to_csv(score_rows("E" * 101)[:2]))
    assert [(i.where, i.message) for i in issues] == [
        ("row 2, column 'evaluator'", "longer than 100 characters"),
        ("row 3, column 'evaluator'", "longer than 100 characters"),
    ]


@pytest.mark.parametrize("column", ["stage", "annomi_dialogue_id", "reflection", "evaluator"])
def test_nul_character_is_refused(scored_study, column):
    rows = score_rows()
    rows[6][column] = rows[6][column][:3] + "\x00" + rows[6][column][3:]
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (f"{row_of(6)}, column '{column}'", "contains a NUL character")


def test_nul_character_in_the_score_is_not_a_number(scored_study):
    rows = score_rows()
    rows[6]["score"] = "0.5\x00"
    issues = rejected(scored_study, to_csv(rows))
    assert only_issue(issues) == (
        f"{row_of(6)}, column 'score'",
        "not a number: '0.5\\x00'",
    )


def test_unpaired_surrogate_in_text_given_as_str_is_refused(loaded_study):
    rows = score_rows("METEOR\ud800")[:1]
    issues = rejected(loaded_study, to_csv(rows))
    assert only_issue(issues) == (
        "row 2, column 'evaluator'",
        "contains an unpaired surrogate (\\ud800)",
    )


def test_duplicate_score_in_the_file_names_both_rows(scored_study):
    rows = score_rows()
    rows.append(dict(rows[4], score="0.5"))  # row 20 repeats row 6 with another value
    rows.append(dict(rows[0]))  # row 21 repeats row 2 exactly
    issues = rejected(scored_study, to_csv(rows))
    assert [(i.where, i.message) for i in issues] == [
        (
            "row 20",
            "row 6 already gives a score for this stage, dialogue, reflection and evaluator",
        ),
        (
            "row 21",
            "row 2 already gives a score for this stage, dialogue, reflection and evaluator",
        ),
    ]


def test_the_same_item_with_two_evaluators_is_not_a_duplicate(loaded_study):
    rows = [score_rows("METEOR")[0], score_rows("meteor")[0]]
    assert automatic_scores_import(study=loaded_study, file=to_csv(rows)).created == 2


@pytest.mark.parametrize(
    ("dropped", "message"),
    [
        (["score"], "missing column(s): score"),
        (["stage", "annomi_dialogue_id"], "missing column(s): stage, annomi_dialogue_id"),
    ],
)
def test_missing_column(scored_study, dropped, message):
    header = [c for c in COLUMNS if c not in dropped]
    issues = rejected(scored_study, to_csv(score_rows(), header))
    assert only_issue(issues) == ("row 1 (header)", message)


def test_a_column_given_twice_is_refused(scored_study):
    content = to_csv(score_rows()).replace("score\r\n", "score,score\r\n", 1)
    issues = rejected(scored_study, content)
    assert only_issue(issues) == ("row 1 (header)", "column 'score' appears 2 times")


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf", b"\n\n", b" \r\n,,,\r\n"])
def test_empty_file(scored_study, content):
    issues = rejected(scored_study, content)
    assert only_issue(issues) == (
        "file",
        "is empty: expected a header row with stage, annomi_dialogue_id, reflection, "
        "evaluator, score",
    )


def test_file_with_only_a_header(scored_study):
    issues = rejected(scored_study, to_csv([]))
    assert only_issue(issues) == ("file", "contains no scores, only a header")


def test_row_with_more_cells_than_the_header(scored_study):
    content = to_csv(score_rows()[:3]).splitlines()
    content[2] += ",surplus"
    issues = rejected(scored_study, "\n".join(content))
    assert only_issue(issues) == ("row 3", "6 cells but the header has 5 columns")


def test_row_with_fewer_cells_reports_the_missing_ones_as_empty(scored_study):
    content = to_csv(score_rows()[:3]).splitlines()
    content[3] = content[3].rsplit(",", 1)[0]  # row 4 without its score
    issues = rejected(scored_study, "\n".join(content))
    assert only_issue(issues) == ("row 4, column 'score'", "empty score")


def test_non_utf8_file_is_refused(loaded_study):
    rows = score_rows("Évaluateur")[:2]
    content = to_csv(rows).encode("latin-1")
    issues = rejected(loaded_study, content)
    assert only_issue(issues) == (
        "file",
        f"not UTF-8 text (byte {content.index('É'.encode('latin-1'))}): save it as UTF-8",
    )


def test_study_without_stages_is_refused(db):
    study = StudyFactory()
    issues = rejected(study, to_csv(score_rows()[:1]))
    assert [(i.where, i.message) for i in issues] == [
        ("study", f'"{study.slug}" has no stages; add them in the admin first'),
        (
            "row 2, column 'annomi_dialogue_id'",
            'unknown dialogue id "dlg-1": no context of the study has it',
        ),
    ]


def test_every_problem_is_reported_at_once_and_good_rows_are_not_written(loaded_study):
    rows = score_rows()
    rows[0]["score"] = "x"
    rows[5]["stage"] = "Stage Z"
    rows[9]["reflection"] = "Not there."
    rows[17]["evaluator"] = ""
    issues = rejected(loaded_study, to_csv(rows))
    assert [i.where for i in issues] == [
        "row 2, column 'score'",
        "row 7, column 'stage'",
        "row 11, column 'reflection'",
        "row 19, column 'evaluator'",
    ]
    assert AutomaticScore.objects.count() == 0


def test_a_bad_row_keeps_a_corrected_value_from_being_written(scored_study):
    rows = score_rows()
    rows[0]["score"] = "0.777"  # would update
    rows[1]["score"] = "?"
    rejected(scored_study, to_csv(rows))
    assert AutomaticScore.objects.get(reflection__text=human(1), stage__position=1).score == 0.1


# --- the table itself -------------------------------------------------------------------


def _score(study, **overrides) -> AutomaticScore:
    reflection = Reflection.objects.get(context__study=study, text=human(1))
    values = {
        "study": study,
        "stage": study.stages.get(position=1),
        "reflection": reflection,
        "evaluator": "METEOR",
        "score": 0.5,
        "imported_at": "2026-01-01T00:00:00Z",
        **overrides,
    }
    return AutomaticScore(**values)


@pytest.mark.parametrize(
    "overrides",
    [{"evaluator": ""}, {"score": math.inf}, {"score": -math.inf}, {"score": math.nan}],
    ids=["empty-evaluator", "inf", "-inf", "nan"],
)
def test_the_database_refuses_what_the_import_refuses(loaded_study, overrides):
    with pytest.raises(IntegrityError), transaction.atomic():
        _score(loaded_study, **overrides).save()


def test_the_database_refuses_a_second_score_for_the_same_item_and_evaluator(loaded_study):
    _score(loaded_study).save()
    with pytest.raises(IntegrityError), transaction.atomic():
        _score(loaded_study, score=0.6).save()


def test_model_validation_explains_an_infinite_score(loaded_study):
    with pytest.raises(ValidationError) as info:
        _score(loaded_study, score=math.inf).full_clean()
    assert "A score must be a finite number (not NaN or infinity)." in info.value.messages


def test_a_materials_reimport_that_drops_a_reflection_drops_its_scores(scored_study):
    doc = materials_doc()
    doc["contexts"][0]["synthetic"] = [
        s for s in doc["contexts"][0]["synthetic"] if s["text"] != synthetic("GPT-2 stage", 2, 1)
    ]
    materials_import(study=scored_study, content=json.dumps(doc), fmt="json")
    assert AutomaticScore.objects.count() == 17
    assert not AutomaticScore.objects.filter(reflection__text=synthetic("GPT-2 stage", 2, 1))


# --- the management command -------------------------------------------------------------


def test_command_imports_and_prints_the_summary(loaded_study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(to_csv(score_rows()), encoding="utf-8")
    out = StringIO()
    call_command("import_scores", "pilot", str(path), stdout=out)
    assert out.getvalue().strip() == "18 scores created, 0 updated, 0 unchanged."
    assert AutomaticScore.objects.filter(study=loaded_study).count() == 18
    out = StringIO()
    call_command("import_scores", "pilot", str(path), stdout=out)
    assert "Nothing to import" in out.getvalue()


def test_command_lists_every_problem_and_writes_nothing(loaded_study, tmp_path):
    rows = score_rows()
    rows[2]["score"] = "NaN"
    rows[3]["annomi_dialogue_id"] = "dlg-9"
    path = tmp_path / "bad.csv"
    path.write_text(to_csv(rows), encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("import_scores", "pilot", str(path))
    assert info.value.returncode == 1
    assert str(info.value) == (
        "Nothing was imported: 2 problem(s) in bad.csv:\n"
        "  row 4, column 'score': not a finite number: 'NaN'\n"
        "  row 5, column 'annomi_dialogue_id': unknown dialogue id \"dlg-9\": "
        "no context of the study has it"
    )
    assert AutomaticScore.objects.count() == 0


def test_command_unknown_study_or_file(loaded_study, tmp_path):
    with pytest.raises(CommandError, match='No study with slug "nope"'):
        call_command("import_scores", "nope", str(EXAMPLES / "scores.csv"))
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_scores", "pilot", str(tmp_path / "missing.csv"))


# --- the admin ------------------------------------------------------------------------------


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def import_url(study) -> str:
    return reverse("admin:analysis_automaticscore_import", args=[study.pk])


def upload(rows, name="scores.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, to_csv(rows).encode())


def test_study_page_links_to_the_scores_import(staff_client, loaded_study):
    page = staff_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    assert f'href="{import_url(loaded_study)}"' in page.content.decode()
    assert "Import automatic scores" in page.content.decode()


def test_admin_upload_imports_and_redirects_with_the_summary(staff_client, loaded_study):
    response = staff_client.post(import_url(loaded_study), {"file": upload(score_rows())})
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:studies_study_change", args=[loaded_study.pk])
    page = staff_client.get(response["Location"]).content.decode()
    assert "Imported scores.csv: 18 scores created, 0 updated, 0 unchanged." in page
    assert AutomaticScore.objects.filter(study=loaded_study).count() == 18


def test_admin_upload_of_a_bad_file_lists_problems_by_row_and_writes_nothing(
    staff_client, loaded_study
):
    rows = score_rows()
    rows[1]["stage"] = "GPT-9 stage"
    rows[4]["score"] = "inf"
    response = staff_client.post(import_url(loaded_study), {"file": upload(rows)})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was imported: the file has 2 problem(s)" in page
    assert "<strong>row 3, column &#x27;stage&#x27;</strong>: unknown stage" in page
    assert "<strong>row 6, column &#x27;score&#x27;</strong>: not a finite number" in page
    assert AutomaticScore.objects.count() == 0


def test_admin_upload_rejects_other_file_types(staff_client, loaded_study):
    response = staff_client.post(
        import_url(loaded_study), {"file": upload(score_rows(), name="scores.xlsx")}
    )
    assert "Upload a .csv file." in response.content.decode()
    assert AutomaticScore.objects.count() == 0


def test_admin_upload_page_for_an_unknown_study_is_404(staff_client, db):
    assert (
        staff_client.get(reverse("admin:analysis_automaticscore_import", args=[999])).status_code
        == 404
    )


def test_non_staff_users_are_sent_to_the_login_page(client, loaded_study):
    user = get_user_model().objects.create_user("annotator-ish", password="x")
    client.force_login(user)
    response = client.post(import_url(loaded_study), {"file": upload(score_rows())})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert AutomaticScore.objects.count() == 0


@pytest.mark.parametrize("role", [Role.VIEWER, Role.CODER], ids=str)
def test_a_role_that_may_not_run_analyses_is_refused_the_import(client, loaded_study, role):
    client.force_login(user_with_role(loaded_study, role))
    assert client.get(import_url(loaded_study)).status_code == 403
    response = client.post(import_url(loaded_study), {"file": upload(score_rows())})
    assert response.status_code == 403
    assert "does not allow this: it takes a role that may run and download analyses" in (
        response.content.decode()
    )
    assert AutomaticScore.objects.count() == 0


def test_model_permissions_without_a_role_do_not_reach_the_import(client, loaded_study):
    user = StaffMemberFactory()
    user.user_permissions.set(
        Permission.objects.filter(
            codename__in=["change_study", "add_automaticscore", "change_automaticscore"]
        )
    )
    client.force_login(user)
    response = client.post(import_url(loaded_study), {"file": upload(score_rows())})
    assert response.status_code == 404
    assert AutomaticScore.objects.count() == 0


@pytest.mark.parametrize("role", [Role.ANALYST, Role.COLLABORATOR], ids=str)
def test_a_role_that_runs_analyses_may_import(client, loaded_study, role):
    client.force_login(user_with_role(loaded_study, role))
    response = client.post(import_url(loaded_study), {"file": upload(score_rows())})
    assert response.status_code == 302
    assert AutomaticScore.objects.count() == 18


def test_score_list_and_detail_render_read_only(staff_client, scored_study):
    page = staff_client.get(
        reverse("admin:analysis_automaticscore_changelist"), {"study__id__exact": scored_study.pk}
    )
    assert page.status_code == 200
    assert "18 automatic scores" in page.content.decode()
    score = AutomaticScore.objects.first()
    detail = staff_client.get(reverse("admin:analysis_automaticscore_change", args=[score.pk]))
    assert detail.status_code == 200
    assert 'name="score"' not in detail.content.decode()
    assert staff_client.get(reverse("admin:analysis_automaticscore_add")).status_code == 403


def test_a_wrong_evaluators_scores_can_be_deleted_in_the_admin(staff_client, scored_study):
    automatic_scores_import(study=scored_study, file=to_csv(score_rows("BLUE")[:3]))
    typo = AutomaticScore.objects.filter(evaluator="BLUE")
    response = staff_client.post(
        reverse("admin:analysis_automaticscore_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": list(typo.values_list("pk", flat=True)),
            "post": "yes",
        },
    )
    assert response.status_code == 302
    assert not typo.exists()
    assert AutomaticScore.objects.count() == 18


# --- the selector ---------------------------------------------------------------------------


def test_frame_has_one_row_per_score_in_one_query(scored_study, django_assert_num_queries):
    StudyFactory()  # another study's scores never leak in
    with django_assert_num_queries(1):
        frame = automatic_scores_frame(study_id=scored_study.pk)
    assert list(frame.columns) == ["stage", "reflection_id", "evaluator", "score"]
    assert len(frame) == 18
    assert list(frame["stage"].unique()) == ["GPT-2 stage", "GPT-3 stage"]
    reflection = Reflection.objects.get(
        context__study=scored_study, text=synthetic("GPT-3 stage", 1, 3)
    )
    row = frame[frame["reflection_id"] == reflection.pk].iloc[0]
    assert (row["stage"], row["evaluator"], row["score"]) == ("GPT-3 stage", "METEOR", 0.311)


def test_frame_of_a_study_without_scores_is_empty_with_its_columns(loaded_study):
    frame = automatic_scores_frame(study_id=loaded_study.pk)
    assert frame.empty
    assert list(frame.columns) == ["stage", "reflection_id", "evaluator", "score"]


def test_frame_leaves_out_scores_of_reflections_no_longer_in_their_stage(scored_study):
    moved = Reflection.objects.get(context__study=scored_study, text=synthetic("GPT-2 stage", 2, 2))
    BatchItem.objects.filter(reflection=moved).delete()
    frame = automatic_scores_frame(study_id=scored_study.pk)
    assert len(frame) == 17
    assert moved.pk not in set(frame["reflection_id"])


# --- the documented example -----------------------------------------------------------------


def test_example_scores_import_into_the_demo_study(db):
    call_command("load_demo", "--force", stdout=StringIO())
    demo = Study.objects.get(slug="demo")
    summary = automatic_scores_import(study=demo, file=(EXAMPLES / "scores.csv").read_bytes())
    assert (summary.created, summary.updated, summary.ignored_columns) == (10, 0, ())
    frame = automatic_scores_frame(study_id=demo.pk)
    assert len(frame) == 10
    assert frame.groupby("evaluator").size().to_dict() == {"BERTScore": 6, "LLM judge": 4}
    out = StringIO()
    call_command("import_scores", "demo", str(EXAMPLES / "scores.csv"), stdout=out)
    assert "Nothing to import" in out.getvalue()


def test_scores_match_texts_kept_exactly_by_the_published_import(db):
    """import_annotations stores texts exactly (spaces, a leading "="); a scores file
    giving those texts, or their spreadsheet-safe form, matches them."""
    import io

    from analysis.importers import automatic_scores_import
    from analysis.models import AutomaticScore
    from studies.datafiles.published import annotations_import
    from studies.models import Study

    context = '[{""therapist"": ""Hi.""}, {""client"": ""Fine.""}]'
    header = (
        "annomi_dialogue_id,stage,dialogue_context,reflection_source,reflection,annotator,"
        "coherent_and_context_consistent,dialogue_contradicting,malformed,off_topic,"
        "on_topic_but_unverifiable,parroting\r\n"
    )
    published = header + (
        f'd1,S1,"{context}",Human,"  So you feel ok. ",Expert 1,Yes,,,,,\r\n'
        f'd1,S1,"{context}",GPT-2,\'=SUM(A1),Expert 1,No,,Yes,,,\r\n'
    )
    annotations_import(
        path_or_file=io.StringIO(published), study_slug="exact", spreadsheet_safe=True
    )
    study = Study.objects.get(slug="exact")
    scores = (
        "stage,annomi_dialogue_id,reflection,evaluator,score\r\n"
        'S1,d1,"  So you feel ok. ",METEOR,0.5\r\n'
        "S1,d1,'=SUM(A1),METEOR,0.1\r\n"
    )
    automatic_scores_import(study=study, file=scores.encode())
    stored = dict(AutomaticScore.objects.values_list("reflection__text", "score"))
    assert stored == {"  So you feel ok. ": 0.5, "=SUM(A1)": 0.1}
    # The exact text matches too, and a stored text that really starts with an
    # apostrophe is matched as it is (the faithful import keeps it).
    annotations_import(path_or_file=io.StringIO(published), study_slug="literal")
    literal = Study.objects.get(slug="literal")
    automatic_scores_import(
        study=literal,
        file=(
            "stage,annomi_dialogue_id,reflection,evaluator,score\r\n"
            "S1,d1,'=SUM(A1),METEOR,0.2\r\nS1,d1,'=SUM(A1),LLM,0.3\r\n"
        ),
    )
    assert dict(
        AutomaticScore.objects.filter(study=literal).values_list("evaluator", "reflection__text")
    ) == {"METEOR": "'=SUM(A1)", "LLM": "'=SUM(A1)"}
    automatic_scores_import(
        study=study,
        file="stage,annomi_dialogue_id,reflection,evaluator,score\r\nS1,d1,=SUM(A1),LLM,0.4\r\n",
    )
    assert AutomaticScore.objects.get(study=study, evaluator="LLM").reflection.text == "=SUM(A1)"
