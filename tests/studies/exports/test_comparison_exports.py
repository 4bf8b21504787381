"""The published pairwise and ranking formats: one row per (pair, annotator) with the
candidate shown on the left as ``a``, and one per (candidate, annotator) with its
rank; attention checks left out; a study of several instruments exported as a zip of
one file per instrument, by the command and the API alike."""

import csv
import io
import zipfile

import pytest

from studies.columns import PAIRWISE_COLUMNS, RANKING_COLUMNS
from studies.exports import (
    ExportOptions,
    export_filename,
    export_instruments,
    export_rows,
    export_zip_write,
)
from studies.models import Judgement, Reflection, Stage
from tests.studies.comparison_fixtures import answered_comparisons
from tests.studies.typed_helpers import assert_same_as_csv, jsonl_frame, parquet_frame

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(study):
    return answered_comparisons(study)


def rows_of(study, instrument, **options) -> list[list[str]]:
    return list(export_rows(study=study, options=ExportOptions(**options), instrument=instrument))


def test_pairwise_rows_show_the_sides_as_the_annotator_saw_them(answered):
    header, *rows = rows_of(answered, Stage.Instrument.PAIRWISE)
    # The groups follow from the pseudonyms: no group column unless asked.
    assert header == list(PAIRWISE_COLUMNS)
    extended = rows_of(answered, Stage.Instrument.PAIRWISE, extended=True)
    assert extended[0] == [*PAIRWISE_COLUMNS, "annotator_group"]
    assert [r[:-1] for r in extended[1:]] == rows
    # 3 annotators × 5 pairs (the attention pair left out).
    assert len(rows) == 15
    texts = dict(Reflection.objects.values_list("text", "kind"))
    for row in rows:
        record = dict(zip(header, row, strict=True))
        assert Reflection.Kind.ATTENTION_CHECK not in (
            texts[record["reflection_a"]],
            texts[record["reflection_b"]],
        )
        judgement = Judgement.objects.get(
            assignment__annotator__pseudonym=record["annotator"],
            reflection__text__in=[record["reflection_a"], record["reflection_b"]],
            opponent__text__in=[record["reflection_a"], record["reflection_b"]],
        )
        left = judgement.opponent if judgement.shown_swapped else judgement.reflection
        assert (record["source_a"], record["reflection_a"]) == (left.source, left.text)
        assert record["choice"] == judgement.choice in ("A", "B", "Tie")
        assert record["stage"] == "GPT-2 stage" and record["annomi_dialogue_id"] == "dlg-1"
    # Ordered by annotator, then the pair's texts: the same order whatever the ids.
    annotators = [r[3] for r in rows]
    assert annotators == sorted(annotators, key=lambda p: (p.startswith("Layperson"), p))


def test_ranking_rows_give_competition_ranks_without_the_check(answered):
    header, *rows = rows_of(answered, Stage.Instrument.RANKING)
    assert header == list(RANKING_COLUMNS)
    assert len(rows) == 12  # 3 annotators × 4 candidates (the off-topic one left out)
    by_annotator: dict[str, list[int]] = {}
    for row in rows:
        by_annotator.setdefault(row[5], []).append(int(row[6]))
    assert sorted(sorted(ranks) for ranks in by_annotator.values()) == [
        [1, 2, 2, 4],
        [1, 2, 3, 4],
        [1, 2, 3, 4],
    ]


def test_a_study_of_three_instruments_exports_a_zip_of_one_file_each(answered, tmp_path):
    options = ExportOptions(file="csv")
    assert export_instruments(study=answered, options=options) == ["pairwise", "ranking"]
    assert export_filename(study=answered, options=options) == "pilot-annotations.zip"
    target = tmp_path / "all.zip"
    export_zip_write(study=answered, options=options, target=target)
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        assert names == ["pilot-annotations-pairwise.csv", "pilot-annotations-ranking.csv"]
        pairwise = list(csv.reader(io.StringIO(archive.read(names[0]).decode())))
    assert pairwise == rows_of(answered, Stage.Instrument.PAIRWISE)
    # One stage's: its instrument's file alone.
    one = ExportOptions(stages=("GPT-3 stage",))
    assert export_filename(study=answered, options=one) == "pilot-annotations-ranking.csv"


def test_the_zip_of_typed_files_holds_each_instruments_rows(answered, tmp_path):
    options = ExportOptions(file="parquet")
    target = tmp_path / "all.zip"
    export_zip_write(study=answered, options=options, target=target)
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        assert names == ["pilot-annotations-pairwise.parquet", "pilot-annotations-ranking.parquet"]
        frames = [parquet_frame(archive.read(name)) for name in names]
    assert_same_as_csv(frames[0], rows_of(answered, Stage.Instrument.PAIRWISE))
    assert_same_as_csv(frames[1], rows_of(answered, Stage.Instrument.RANKING))
    assert str(frames[1]["rank"].dtype) == "int64[pyarrow]"
    export_zip_write(study=answered, options=ExportOptions(file="jsonl"), target=target)
    with zipfile.ZipFile(target) as archive:
        text = archive.read("pilot-annotations-ranking.jsonl").decode()
    assert_same_as_csv(jsonl_frame(text), rows_of(answered, Stage.Instrument.RANKING))


def test_a_source_filter_keeps_pairs_of_the_chosen_sources_only(answered):
    _, *rows = rows_of(answered, Stage.Instrument.PAIRWISE, sources=("Human", "GPT-3"))
    assert rows and all({r[4], r[6]} == {"Human", "GPT-3"} for r in rows)
    _, *ranked = rows_of(answered, Stage.Instrument.RANKING, sources=("GPT-3",))
    assert {r[3] for r in ranked} == {"GPT-3"}
