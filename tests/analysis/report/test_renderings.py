"""One set of report tables, three renderings: every statistic a table builder defines
appears in the dashboard's HTML, the CSV download and the terminal summary, with the
same numbers; the figures read theirs from the same tables.

Plain pytest on reports built by the real report code; only the dashboard test at the
end uses the database."""

import csv
import html
import io
import json
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from analysis.explanations import explain_undefined
from analysis.parameters import analysis_parameters_clean
from analysis.plots import annotator_consistency_svg, label_distribution_svg
from analysis.report.build import report_build
from analysis.report.text import report_summary_lines, table_lines
from analysis.report.tidy_csv import table_csv
from analysis.tables import (
    DASH,
    Measure,
    Table,
    format_ci,
    format_number,
    format_p,
    report_tables,
)
from analysis.tables.model import GROUP, STAGE, at, build_table
from tests.analysis.test_dashboard import (
    CATEGORIES,
    EXPERT,
    LAY,
    SOURCE,
    STAGE_1,
    STAGE_2,
    SVG,
    all_text,
    build_report,
    done_run,
    judgement_frame,
    parse,
    staff_client,  # noqa: F401 (a fixture)
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
    fleiss = next(i for i, c in enumerate(agreement.columns) if "fleiss_kappa" in c.stats)
    assert agreement.rows[0][fleiss].parts[0].title == explain_undefined("fleiss_kappa")


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


# --------------------------------------------------------------------------- counts and
# statistics the first tidy CSV downloads had: item and rater counts of every agreement
# summary, the 3-point empathy kappas, Pearson for automatic evaluators, the judgements
# behind the cross-stage shares.

# Answers of the three annotators of each group: ("c", empathy) for coherent,
# ("i", error flags, most evident error bit) for incoherent.
STAGE_ITEMS = {
    STAGE_1: [
        (1, "Human", [("i", 0b10, 1)] * 3),
        (2, "Human", [("c", 4), ("c", 4), ("c", 3)]),
        (4, "Human", [("c", 3), ("c", 3), ("c", 4)]),
        (10, "BART", [("i", 0b01, 0)] * 3),
        (11, SOURCE, [("i", 0b01, 0), ("i", 0b10, 1), ("i", 0b11, None)]),
        (12, "BART", [("c", 5), ("c", 5), ("c", 4)]),
        (13, SOURCE, [("c", 2), ("c", 3), ("c", None)]),
        (14, "BART", [("c", 5), ("i", 0b01, 0), ("c", 4)]),
    ],
    STAGE_2: [
        (1, "Human", [("i", 0b10, 1), ("i", 0b10, 1), ("c", 4)]),
        (2, "Human", [("c", 4), ("c", 5), ("c", 3)]),
        (3, "Human", [("c", 4), ("c", 5), ("c", 5)]),
        (5, "Human", [("c", 2), ("i", 0b01, 0), ("c", 2)]),
        (20, "BART", [("i", 0b01, 0)] * 3),
        (21, SOURCE, [("i", 0b01, 0), ("i", 0b10, 1), ("i", 0b11, None)]),
        (22, "BART", [("c", 5), ("c", 5), ("c", 4)]),
        (23, SOURCE, [("c", 1), ("c", 2), ("c", None)]),
    ],
}
AUTOMATIC = {1: 0.1, 2: 0.9, 3: 0.7, 4: 0.6, 5: 0.4, 10: 0.2, 11: 0.35, 12: 0.8, 13: 0.5}
AUTOMATIC |= {14: 0.45, 20: 0.15, 21: 0.3, 22: 0.95, 23: 0.65}


@pytest.fixture(scope="module")
def agreeing_report() -> dict:
    """Items every annotator judged incoherent (one without a most evident error) or
    coherent (one without a rating of the statement), human reflections judged in one
    stage only, and an automatic evaluator: every count the tables restore is nonzero."""
    rows = []
    for position, (stage, items) in enumerate(STAGE_ITEMS.items(), start=1):
        for g, group in enumerate((LAY, EXPERT)):
            for rid, source, answers in items:
                for r, answer in enumerate(answers):
                    coherent = answer[0] == "c"
                    rows.append(
                        {
                            "judgement_id": len(rows) + 1,
                            "stage": stage,
                            "stage_position": position,
                            "group": group,
                            "annotator": f"{group} {r + 1}",
                            "annotator_id": 100 * g + r,
                            "dialogue_id": f"d{rid}",
                            "reflection_id": rid,
                            "source": source,
                            "kind": "human" if source == "Human" else "synthetic",
                            "coherent": coherent,
                            "error_flags": 0 if coherent else answer[1],
                            "most_evident_bit": None if coherent else answer[2],
                            "empathy": answer[1] if coherent else None,
                            "is_recurring": position == 2 and rid in (1, 2),
                            "assignment_status": "submitted",
                        }
                    )
    scores = pd.DataFrame(
        [
            {
                "stage": stage,
                "reflection_id": rid,
                "evaluator": "BERTScore",
                "score": AUTOMATIC[rid],
            }
            for stage, items in STAGE_ITEMS.items()
            for rid, _, _ in items
        ]
    )
    return report_build(
        frame=pd.DataFrame(rows),
        study_slug="pilot",
        parameters=analysis_parameters_clean({"bootstrap_resamples": 30}),
        categories=CATEGORIES,
        scores=scores,
    )


@dataclass(frozen=True)
class Restored:
    """One restored number: where it is (table, row keys, statistic, facet), its value in
    the report and the text its cell shows (``exact``: the whole cell, else a part)."""

    table: str
    keys: dict
    statistic: str
    facet: str | None
    value: Any
    text: str
    exact: bool = True


def kappa_text(summary: dict, name: str, band: str) -> str:
    return f"{format_number(summary[name])} {summary[band]} {format_ci(summary[name + '_ci'])}"


def restored_numbers(report: dict) -> list[Restored]:
    cell = report["groups"][EXPERT]["stages"][STAGE_2]
    here = {"group": EXPERT, "stage": STAGE_2}
    coherence, raw = cell["coherence"], cell["most_evident_error"]["raw"]
    empathy, merged = cell["empathy"], cell["empathy"]["merged"]
    shift = report["groups"][EXPERT]["human_cross_stage"][0]
    evaluator = next(
        e for e in report["automatic_evaluators"] if (e["stage"], e["group"]) == (STAGE_2, EXPERT)
    )
    numbers = [
        Restored("agreement", here, "n_items_alpha", None, coherence["n_items_alpha"],
                 f"(n = {coherence['n_items_alpha']})", exact=False),
        Restored("empathy", here, "n_items_alpha", None, empathy["n_items_alpha"],
                 f"(n = {empathy['n_items_alpha']})", exact=False),
        Restored("empathy", here, "merged_fleiss_kappa", None, merged["fleiss_kappa"],
                 kappa_text(merged, "fleiss_kappa", "fleiss_band")),
        Restored("empathy", here, "merged_randolph_kappa", None, merged["randolph_kappa"],
                 kappa_text(merged, "randolph_kappa", "randolph_band")),
        Restored("error-categories", {**here, "variant": "raw"}, "n_items_alpha", None,
                 raw["n_items_alpha"], f"(n = {raw['n_items_alpha']})", exact=False),
        Restored("automatic-evaluators", {"stage": STAGE_2, "evaluator": "BERTScore",
                 "group": EXPERT}, "pearson", None, evaluator["pearson"],
                 format_number(evaluator["pearson"])),
        Restored("automatic-evaluators", {"stage": STAGE_2, "evaluator": "BERTScore",
                 "group": EXPERT}, "pearson_p", None, evaluator["pearson_p"],
                 format_p(evaluator["pearson_p"])),
    ]  # fmt: skip
    for table, summary in (("error-categories", raw), ("empathy", empathy)):
        keys = {**here, "variant": "raw"} if table == "error-categories" else here
        for name in ("n_items", "raters_per_item"):
            numbers.append(Restored(table, keys, name, None, summary[name], str(summary[name])))
    pair = {"group": EXPERT, "from": STAGE_1, "to": STAGE_2}
    for subset, name in (
        ("all", "n_judgements"),
        ("recurrence_free", "recurrence_free_n_judgements"),
    ):
        counts = shift[subset]["n_judgements"]
        for stage in (STAGE_1, STAGE_2):
            text = f"{counts[STAGE_1]} → {counts[STAGE_2]}"
            numbers.append(Restored("cross-stage", pair, name, stage, counts[stage], text))
    return numbers


def located(table: Table, number: Restored) -> tuple[int, int]:
    """(row, column) of ``number``'s cell in ``table``."""
    rows = [i for i, r in enumerate(table.records()) if r.keys == number.keys]
    columns = [i for i, c in enumerate(table.columns) if number.statistic in c.stats]
    assert len(rows) == 1 and len(columns) == 1, number
    return rows[0], columns[0]


def shows(text: str, number: Restored) -> bool:
    return text == number.text if number.exact else number.text in text


def page_rows(page: str, slug: str) -> list[list[str]]:
    """The visible text of every cell of table ``slug`` on a page, row by row."""
    start = page.index(f'<div class="report-table" id="{slug}">')
    body = page[page.index("<tbody>", start) : page.index("</tbody>", start)]
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]  # fmt: skip


def csv_value(rows: list[dict], number: Restored) -> str:
    found = [
        row
        for row in rows
        if all(row[k] == v for k, v in number.keys.items())
        and row["statistic"] == number.statistic
        and (number.facet is None or row["stage"] == number.facet)
    ]
    assert len(found) == 1, number
    return found[0]["value"]


def test_restored_numbers_are_nonzero_in_the_example(agreeing_report):
    """The example report gives every restored number something to show."""
    numbers = restored_numbers(agreeing_report)
    assert len(numbers) == 15
    assert all(n.value not in (None, 0) for n in numbers), numbers
    empathy = agreeing_report["groups"][EXPERT]["stages"][STAGE_2]["empathy"]
    # One annotator left the statement unrated: alpha used an item the kappas did not.
    counts = (empathy["n_items_all_coherent"], empathy["n_items"], empathy["n_items_alpha"])
    assert counts == (4, 3, 4)
    # The 3-point scale merges ratings, never drops one: its counts are the 5-point
    # ones, as the empathy table's note says, so the table shows them once.
    sizes = ("n_items", "raters_per_item", "n_items_alpha")
    assert [empathy["merged"][k] for k in sizes] == [empathy[k] for k in sizes]


def test_restored_numbers_are_in_the_csv_the_html_and_the_text(agreeing_report):
    tables = {t.slug: t for t in report_tables(agreeing_report)}
    for number in restored_numbers(agreeing_report):
        table = tables[number.table]
        assert float(csv_value(csv_rows(table), number)) == number.value, number
        row, column = located(table, number)
        assert shows(table.rows[row][column].text, number), (number, table.rows[row][column])
        page = render_to_string("analysis/_table.html", {"table": table})
        assert shows(page_rows(page, table.slug)[row][column], number), number
        line = table_lines(table)[3 + row]
        assert number.text in line, (number, line)


def test_restored_numbers_are_explained(agreeing_report):
    tables = {t.slug: t for t in report_tables(agreeing_report)}
    for number in restored_numbers(agreeing_report):
        table = tables[number.table]
        row, column = located(table, number)
        assert table.columns[column].title, number
        assert all(part.title for part in table.rows[row][column].parts if part.text != "→")


@pytest.mark.django_db
def test_dashboard_shows_and_downloads_the_restored_numbers(
    staff_client,
    loaded_study,
    agreeing_report,
):
    run = done_run(loaded_study, agreeing_report)
    page = staff_client.get(reverse("analysis:dashboard", args=[loaded_study.slug]))
    page = page.content.decode()
    tables = {t.slug: t for t in report_tables(agreeing_report)}
    for number in restored_numbers(agreeing_report):
        row, column = located(tables[number.table], number)
        shown = page_rows(page, number.table)[row]
        assert shown == [cell.text for cell in tables[number.table].rows[row]], number
        assert shows(shown[column], number), (number, shown[column])
        url = reverse("analysis:table_csv", args=[loaded_study.slug, run.pk, number.table])
        download = staff_client.get(url).content.decode()
        rows = list(csv.DictReader(io.StringIO(download, newline="")))
        assert float(csv_value(rows, number)) == number.value, number
