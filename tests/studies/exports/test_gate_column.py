"""The exports say which gate let each item in: a ``gate`` column on the rows of a
gated stage (empty on the others), and in the full export when it was decided; the
import reads such a file and says the imported study has no gates."""

import csv
import io
from datetime import timedelta

import pytest

from studies.datafiles.published import annotations_import
from studies.exports import ExportOptions, export_csv_chunks
from studies.models import (
    AnnotatorGroup,
    ErrorCategory,
    Judgement,
    LikertDimension,
    Stage,
    StageGate,
    Study,
)
from studies.protocol import (
    GATE_LIKERT_MEAN_AT_LEAST,
    GATE_MAJORITIES_DIFFER,
    GATE_MAJORITY_CATEGORY,
    GATE_MAJORITY_COHERENT,
    GATE_MAJORITY_INCOHERENT,
    GATE_NOT_UNANIMOUS,
    GATE_SCORE_AT_LEAST,
)
from tests.analysis.report.test_gated import expert_answers
from tests.studies.gate_fixtures import T0, batch_of, gated, items_of, lay_judge  # noqa: F401
from tests.studies.services.test_assignments import consented

GOOD = "Lay stage: Layperson's majority said Yes"


def rows(study, **options) -> list[list[str]]:
    text = "".join(export_csv_chunks(study=study, options=ExportOptions(**options)))
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.fixture
def judged(gated):
    """dlg-1 judged by the three laypeople (items with 3, 2 and 1 Yes of 3), so the
    human reflection and c1 enter "Good reflection"; the expert finds the human one good."""
    laypeople = consented(gated, "Layperson", count=3)
    for n, person in enumerate(laypeople):
        lay_judge(person, batch_of(gated, 1, "dlg-1"), n)
    human = items_of(batch_of(gated, 1, "dlg-1"))[0]
    (expert,) = consented(gated, "Expert")
    expert_answers(expert, {human.text}, T0 + timedelta(hours=1))
    return gated


def test_the_published_export_says_which_gate_let_each_item_in(judged):
    header, *body = rows(judged)
    assert header[-1] == "gate"
    stage = header.index("stage")
    gates = {(row[stage], row[-1]) for row in body}
    assert gates == {("Lay stage", ""), ("Good reflection", GOOD)}
    good = [row for row in body if row[stage] == "Good reflection"]
    assert len(good) == 2  # the two items the lay majority found coherent
    # Extended: the gate comes after the extended columns.
    header, *_ = rows(judged, extended=True)
    assert header[-4:] == ["annotator_group", "most_evident_error", "empathy", "gate"]


def test_an_export_of_ungated_stages_has_no_gate_column(judged):
    header, *body = rows(judged, stages=("Lay stage",))
    assert "gate" not in header
    assert len(body) == 3 * 3  # three laypeople, three items each (the check left out)


def test_the_full_export_says_when_the_gate_let_the_item_in(judged):
    header, *body = rows(judged, fmt="full")
    stage, kind = header.index("stage"), header.index("reflection_kind")
    gate, decided = header.index("gate"), header.index("gate_decided_at")
    assert decided == gate + 1
    cells = {(row[stage], row[kind], row[gate], row[decided]) for row in body}
    # The third layperson submitted at T0 + 5 minutes: dlg-1 was decided then.
    at = (T0 + timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    assert ("Good reflection", "human", GOOD, at) in cells
    assert ("Good reflection", "attention_check", GOOD, "") in cells  # not a decided item
    assert {c[2:] for c in cells if c[0] == "Lay stage"} == {("", "")}


def test_the_import_reads_a_gated_export_and_says_it_has_no_gates(judged):
    text = "".join(export_csv_chunks(study=judged, options=ExportOptions()))
    summary = annotations_import(path_or_file=io.StringIO(text), study_slug="copy")
    assert "Ignored columns: 'gate'." in str(summary)
    assert "an imported study has no gates" in str(summary)
    copy = Study.objects.get(slug="copy")
    assert not StageGate.objects.filter(stage__study=copy).exists()
    assert Judgement.objects.filter(assignment__stage__study=copy).count() == 9 + 2


@pytest.mark.parametrize(
    ("rule", "given", "described"),
    [
        (GATE_MAJORITY_COHERENT, {}, "Lay: Laypeople's majority said Yes"),
        (
            GATE_MAJORITY_INCOHERENT,
            {"min_votes": 2},
            "Lay: Laypeople's majority said No (at least 2 of its raters)",
        ),
        (GATE_MAJORITY_CATEGORY, {"category": True}, "Lay: Laypeople's majority flagged Parroting"),
        (
            GATE_SCORE_AT_LEAST,
            {"threshold": 2.0},
            "Lay: at least 2 of Laypeople's answers were Yes",
        ),
        (GATE_NOT_UNANIMOUS, {}, "Lay: Laypeople's raters were not unanimous"),
        (
            GATE_MAJORITIES_DIFFER,
            {"other_group": True},
            "Lay: Laypeople's and Experts' majorities differ",
        ),
        (
            GATE_LIKERT_MEAN_AT_LEAST,
            {"dimension": True, "threshold": 3.5},
            "Lay: Laypeople's mean Empathy rating was at least 3.5",
        ),
    ],
)
def test_each_rule_is_described_with_its_settings(rule, given, described):
    gate = StageGate(
        rule=rule,
        source_stage=Stage(name="Lay"),
        deciding_group=AnnotatorGroup(pk=1, name="Laypeople"),
        min_votes=given.get("min_votes"),
        threshold=given.get("threshold"),
    )
    if given.get("category"):
        gate.category = ErrorCategory(pk=1, label="Parroting")
    if given.get("other_group"):
        gate.other_group = AnnotatorGroup(pk=2, name="Experts")
    if given.get("dimension"):
        gate.dimension = LikertDimension(pk=1, name="Empathy")
    assert gate.describe() == described
