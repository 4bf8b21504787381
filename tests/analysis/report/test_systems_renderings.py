"""The system-level tables and figure: reading order, the Holm mark, the CSV, the
terminal summary, the dashboard's Systems section and the analyze command."""

import copy
import csv
import io
import re
from io import StringIO

import pandas as pd
import pytest
from django.core.management import call_command

from analysis.explanations import EXPLANATIONS
from analysis.models import AnalysisRun
from analysis.parameters import analysis_parameters_clean
from analysis.plots import systems_svg
from analysis.report.build import report_build
from analysis.report.text import report_summary_lines, table_lines
from analysis.report.tidy_csv import table_csv
from analysis.tables import (
    evaluator_source_table,
    evaluator_systems_table,
    format_number,
    group_comparison_table,
    report_tables,
    system_pairs_table,
    systems_table,
)
from tests.analysis.test_dashboard import (
    CATEGORIES,
    EXPERT,
    LAY,
    SVG,
    all_text,
    build_report,
    done_run,
    judgement_frame,
    parse,
    staff_client,  # noqa: F401 (a fixture)
    url,
)


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(judgement_frame())


def pairs_report(report: dict) -> dict:
    """The report with the Lay group's first pair significant after Holm, the second not,
    the third undefined."""
    changed = copy.deepcopy(report)
    pairs = changed["system_pairs"][LAY]
    pairs[0].update(chi2_p=0.001, p_holm=0.012)
    pairs[1].update(chi2_p=0.04, p_holm=0.2)
    pairs[2].update(chi2_p=None, p_holm=None)
    return changed


def test_systems_table_rows_follow_group_then_system_order(report):
    keys = [tuple(r.keys.values()) for r in systems_table(report).records()]
    assert [k[0] for k in keys] == [EXPERT] * 6 + [LAY] * 6  # group_order: str order
    assert [k[1:] for k in keys[:3]] == [
        ('Stage <1> & "small"', "BART"),
        ('Stage <1> & "small"', "GPT<2>"),
        ('Stage <1> & "small"', "Human"),
    ]
    entry = report["systems"][EXPERT][0]
    record = systems_table(report).records()[0]
    assert record.value("coherent_rate") == entry["coherent_rate"]
    assert record.stat("coherent_rate").ci == tuple(entry["coherent_rate_ci"])
    assert record.value("empathy_share", "4") == entry["empathy_distribution"]["4"]


def test_pairs_significant_after_holm_are_marked_in_every_rendering(report):
    table = system_pairs_table(pairs_report(report))
    lay_rows = [row for row in table.rows if row[0].keys == (LAY,)]
    holm = [next(c for c in row if any(s.name == "p_holm" for s in c.stats)) for row in lay_rows]
    assert [p.text for p in holm[:3]] == ["0.0120 ✱", "0.200", "–"]
    mark = holm[0].parts[-1]
    assert mark.title == EXPLANATIONS["holm_significant"] and mark.css == "flag"
    rows = list(csv.DictReader(io.StringIO(table_csv(table), newline="")))
    flags = [r["value"] for r in rows if r["statistic"] == "significant_holm"]
    assert flags[len(flags) // 2 :][:3] == ["true", "false", ""]  # Lay after Expert
    text = "\n".join(table_lines(table))
    assert "0.0120 ✱" in text and "✱ marks the pairs" in text


def test_group_comparison_reads_tau_and_delta_h(report):
    (record,) = group_comparison_table(report).records()
    comparison = report["group_comparisons"][0]
    assert record.keys == {"group_a": EXPERT, "group_b": LAY}
    assert record.value("n_systems") == len(comparison["systems"]) == 6
    assert record.value("mean_abs_delta_h") == comparison["mean_abs_delta_h"]
    assert record.value("kendall_tau") == comparison["kendall_tau"]


def test_the_text_summary_prints_the_systems_tables(report):
    text = "\n".join(report_summary_lines(report))
    for caption in (
        "Systems: coherence and empathy per group",
        "Pairs of systems per group",
        "Groups compared per system",
        "Do the groups rank the systems alike?",
        "Coherence per generation setting",
        "Majority most evident error per generation setting",
    ):
        assert caption in text
    entry = report["systems"][LAY][0]
    systems = text[text.index("Systems: coherence and empathy per group") :]
    row = next(
        line for line in systems.splitlines() if line.startswith(LAY) and entry["source"] in line
    )
    assert format_number(entry["coherent_rate"]) in row


def test_a_report_from_before_the_systems_has_no_systems_tables(report):
    old = {k: v for k, v in report.items() if k not in ("systems", "system_pairs")}
    slugs = {t.slug for t in report_tables(old)}
    assert "systems" not in slugs and "system-pairs" not in slugs
    assert "No judgements analysed yet." in systems_svg(old)


def test_systems_figure_marks_every_row_of_the_table_with_its_interval(report):
    root = parse(systems_svg(report))
    assert root.find(f"{SVG}title").text.startswith("Coherent share per system")
    tips = [t.text for t in root.iter(f"{SVG}title") if t.text and "coherent share" in t.text]
    records = systems_table(report).records()
    assert len(tips) == len(records)
    for record in records:
        stat = record.stat("coherent_rate")
        low, high = stat.ci
        expected = (
            f"{record.keys['group']} · {record.keys['source']} · {record.keys['stage']}: "
            f"coherent share {format_number(stat.value)} "
            f"[{format_number(low)}, {format_number(high)}]"
        )
        assert any(tip.startswith(expected) for tip in tips), expected
    assert LAY in all_text(root)


def test_systems_figure_says_when_an_interval_is_missing():
    report = build_report(judgement_frame(), bootstrap_resamples=0)
    tips = [t.text for t in parse(systems_svg(report)).iter(f"{SVG}title") if t.text]
    assert any("(no interval)" in tip for tip in tips)


@pytest.mark.django_db
def test_dashboard_has_a_systems_section_with_figure_pairs_and_comparison(
    staff_client,
    loaded_study,
    report,
):
    done_run(loaded_study, pairs_report(report))
    page = staff_client.get(url("dashboard", loaded_study)).content.decode()
    section = page.index('<h3 class="report-section" id="section-systems">Systems</h3>')
    positions = [
        page.index(marker)
        for marker in (
            "<caption>Systems: coherence and empathy per group",
            'id="figure-systems"',
            "<caption>Pairs of systems per group",
            "<caption>Groups compared per system",
            "<caption>Do the groups rank the systems alike?",
        )
    ]
    assert section < positions[0] and positions == sorted(positions)
    assert '<span title="{}" class="flag">✱</span>'.format(
        EXPLANATIONS["holm_significant"]
    ) in page.replace("&#x27;", "'")
    assert f'title="{EXPLANATIONS["kendall_tau"]}"' in page.replace("&#x27;", "'")
    # No inline script, style or handler in the section (a CSP forbids them).
    systems_part = page[section:]
    assert not re.search(r"<script(?![^>]*\bsrc=)|<style|\sstyle=\"|\son[a-z]+=", systems_part)


@pytest.mark.django_db
def test_analyze_prints_the_systems_table(annotated_study):
    out = StringIO()
    call_command("analyze", "pilot", "--resamples", "20", stdout=out)
    output = out.getvalue()
    run = AnalysisRun.objects.get()
    assert "Systems: coherence and empathy per group" in output
    entry = run.result["systems"]["Expert"][0]
    systems = output[output.index("Systems: coherence and empathy per group") :]
    row = next(
        line
        for line in systems.splitlines()
        if line.startswith("Expert") and entry["stage"] in line and f" {entry['source']} " in line
    )
    assert format_number(entry["coherent_rate"]) in row
    assert f"(n = {entry['n_empathy']})" in row


def test_automatic_evaluator_tables_per_source_and_per_system(report):
    frame = judgement_frame()
    reflections = frame[["stage", "reflection_id"]].drop_duplicates()
    scores = reflections.assign(evaluator="bleu", score=reflections["reflection_id"] % 7 / 10)
    scored = report_build(
        frame=frame,
        study_slug="pilot",
        parameters=analysis_parameters_clean({"bootstrap_resamples": 0}),
        categories=CATEGORIES,
        scores=pd.DataFrame(scores),
    )
    # Two items per source and stage: too few per source; six systems per group.
    assert scored["automatic_evaluators_by_source"] == []
    systems = evaluator_systems_table(scored)
    assert [r.keys for r in systems.records()] == [
        {"evaluator": "bleu", "group": EXPERT},
        {"evaluator": "bleu", "group": LAY},
    ]
    assert systems.records()[0].value("n_systems") == 6
    assert {t.slug for t in report_tables(scored)} >= {
        "automatic-evaluators-by-source",
        "automatic-evaluators-systems",
    }
    entry = {
        "evaluator": "bleu",
        "group": LAY,
        "stage": "S",
        "source": "GPT<2>",
        "n_items": 4,
        "spearman": 0.4,
        "spearman_p": 0.6,
        "pearson": None,
        "pearson_p": None,
    }
    by_source = evaluator_source_table({**scored, "automatic_evaluators_by_source": [entry]})
    (row,) = by_source.rows
    assert [cell.text for cell in row] == [
        "S",
        "bleu",
        LAY,
        "GPT<2>",
        "4",
        "0.400",
        "0.600",
        "–",
        "–",
    ]
    names = {r["statistic"] for r in csv.DictReader(io.StringIO(table_csv(by_source)))}
    assert names == {"n_items", "spearman", "spearman_p", "pearson", "pearson_p"}
