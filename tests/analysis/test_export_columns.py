"""The full export's per-annotator quality columns: the dashboard's quality panel
(the report's ``quality``, one computation) on every row of the annotator, checked
against the report and against a plain computation from the ORM rows."""

import csv
import io

import pytest

from analysis.export_columns import QUALITY_KEYS, study_annotator_quality
from analysis.services import analysis_run_compute
from studies.exports import ExportOptions, export_csv_chunks, export_header
from studies.models import Batch, Reflection
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_reject,
    assignment_submit,
    judgement_record,
)
from tests.analysis.report.test_quality import FAST, plain_quality, timed_study  # noqa: F401

pytestmark = pytest.mark.django_db
COLUMNS = [f"annotator_{key}" for key in QUALITY_KEYS]


@pytest.fixture
def timed(request):
    """The quality report's study: item times of 1–5 s, two stages days apart."""
    return request.getfixturevalue("timed_study")


def _rows(study, **options) -> list[dict]:
    text = "".join(export_csv_chunks(study=study, options=ExportOptions(fmt="full", **options)))
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _number(cell: str) -> float | None:
    return float(cell) if cell else None


def test_every_row_carries_its_annotator_s_quality_as_the_dashboard_shows_it(timed):
    header = export_header(study=timed, options=ExportOptions(fmt="full"))
    after = header.index("crowd_outcome") + 1
    assert header[after : after + len(COLUMNS)] == COLUMNS
    report = analysis_run_compute(study=timed, parameters=FAST).result["quality"]
    plain = plain_quality(timed)
    rows = _rows(timed)
    assert rows and {r["annotator"] for r in rows} == {name for _, name in plain}
    for row in rows:
        key = (row["annotator_group"], row["annotator"])
        shown = report[key[0]][key[1]]
        assert int(row["annotator_n_batches"]) == shown["n_batches"] == plain[key]["n_batches"]
        assert int(row["annotator_attention_failed"]) == shown["attention_failed"]
        for name in ("median_seconds", "fast_share", "yes_rate", "agreement_with_group"):
            expected = plain[key][name]
            got = _number(row[f"annotator_{name}"])
            assert got == pytest.approx(shown[name], rel=1e-5), (key, name)
            assert got == pytest.approx(expected, rel=1e-5), (key, name)
        assert row["annotator_flags"] == ";".join(shown["flags"])


def test_the_numbers_describe_the_whole_study_whatever_the_filters(timed):
    whole = {r["annotator"]: [r[c] for c in COLUMNS] for r in _rows(timed)}
    experts = _rows(timed, groups=("Expert",), stages=("GPT-2 stage",))
    assert experts and {r["annotator_group"] for r in experts} == {"Expert"}
    for row in experts:
        assert [row[c] for c in COLUMNS] == whole[row["annotator"]]


def test_an_annotator_without_counted_work_has_empty_cells_and_other_formats_none(
    loaded_study,
):
    """A batch that passed its attention check and was rejected later is exported on
    request, but counts for nothing: its annotator has no quality numbers."""
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    batch = Batch.objects.filter(stage__study=loaded_study, stage__position=1).first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    for rid in assignment.order:
        reflection = Reflection.objects.get(pk=rid)
        judgement_record(
            assignment=assignment,
            reflection=reflection,
            answer=Answer(False, frozenset({"off_topic"}))
            if reflection.kind == Reflection.Kind.ATTENTION_CHECK
            else Answer(True, empathy=4),
        )
    assignment_submit(assignment=assignment)
    assignment_reject(assignment=assignment, reason="Copied answers.")
    assert study_annotator_quality(study=loaded_study) == {}
    assert _rows(loaded_study) == []  # not exported by default
    rows = _rows(loaded_study, include_rejected=True)
    assert len(rows) == len(assignment.order)
    assert all(row[c] == "" for row in rows for c in COLUMNS)
    published = export_header(study=loaded_study, options=ExportOptions(fmt="published"))
    assert not set(COLUMNS) & set(published)
