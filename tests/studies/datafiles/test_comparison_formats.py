"""The published pairwise and ranking formats as interchange formats: a hand-made file
(texts a spreadsheet would take for formulas, a tie, a reason) imported and exported
again gives it back cell for cell; a live study's export imported gives the same
export; each bad cell named with its row and column, nothing written."""

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from studies.columns import PAIRWISE_COLUMNS, RANKING_COLUMNS
from studies.exports import ExportOptions, export_rows
from studies.models import Assignment, Judgement, Stage, Study
from tests.studies.comparison_fixtures import answered_comparisons

pytestmark = pytest.mark.django_db

CONTEXT = json.dumps([{"therapist": "-How was it?"}, {"client": '=Fine, "mostly".'}])
CANDIDATES = (("Human", "- You feel fine."), ("=GPT-2", "=SUM(A1)"), ("GPT-3", "  spaced  "))
GROUPS = (("-Expert 1", "Experts"), ("@Lay 1", "Lay people"), ("@Lay 2", "Lay people"))


def pairwise_rows(*, group: bool = True) -> list[list[str]]:
    """Every pair of the three candidates, per annotator, each the other way round for
    the second layperson; choices cycling A, B, Tie; a reason now and then. Ordered as
    the export orders them (annotator, then the pair's texts compared byte by byte)."""
    rows = [[*PAIRWISE_COLUMNS, *(["annotator_group"] if group else [])]]
    n = 0
    for stage in ("=Pairs",):
        for annotator, group_name in sorted(GROUPS, key=lambda g: (g[1], g[0])):
            pairs = [(a, b) for i, a in enumerate(CANDIDATES) for b in CANDIDATES[i + 1 :]]
            pairs.sort(key=lambda p: tuple(sorted((p[0][1].encode(), p[1][1].encode()))))
            for a, b in pairs:
                if annotator == "@Lay 2":
                    a, b = b, a
                choice = ("A", "B", "Tie")[n % 3]
                reason = "" if n % 2 else f"reason {n}"
                n += 1
                rows.append(
                    [
                        "dlg-1", stage, CONTEXT, annotator, *a, *b, choice, reason,
                        *([group_name] if group else []),
                    ]
                )  # fmt: skip
    return rows


def ranking_rows() -> list[list[str]]:
    rows = [[*RANKING_COLUMNS, "annotator_group"]]
    ranks = {"-Expert 1": ("1", "2", "2"), "@Lay 1": ("3", "1", "2"), "@Lay 2": ("1", "2", "4")}
    for annotator, group_name in sorted(GROUPS, key=lambda g: (g[1], g[0])):
        for (source, text), rank in zip(CANDIDATES, ranks[annotator], strict=True):
            rows.append(["dlg-1", "Ranks", CONTEXT, source, text, annotator, rank, group_name])
    return rows


def to_csv(rows) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def import_rows(tmp_path, rows, slug="copy", *args) -> str:
    path = tmp_path / "file.csv"
    path.write_bytes(to_csv(rows).encode("utf-8"))
    out = StringIO()
    call_command("import_annotations", str(path), "--study", slug, *args, stdout=out)
    return out.getvalue()


def export(slug: str, *args: str) -> list[list[str]]:
    out = StringIO()
    call_command("export_annotations", slug, *args, stdout=out)
    return parse(out.getvalue())


def test_a_pairwise_file_round_trips_cell_for_cell(tmp_path):
    rows = pairwise_rows()
    summary = import_rows(tmp_path, rows)
    assert "9 judgements" in summary
    study = Study.objects.get(slug="copy")
    assert study.stages.get().instrument == Stage.Instrument.PAIRWISE
    assert study.stages.get().asks_reason
    assert export("copy") == rows
    # The second layperson saw every pair the other way round: stored swapped.
    swapped = Judgement.objects.filter(assignment__annotator__pseudonym="@Lay 2")
    assert {j.shown_swapped for j in swapped} == {True}
    assert {len(a.order) for a in Assignment.objects.filter(stage__study=study)} == {3}


def test_a_ranking_file_round_trips_cell_for_cell(tmp_path):
    rows = ranking_rows()
    import_rows(tmp_path, rows)
    assert Study.objects.get(slug="copy").stages.get().instrument == Stage.Instrument.RANKING
    assert export("copy") == rows
    assert sorted(Judgement.objects.values_list("rank", flat=True)) == [1, 1, 1, 2, 2, 2, 2, 3, 4]


def test_groups_named_as_their_prefix_need_no_group_column(tmp_path):
    rows = [r for r in pairwise_rows(group=False)]
    for row in rows[1:]:
        row[3] = row[3].replace("-Expert", "Expert").replace("@Lay", "Lay")
    rows[1:] = sorted(rows[1:], key=lambda r: (r[3].startswith("Lay"), r[3]))
    import_rows(tmp_path, rows)
    assert export("copy")[0] == list(PAIRWISE_COLUMNS)


@pytest.mark.parametrize("rows", [pairwise_rows, ranking_rows], ids=["pairwise", "ranking"])
def test_a_spreadsheet_safe_file_round_trips(tmp_path, rows):
    import_rows(tmp_path, rows())
    out = StringIO()
    call_command("export_annotations", "copy", "--spreadsheet-safe", stdout=out)
    assert "'=SUM(A1)" in out.getvalue()
    path = tmp_path / "safe.csv"
    path.write_text(out.getvalue(), encoding="utf-8", newline="")
    call_command(
        "import_annotations", str(path), "--study", "again", "--spreadsheet-safe", stdout=StringIO()
    )
    assert export("again") == export("copy")


def test_a_live_studys_exports_import_to_the_same_exports(study, tmp_path):
    answered_comparisons(study)
    for instrument, name in ((Stage.Instrument.PAIRWISE, "p"), (Stage.Instrument.RANKING, "r")):
        options = ExportOptions(extended=True)
        rows = list(export_rows(study=study, options=options, instrument=instrument))
        import_rows(tmp_path, rows, slug=f"copy-{name}")
        copy = Study.objects.get(slug=f"copy-{name}")
        again = list(export_rows(study=copy, options=options, instrument=instrument))
        assert again == rows


def _with(rows, n: int, column: str, value: str) -> list[list[str]]:
    rows = [list(r) for r in rows]
    rows[n][rows[0].index(column)] = value
    return rows


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: _with(pairwise_rows(), 1, "choice", "a"), "row 2, column 'choice': expected A, B or Tie, not 'a'"),
        (lambda: _with(pairwise_rows(), 1, "reason", "x" * 2001), "row 2, column 'reason': 2,001 characters; at most 2,000"),
        (lambda: _with(pairwise_rows(), 1, "reflection_b", pairwise_rows()[1][5]), "row 2, column 'reflection_b': the same reflection as reflection_a"),
        (lambda: _with(_with(pairwise_rows(), 1, "source_b", "Human"), 1, "source_a", "Human"), "both candidates are from \"Human\""),
        (lambda: [*pairwise_rows(), pairwise_rows()[1][:4] + pairwise_rows()[1][6:8] + pairwise_rows()[1][4:6] + pairwise_rows()[1][8:]], "duplicate of row 2: the same stage, dialogue, pair (either way round) and annotator"),
        (lambda: _with(ranking_rows(), 1, "rank", "0"), "row 2, column 'rank': expected a whole number from 1 (the best), not '0'"),
        (lambda: _with(ranking_rows(), 1, "rank", "first"), "row 2, column 'rank': expected a whole number from 1 (the best), not 'first'"),
        (lambda: [*ranking_rows(), ranking_rows()[1]], "duplicate of row 2"),
        (lambda: [r for i, r in enumerate(ranking_rows()) if i != 2], "row 2: -Expert 1 ranks 2 of the 3 candidates of dialogue \"dlg-1\" in stage \"Ranks\": a ranking ranks every candidate (missing: '=SUM(A1)')"),
        (lambda: _with(ranking_rows(), 1, "rank", "5"), "row 2, column 'rank': rank 5 among 3 candidates: at most 4"),
    ],
    ids=["choice", "reason", "same-text", "same-source", "pair-reversed", "rank-0", "rank-word",
         "rank-twice", "rank-missing", "rank-too-low"],
)  # fmt: skip
def test_a_bad_cell_is_named_and_nothing_is_written(tmp_path, make, message):
    with pytest.raises(CommandError) as raised:
        import_rows(tmp_path, make())
    assert message in str(raised.value)
    assert not Study.objects.filter(slug="copy").exists()
