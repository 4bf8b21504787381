"""One set of report tables, three renderings: every statistic a table builder defines
appears in the dashboard's HTML, the CSV download and the terminal summary, with the
same numbers; the figures read theirs from the same tables.

Plain pytest on reports built by the real report code, no database."""

import csv
import html
import io
import json
import re

import pytest
from django.template.loader import render_to_string

from analysis.explanations import explain_undefined
from analysis.plots import annotator_consistency_svg, label_distribution_svg
from analysis.report_csv import table_csv
from analysis.summary import report_summary_lines, table_lines
from analysis.tables import DASH, Measure, Table, format_number, report_tables
from analysis.tables.model import GROUP, STAGE, at, build_table
from tests.analysis.test_dashboard import (
    EXPERT,
    LAY,
    SOURCE,
    STAGE_1,
    STAGE_2,
    SVG,
    all_text,
    build_report,
    judgement_frame,
    parse,
)


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(judgement_frame())


@pytest.fixture(scope="module")
def single_rater_report() -> dict:
    return build_report(judgement_frame(raters=1))


def csv_rows(table: Table) -> list[dict]:
    return list(csv.DictReader(io.StringIO(table_csv(table), newline="")))


def test_every_statistic_of_every_table_is_in_the_html_the_csv_and_the_text(
    report, single_rater_report
):
    for rep in (report, single_rater_report):
        text = "\n".join(report_summary_lines(rep))
        for table in report_tables(rep):
            assert table.rows, table.slug
            page = render_to_string("analysis/_table.html", {"table": table})
            shown = html.unescape(re.sub(r"<[^>]+>", "", page))
            statistics = {row["statistic"] for row in csv_rows(table)}
            lines = table_lines(table)
            assert table.caption in text and lines[0] == table.caption
            for column in table.columns:
                assert column.label in shown, (table.slug, column.label)
                assert column.label in lines[1], (table.slug, column.label)
                assert set(column.stats) <= statistics, (table.slug, column.label)
            # Each row of the text shows the row of the HTML, cell by cell, in order.
            assert len(lines) >= 3 + len(table.rows)
            for row, line in zip(table.rows, lines[3:], strict=False):
                position = 0
                for cell in row:
                    assert cell.text in shown, (table.slug, cell.text)
                    position = line.index(cell.text, position) + len(cell.text)


def test_a_new_measure_appears_in_every_rendering(report):
    """What adding a statistic to a builder takes: one Measure (here reusing an
    explanation); the column, its numbers, the CSV rows and the text follow."""
    table = build_table(
        slug="demo",
        caption="Demo",
        keys=[GROUP, STAGE],
        measures=[Measure("n_items_total", "All items", "n_items", at("n_items_total"), "count")],
        entries=[((LAY, STAGE_1), report["groups"][LAY]["stages"][STAGE_1])],
    )
    total = report["groups"][LAY]["stages"][STAGE_1]["n_items_total"]
    assert table.columns[-1].label == "All items"
    assert table.rows[0][-1].text == str(total)
    assert csv_rows(table) == [
        {
            "group": LAY,
            "stage": STAGE_1,
            "statistic": "n_items_total",
            "value": str(total),
            "ci_low": "",
            "ci_high": "",
            "band": "",
        }
    ]
    assert table_lines(table)[-1].split() == ["Lay<person>", *STAGE_1.split(), str(total)]


def test_csv_holds_the_raw_values_with_intervals_bands_and_dimensions(report):
    tables = {t.slug: t for t in report_tables(report)}
    cell = report["groups"][EXPERT]["stages"][STAGE_2]
    agreement = csv_rows(tables["agreement"])
    row = next(r for r in agreement if (r["group"], r["stage"], r["statistic"]) == (
        EXPERT, STAGE_2, "randolph_kappa"))  # fmt: skip
    coherence = cell["coherence"]
    assert float(row["value"]) == coherence["randolph_kappa"]
    assert [float(row["ci_low"]), float(row["ci_high"])] == coherence["randolph_kappa_ci"]
    assert row["band"] == coherence["randolph_band"]

    majority = csv_rows(tables["majority"])
    flagged = next(r for r in majority if (r["group"], r["stage"], r["label"], r["statistic"]) == (
        EXPERT, STAGE_2, "off_topic", "n_items_flagged"))  # fmt: skip
    assert int(flagged["value"]) == cell["error_categories"]["off_topic"]["n_items_flagged"]

    shift = report["groups"][LAY]["human_cross_stage"][0]
    for row in csv_rows(tables["cross-stage"]):
        if row["group"] == LAY and row["statistic"] == "coherent_rate":
            assert (row["from"], row["to"]) == (STAGE_1, STAGE_2)
            assert float(row["value"]) == shift["all"]["coherent_rate"][row["stage"]]

    shares = cell["label_distribution"]
    distribution = csv_rows(tables["label-distribution"])
    mine = [r for r in distribution if (r["group"], r["stage"]) == (EXPERT, STAGE_2)]
    assert {(r["reflections"], r["label"]): float(r["value"]) for r in mine} == {
        (reflections, label): share
        for reflections, per_label in shares.items()
        for label, share in per_label.items()
    }
    assert [r["reflections"] for r in mine[::4]] == ["human", "synthetic", "Human", "BART", SOURCE]


def test_csv_leaves_undefined_values_empty_and_the_text_shows_a_dash(single_rater_report):
    agreement = report_tables(single_rater_report)[0]
    rows = [r for r in csv_rows(agreement) if r["statistic"] == "fleiss_kappa"]
    assert rows and all(r["value"] == r["ci_low"] == r["band"] == "" for r in rows)
    line = table_lines(agreement)[3]
    assert f"  {DASH}  " in line
    assert agreement.rows[0][7].parts[0].title == explain_undefined("fleiss_kappa")


def test_label_distribution_table_has_kinds_then_sources_and_explains_its_shares(report):
    table = next(t for t in report_tables(report) if t.slug == "label-distribution")
    first = [row[2].text for row in table.rows[:5]]
    assert first == ["All human", "All synthetic", "Human", "BART", SOURCE]
    share = report["groups"][table.rows[0][0].text]["stages"][STAGE_1]["label_distribution"]
    assert table.rows[0][3].text == format_number(share["human"]["coherent"], 2)
    assert [c.label for c in table.columns[3:]] == [
        "Coherent",
        "Malformed",
        'Off <topic> & "odd"',
        "Incoherent, no category",
    ]


def test_figures_show_the_numbers_of_their_tables(report):
    """The figures read the tables' numbers: change a number in the tables' source and
    the figure follows, formatted as the table formats it."""
    changed = json.loads(json.dumps(report))
    entry = changed["groups"][LAY]["annotators"][f"{LAY} 1"]
    entry["recurring_identical_rate"] = 0.123
    root = parse(annotator_consistency_svg(changed))
    assert f"{LAY} 1: same answer on 0.12 of 2 recurring human reflections" in [
        t.text for t in root.iter(f"{SVG}title")
    ]
    kinds = all_text(parse(label_distribution_svg(report)))
    n_human = report["groups"][LAY]["stages"][STAGE_1]["human_vs_synthetic"]["n_judgements"]
    assert f"n = {n_human['human']}" in kinds
