"""How the report's tables word their numbers: the agreement table's item counts (one
column per meaning), Landis & Koch bands of the value as shown, between-group
comparisons written without an arrow, and a generation setting without a value.
Every rendering reads the same cells: the HTML partial, the tidy CSV and the text
summary."""

import csv
import html
import io
import re

from django.template.loader import render_to_string

from analysis.explanations import explain
from analysis.metrics import landis_koch_band
from analysis.report.text import table_lines
from analysis.report.tidy_csv import table_csv
from analysis.tables import (
    agreement_table,
    coder_agreement_table,
    cross_stage_table,
    generation_mee_table,
    generation_settings_table,
    group_systems_table,
)

STAGE = "Stage 1"
LAY, EXPERT = "laypeople", "experts"


def csv_rows(table) -> list[dict]:
    return list(csv.DictReader(io.StringIO(table_csv(table), newline="")))


def html_cells(table) -> list[list[str]]:
    """The visible text of every body cell of the rendered table, row by row."""
    page = render_to_string("analysis/_table.html", {"table": table})
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]  # fmt: skip


def agreement_cell(*, fleiss: float, fleiss_band: str, randolph: float) -> dict:
    """A stage cell as the report stores it: 24 items judged, 12 of them with the usual
    3 raters (the kappas'), alpha over all 24. ``fleiss_band`` is the stored band."""
    coherence = {
        "n_items": 12,
        "raters_per_item": 3,
        "fleiss_kappa": fleiss,
        "fleiss_kappa_ci": [None, None],
        "fleiss_band": fleiss_band,
        "randolph_kappa": randolph,
        "randolph_kappa_ci": [None, None],
        "randolph_band": "whatever was stored",
        "krippendorff_alpha": 0.5,
        "krippendorff_alpha_ci": [None, None],
        "n_items_alpha": 24,
    }
    return {
        "n_judgements": 60,
        "n_items": 12,
        "n_items_total": 24,
        "raters_per_item": 3,
        "n_annotators": 3,
        "coherent_rate": 0.5,
        "coherence": coherence,
    }


def agreement_report() -> dict:
    return {
        "stage_order": [STAGE],
        "group_order": [LAY, EXPERT],
        "groups": {
            # Stored by a run that banded the raw value: -1e-16 was "poor".
            LAY: {
                "stages": {STAGE: agreement_cell(fleiss=-1e-16, fleiss_band="poor", randolph=0.0)}
            },
            EXPERT: {
                "stages": {
                    STAGE: agreement_cell(fleiss=-0.0006, fleiss_band="poor", randolph=0.2004)
                }
            },
        },
    }


# --------------------------------------------------------------------------- items


def test_agreement_table_has_one_column_per_item_count():
    table = agreement_table(agreement_report())
    labels = [column.label for column in table.columns]
    assert labels[:6] == [
        "Group",
        "Stage",
        "Judgements",
        "Items judged",
        "Items for κ",
        "Raters per item",
    ]
    assert table.columns[3].title == explain("n_items")
    assert table.columns[4].title == explain("kappa_items")
    for record in table.records():
        assert record.value("n_items_total") == 24
        assert record.value("n_items") == 12
        assert record.value("n_items_alpha") == 24
    row = html_cells(table)[0]
    assert row[3:5] == ["24", "12"]
    assert "(n = 24)" in row[labels.index("Krippendorff α [95% CI]")]
    counts = {
        (r["group"], r["statistic"]): r["value"]
        for r in csv_rows(table)
        if r["statistic"] in ("n_items_total", "n_items", "n_items_alpha")
    }
    assert counts[(LAY, "n_items_total")] == "24"
    assert counts[(LAY, "n_items")] == "12"
    assert counts[(LAY, "n_items_alpha")] == "24"


# --------------------------------------------------------------------------- bands


def test_a_kappa_shown_as_zero_is_slight_in_every_rendering():
    table = agreement_table(agreement_report())
    fleiss = [c.label for c in table.columns].index("Fleiss κ [95% CI]")
    randolph = fleiss + 1
    lay, expert = html_cells(table)
    # -1e-16 and 0 both show 0.000: the same band, whatever the run stored.
    assert lay[fleiss] == "0.000 slight"
    assert lay[randolph] == "0.000 slight"
    # -0.0006 shows -0.001: poor; 0.2004 shows 0.200: slight, not fair.
    assert expert[fleiss] == "-0.001 poor"
    assert expert[randolph] == "0.200 slight"
    bands = {(r["group"], r["statistic"]): r["band"] for r in csv_rows(table)}
    assert bands[(LAY, "fleiss_kappa")] == "slight"
    assert bands[(LAY, "randolph_kappa")] == "slight"
    assert bands[(EXPERT, "fleiss_kappa")] == "poor"
    assert bands[(EXPERT, "randolph_kappa")] == "slight"
    lines = table_lines(table)
    assert "0.000 slight" in lines[3] and "0.000 poor" not in "\n".join(lines)


def test_equal_shown_kappas_share_a_band():
    for shown in ("0.000", "0.200", "-0.001", "0.800", "0.801"):
        values = [float(shown) + d for d in (-0.0004, 0.0, 0.0004)]
        assert len({landis_koch_band(v) for v in values}) == 1, shown


def test_coder_agreement_bands_the_kappa_as_shown():
    report = {
        "stage_order": [STAGE],
        "group_order": [LAY],
        "codebook": [{"slug": "vague", "label": "Vague"}],
        "descriptions": {LAY: {STAGE: {"coder_agreement": {"vague": -1e-16}, "n_both_coded": 10}}},
    }
    table = coder_agreement_table(report)
    assert html_cells(table)[0][3] == "0.000 slight"
    assert csv_rows(table)[0]["band"] == "slight"


def test_the_band_explanation_states_the_convention():
    text = explain("band")
    assert "as shown (3 decimals)" in text
    assert "below 0.000 poor, 0.000 to 0.200 slight, above 0.200 to 0.400 fair" in text
    assert text.endswith("above 0.800 to 1.000 almost perfect.")


# --------------------------------------------------------------------------- between groups


def group_systems_report() -> dict:
    return {
        "group_comparisons": [
            {
                "groups": [LAY, EXPERT],
                "systems": [
                    {
                        "stage": STAGE,
                        "source": "GPT-2",
                        "coherent_rate": {LAY: 0.7222, EXPERT: 0.8667},
                        "chi2_p": 0.5,
                    }
                ],
            }
        ]
    }


def test_groups_compared_per_system_name_each_group_and_use_no_arrow():
    table = group_systems_table(group_systems_report())
    share = [c.label for c in table.columns].index("Coherent share")
    [row] = html_cells(table)
    assert row[share] == "laypeople 0.722 vs experts 0.867"
    assert "→" not in "".join(row)
    assert "→" not in table.columns[share].title
    [line] = [line for line in table_lines(table) if "GPT-2" in line]
    assert "laypeople 0.722 vs experts 0.867" in line and "→" not in line
    shares = {r["group"]: r["value"] for r in csv_rows(table) if r["statistic"] == "coherent_rate"}
    assert shares == {LAY: "0.7222", EXPERT: "0.8667"}


def test_a_shift_across_stages_keeps_its_arrow():
    report = {
        "group_order": [LAY],
        "groups": {
            LAY: {
                "human_cross_stage": [
                    {
                        "from": "Stage 1",
                        "to": "Stage 2",
                        "all": {
                            "coherent_rate": {"Stage 1": 0.5, "Stage 2": 0.75},
                            "n_judgements": {"Stage 1": 8, "Stage 2": 8},
                        },
                    }
                ]
            }
        },
    }
    table = cross_stage_table(report)
    share = [c.label for c in table.columns].index("Coherent share")
    assert html_cells(table)[0][share] == "0.50 → 0.75"


# --------------------------------------------------------------------------- settings


def settings_report(values: list[str]) -> dict:
    entry = {
        "n_items": 6,
        "coherent_rate": 0.5,
        "majority_coherent_rate": 0.5,
        "label_distribution": {"coherent": 0.5},
        "majority_mee": {"no_majority": 1.0},
    }
    return {
        "stage_order": [STAGE],
        "group_order": [LAY],
        "generation_settings": {LAY: {STAGE: {"p": {value: entry for value in values}}}},
    }


def test_a_setting_without_value_shows_as_not_set_with_its_legend():
    legend = explain("setting_not_set")
    for build in (generation_settings_table, generation_mee_table):
        table = build(settings_report(["0.9", "null"]))
        cells = html_cells(table)
        assert [row[3] for row in cells] == ["0.9", "not set"]
        assert not any("null" in text for row in cells for text in row)
        assert table.rows[1][3].parts[0].title == legend
        assert table.note.endswith(f"“Not set”: {legend}")
        page = render_to_string("analysis/_table.html", {"table": table})
        assert f'title="{html.escape(legend)}">not set<' in page
        [line] = [line for line in table_lines(table) if line.startswith(LAY) and "0.9" not in line]
        assert " not set " in line and "null" not in line
        # The CSV keeps the report's name of the value (JSON's null), in a column of
        # its own: "value" holds the numbers.
        header = table_csv(table).splitlines()[0].split(",")
        assert header[:4] == ["group", "stage", "setting", "setting_value"]
        assert header.count("value") == 1
        assert {r["setting_value"] for r in csv_rows(table)} == {"0.9", "null"}


def test_the_settings_note_has_no_legend_when_every_setting_has_a_value():
    table = generation_settings_table(settings_report(["0.9", "0.95"]))
    assert "Not set" not in table.note
    assert table.rows[0][3].parts[0].title == ""
