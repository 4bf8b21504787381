"""The typed files for publishing (JSON Lines, Parquet): each cell read as its column's
kind, nothing lost against the CSV, from every download path (the function, the admin's
URL, the API, the command)."""

import io
import json
from datetime import UTC, datetime
from io import StringIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from studies.datafiles.typed import (
    PARQUET_CONTENT_TYPE,
    TypedCellError,
    column_kinds,
    jsonl_chunks,
    parquet_write,
    typed_rows,
)
from studies.exports import (
    ExportOptions,
    export_column_kinds,
    export_file_write,
    export_rows,
    export_text_chunks,
    rows_file_write,
)
from studies.models import Role
from tests.factories import user_with_role
from tests.studies.likert_fixtures import answer_both_stages
from tests.studies.typed_helpers import assert_same_as_csv, parquet_frame

pytestmark = pytest.mark.django_db

HAND = [
    ["reflection_id", "coherent_and_context_consistent", "empathy", "seconds_spent",
     "judged_at", "reflection", "malformed"],
    ["7", "Yes", "4", "2.5", "2026-11-28T10:00:01.250000Z", "You feel torn.", "Yes"],
    ["8", "No", "", "", "", "", ""],
]  # fmt: skip


def test_each_cell_is_read_as_its_columns_kind():
    header, *rows = typed_rows(HAND)
    assert header == HAND[0]
    assert rows == [
        [7, True, 4, 2.5, datetime(2026, 11, 28, 10, 0, 1, 250000, tzinfo=UTC),
         "You feel torn.", True],
        [8, False, None, None, None, "", None],
    ]  # fmt: skip


def test_a_caller_names_more_kinds_and_others_are_text():
    assert column_kinds(["n_raters", "annotator", "rank"], {"n_raters": "integer"}) == [
        "integer",
        "string",
        "integer",
    ]
    with pytest.raises(ValueError, match="Unknown column kinds: date"):
        column_kinds(["x"], {"x": "date"})


def test_a_cell_not_of_its_kind_is_named_by_row_and_column():
    with pytest.raises(TypedCellError, match='Row 2, column empathy: "four" is not a whole number'):
        list(typed_rows([["empathy"], ["four"]]))
    with pytest.raises(TypedCellError, match='column is_right: "maybe" is not Yes, No or empty'):
        list(typed_rows([["is_right"], ["maybe"]]))
    with pytest.raises(TypedCellError, match="Row 2 has 1 cells for 2 columns"):
        list(typed_rows([["a", "b"], ["x"]]))


def test_jsonl_writes_one_typed_object_per_line():
    text = "".join(jsonl_chunks(HAND))
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 3
    assert json.loads(lines[0]) == {
        "reflection_id": 7, "coherent_and_context_consistent": True, "empathy": 4,
        "seconds_spent": 2.5, "judged_at": "2026-11-28T10:00:01.250000Z",
        "reflection": "You feel torn.", "malformed": True,
    }  # fmt: skip
    assert json.loads(lines[1]) == {
        "reflection_id": 8, "coherent_and_context_consistent": False, "empathy": None,
        "seconds_spent": None, "judged_at": None, "reflection": "", "malformed": None,
    }  # fmt: skip
    assert list(json.loads(lines[0])) == HAND[0]  # keys in column order


def test_parquet_keeps_the_kinds_even_without_rows():
    target = io.BytesIO()
    assert parquet_write(HAND, target=target) == 2
    schema = pq.read_schema(io.BytesIO(target.getvalue()))
    assert [str(t) for t in schema.types] == [
        "int64", "bool", "int64", "double", "timestamp[us, tz=UTC]", "string", "bool",
    ]  # fmt: skip
    table = pq.read_table(io.BytesIO(target.getvalue()))
    assert table.column("empathy").to_pylist() == [4, None]
    assert table.column("judged_at").to_pylist()[0] == datetime(
        2026, 11, 28, 10, 0, 1, 250000, tzinfo=UTC
    )
    empty = io.BytesIO()
    assert parquet_write(HAND[:1], target=empty) == 0
    read = pq.read_table(io.BytesIO(empty.getvalue()))
    assert read.num_rows == 0 and read.schema == schema.remove_metadata()


def test_parquet_writes_a_row_group_at_a_time(monkeypatch):
    monkeypatch.setattr("studies.datafiles.typed.ROW_GROUP_ROWS", 2)
    rows = [["rank"], *[[str(n)] for n in range(5)]]
    target = io.BytesIO()
    assert parquet_write(rows, target=target) == 5
    meta = pq.ParquetFile(io.BytesIO(target.getvalue())).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [2, 2, 1]


# ------------------------------------------------------------- against the CSV rows


@pytest.mark.parametrize(
    "options",
    [{}, {"extended": True}, {"fmt": "full"}],
    ids=["published", "extended", "full"],
)
def test_jsonl_and_parquet_read_by_pandas_equal_the_csv_rows(shared_annotated_study, options):
    study = shared_annotated_study
    rows = [list(r) for r in export_rows(study=study, options=ExportOptions(**options))]
    assert len(rows) > 30
    jsonl = "".join(export_text_chunks(study=study, options=ExportOptions(file="jsonl", **options)))
    from_jsonl = pd.read_json(io.StringIO(jsonl), lines=True, dtype=False, precise_float=True)
    assert_same_as_csv(from_jsonl, rows)
    target = io.BytesIO()
    export_file_write(study=study, options=ExportOptions(file="parquet", **options), target=target)
    from_parquet = pd.read_parquet(io.BytesIO(target.getvalue()), dtype_backend="pyarrow")
    assert_same_as_csv(from_parquet, rows)
    schema = pq.read_schema(io.BytesIO(target.getvalue()))
    types = dict(zip(schema.names, schema.types, strict=True))
    assert types["coherent_and_context_consistent"] == pa.bool_()
    assert types["off_topic"] == pa.bool_()  # a category column
    assert types["reflection"] == pa.string()
    if options.get("fmt") == "full":
        assert types["reflection_id"] == pa.int64()
        assert types["seconds_spent"] == pa.float64()
        assert types["judged_at"] == pa.timestamp("us", tz="UTC")
        assert types["annotator_yes_rate"] == pa.float64()
    assert export_column_kinds(study=study, options=ExportOptions(**options))["off_topic"] == (
        "boolean"
    )


def test_the_admin_url_the_api_and_the_command_give_the_same_files(
    shared_annotated_study, client, tmp_path
):
    study = shared_annotated_study
    expected = [list(r) for r in export_rows(study=study, options=ExportOptions(fmt="full"))]
    client.force_login(user_with_role(study, Role.ANALYST))
    url = reverse("studies:export", args=[study.slug])
    response = client.get(url, {"file": "parquet", "format": "full"})
    assert response.status_code == 200
    assert response["Content-Type"] == PARQUET_CONTENT_TYPE
    assert f'filename="{study.slug}-annotations-full.parquet"' in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    assert_same_as_csv(pd.read_parquet(io.BytesIO(body), dtype_backend="pyarrow"), expected)

    response = client.get(url, {"file": "jsonl", "format": "full"})
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert f'filename="{study.slug}-annotations-full.jsonl"' in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode()
    assert text == "".join(
        export_text_chunks(study=study, options=ExportOptions(fmt="full", file="jsonl"))
    )

    api = f"/api/studies/{study.slug}/export/"
    response = client.get(
        api, {"file": "parquet", "format": "full"}, HTTP_ACCEPT=PARQUET_CONTENT_TYPE
    )
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == body

    out = tmp_path / "full.parquet"
    call_command(
        "export_annotations", study.slug, "--format", "full", "--file", "parquet",
        "--out", str(out), stderr=StringIO(),
    )  # fmt: skip
    assert_same_as_csv(pd.read_parquet(out, dtype_backend="pyarrow"), expected)
    stdout = StringIO()
    call_command("export_annotations", study.slug, "--format", "full", "--file", "jsonl",
                 stdout=stdout)  # fmt: skip
    assert stdout.getvalue() == text


def test_parquet_needs_a_file_and_one_kind_of_file(shared_annotated_study, tmp_path):
    slug = shared_annotated_study.slug
    with pytest.raises(CommandError, match='"parquet" is a binary file: pass --out PATH'):
        call_command("export_annotations", slug, "--file", "parquet", stdout=StringIO())
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command(
            "export_annotations", slug, "--excel", "--file", "jsonl", "--out",
            str(tmp_path / "x.jsonl"), stdout=StringIO(),
        )  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_the_admin_export_page_offers_the_typed_files(shared_annotated_study, admin_client):
    page = admin_client.get(reverse("admin:studies_study_export", args=[shared_annotated_study.pk]))
    text = page.content.decode()
    for value in ("jsonl", "parquet"):
        assert text.count(f'name="file" value="{value}"') == 3  # annotations, answers, items
    assert "JSON Lines (.jsonl), for publishing" in text


def test_a_likert_stages_ratings_keep_their_kinds(loaded_study):
    study = answer_both_stages(loaded_study)
    options = {"stages": ("GPT-3 stage",)}
    rows = [list(r) for r in export_rows(study=study, options=ExportOptions(**options))]
    assert rows[0][6:10] == ["dimension", "scale", "rating", "cannot_judge"]
    target = io.BytesIO()
    export_file_write(study=study, options=ExportOptions(file="parquet", **options), target=target)
    frame = parquet_frame(target.getvalue())
    assert_same_as_csv(frame, rows)
    assert str(frame["rating"].dtype) == "int64[pyarrow]"
    assert str(frame["cannot_judge"].dtype) == "bool[pyarrow]"
    assert set(frame["cannot_judge"]) == {True, False}


def test_a_cell_not_of_its_kind_refuses_the_parquet_file_with_a_message():
    target = io.BytesIO()
    with pytest.raises(ValidationError) as info:
        rows_file_write([["empathy"], ["four"]], file="parquet", target=target, sheet_name="x")
    assert info.value.message_dict == {
        "file": ['Row 2, column empathy: "four" is not a whole number. Download the CSV instead.']
    }
