"""The researcher's dashboard in a real browser: log in, start an analysis, follow it
through htmx polling to its report, and download a figure as SVG and as PNG (drawn
from the SVG on a canvas by static/js/dashboard.js)."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import expect

from analysis.explanations import EXPLANATIONS
from analysis.models import AnalysisRun
from analysis.parameters import analysis_parameters_clean
from analysis.report.build import report_build
from analysis.services import analysis_run_execute
from analysis.tables import format_number
from studies.models import Study
from tests.analysis.test_dashboard import (
    CATEGORIES,
    EXPERT,
    GENERATION,
    LAY,
    STAGE_1,
    STAGE_2,
    assignments_of,
    codings_of,
    done_run,
    judge_batches,
    judgement_frame,
)
from tests.factories import StaffUserFactory

DESKTOP = {"width": 1280, "height": 900}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
POLL_MS = 6000  # polling every 2 s: a change shows within two polls


@pytest.fixture
def judged_study(loaded_study, settings):
    settings.ANALYSIS_AUTO_RUN = False
    Study.objects.filter(pk=loaded_study.pk).update(overlap_k=1, status=Study.Status.OPEN)
    loaded_study.refresh_from_db()
    judge_batches(loaded_study, {"Layperson": 3, "Expert": 3})
    return loaded_study


@pytest.fixture
def researcher(db):
    return StaffUserFactory(username="dash-researcher")


def _log_in(page, live_server, next_url: str) -> None:
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.get_by_label("Username").fill("dash-researcher")
    page.get_by_label("Password").fill("pw-for-tests-only")
    page.get_by_role("button", name="Log in").click()


def test_researcher_reruns_the_analysis_follows_it_and_downloads_figures(
    browser, live_server, judged_study, researcher, monkeypatch
):
    # No worker in this test: the run stays queued until the test computes it, so the
    # page's polling is what brings the news.
    queued = []
    monkeypatch.setattr(
        "analysis.services.analysis_run_dispatch", lambda run_id, **kw: queued.append(run_id)
    )
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    page = context.new_page()
    _log_in(page, live_server, "/dashboard/pilot/")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    status = page.locator("#run-status")
    expect(status).to_have_text(re.compile("No analysis has been run"))
    expect(page.get_by_text("No finished analysis yet")).to_be_visible()

    page.locator("summary", has_text="Parameters").click()
    page.get_by_label("Bootstrap resamples").fill("20")
    page.get_by_role("button", name="Re-run analysis").click()
    expect(status).to_contain_text("is queued")
    run = AnalysisRun.objects.get()
    assert queued == [run.pk]
    assert run.parameters["bootstrap_resamples"] == 20
    assert page.url.endswith("/dashboard/pilot/")  # htmx: no page load

    AnalysisRun.objects.filter(pk=run.pk).update(status=AnalysisRun.Status.RUNNING, progress=40)
    expect(status).to_contain_text(f"Analysis #{run.pk} is running: 40%", timeout=POLL_MS)
    expect(status.locator("progress")).to_have_attribute("value", "40")

    analysis_run_execute(run_id=run.pk)
    # Done: the page that started the run goes to its report.
    expect(page).to_have_url(re.compile(rf"\?run={run.pk}#report$"), timeout=POLL_MS)
    expect(
        page.get_by_role("table", name="Global agreement on coherent / incoherent")
    ).to_be_visible()
    expect(page.locator("#run-status")).to_contain_text(f"Analysis #{run.pk} is done")
    expect(page.locator("#run-status [hx-trigger]")).to_have_count(0)

    # The Systems section: its heading, the dot plot, the pairs table explained on hover.
    expect(page.get_by_role("heading", name="Systems", exact=True)).to_be_visible()
    expect(page.locator("#figure-systems svg[role=img]")).to_be_visible()
    pairs = page.get_by_role("table", name="Pairs of systems per group")
    expect(pairs).to_be_visible()
    expect(pairs.get_by_role("columnheader", name="Holm p")).to_have_attribute(
        "title", re.compile("Holm's method")
    )

    figure = page.locator("#figure-label-distribution")
    expect(figure.locator("svg[role=img]")).to_be_visible()
    with page.expect_download() as svg_download:
        figure.get_by_role("link", name="Download SVG").click()
    assert svg_download.value.suggested_filename == f"pilot-{run.pk}-label-distribution.svg"
    svg = Path(svg_download.value.path()).read_bytes()
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"

    png_button = figure.get_by_role("button", name="Download PNG")
    expect(png_button).to_be_visible()
    with page.expect_download() as png_download:
        png_button.click()
    assert png_download.value.suggested_filename == f"pilot-{run.pk}-label-distribution.png"
    png = Path(png_download.value.path()).read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000
    context.close()


def test_without_javascript_the_rerun_form_posts_and_comes_back(
    browser, live_server, judged_study, researcher, monkeypatch
):
    monkeypatch.setattr("analysis.services.analysis_run_dispatch", lambda run_id, **kw: None)
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    _log_in(page, live_server, "/dashboard/pilot/")
    page.get_by_role("button", name="Re-run analysis").click()
    run = AnalysisRun.objects.get()
    expect(page.get_by_text(f"Analysis #{run.pk} queued.")).to_be_visible()
    expect(page.get_by_text("Reload the page")).to_be_visible()
    assert page.url.endswith("/dashboard/pilot/")
    # PNG needs JavaScript: its button stays hidden, the SVG links remain.
    analysis_run_execute(run_id=run.pk)
    page.reload()
    png_buttons = page.locator("[data-png-download]")
    # Agreement, agreement over time, label distribution, annotators, systems, the
    # majority MEE per setting and the order effects (no crossed settings, descriptions
    # or other instruments).
    expect(png_buttons).to_have_count(7)
    expect(png_buttons.first).to_be_hidden()
    expect(page.get_by_role("link", name="Download SVG").first).to_be_visible()
    context.close()


def _plainly_worded_report() -> dict:
    """A report whose tables test the wording: a Lay<person> annotator left out one
    item of stage 1 (so the kappas use 5 of the 6 items judged, alpha all 6), every
    reflection has a nucleus p of null (greedy decoding), and the Expert's Fleiss
    kappa in stage 1 is -1e-16, stored "poor" as a run that banded the raw value
    did."""
    frame = judgement_frame()
    left_out = (
        (frame["annotator"] == f"{LAY} 1")
        & (frame["stage"] == STAGE_1)
        & (frame["reflection_id"] == 10)
    )
    frame = frame.loc[~left_out]
    generation = pd.Series(
        {rid: json.dumps({"decoding": "greedy", "p": None}) for rid in GENERATION.index}
    )
    report = report_build(
        frame=frame,
        study_slug="pilot",
        parameters=analysis_parameters_clean({"bootstrap_resamples": 0}),
        categories=CATEGORIES,
        generation=generation,
        assignments=assignments_of(frame),
        stages=[STAGE_1, STAGE_2],
        codings=codings_of(frame),
    )
    coherence = report["groups"][EXPERT]["stages"][STAGE_1]["coherence"]
    coherence.update(fleiss_kappa=-1e-16, fleiss_band="poor")
    return report


def _row_texts(table, *keys: str) -> list[str]:
    row = table.locator("tbody tr")
    for key in keys:
        row = row.filter(has=table.page.get_by_role("rowheader", name=key, exact=True))
    expect(row).to_have_count(1)
    return row.locator("th, td").all_inner_texts()


def test_report_tables_word_counts_bands_comparisons_and_settings_plainly(
    browser, live_server, loaded_study, researcher
):
    report = _plainly_worded_report()
    done_run(loaded_study, report)
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    _log_in(page, live_server, "/dashboard/pilot/")

    # Items: one column per meaning, each explained on hover.
    agreement = page.get_by_role("table", name="Global agreement on coherent / incoherent")
    for name, key in (("Items judged", "n_items"), ("Items for κ", "kappa_items")):
        expect(agreement.get_by_role("columnheader", name=name, exact=True)).to_have_attribute(
            "title", EXPLANATIONS[key]
        )
    lay = _row_texts(agreement, LAY, STAGE_1)
    assert lay[3:5] == ["6", "5"]
    assert "(n = 6)" in lay[-1]
    # The band of the value as shown: 0.000 is slight, whatever the run stored.
    fleiss = agreement.locator("thead th").all_inner_texts().index("Fleiss κ [95% CI]")
    assert _row_texts(agreement, EXPERT, STAGE_1)[fleiss] == "0.000 slight"
    expect(agreement.get_by_text("slight", exact=True).first).to_have_attribute(
        "title", EXPLANATIONS["band"]
    )

    # Groups compared per system: each group named, no arrow.
    entry = report["group_comparisons"][0]
    first, second = entry["groups"]
    system = entry["systems"][0]
    rates = system["coherent_rate"]
    compared = page.get_by_role("table", name="Groups compared per system")
    expect(compared.locator("tbody tr").first).to_contain_text(
        f"{first} {format_number(rates[first])} vs {second} {format_number(rates[second])}"
    )
    assert "→" not in compared.inner_text()

    # A setting without a value: "not set", explained on hover and under the table.
    for caption in (
        "Coherence per generation setting",
        "Majority most evident error per generation setting",
    ):
        settings = page.get_by_role("table", name=caption, exact=True)
        not_set = settings.get_by_text("not set", exact=True).first
        expect(not_set).to_be_visible()
        expect(not_set).to_have_attribute("title", EXPLANATIONS["setting_not_set"])
        assert "null" not in settings.locator("tbody").inner_text()
        note = page.locator(".report-table", has=settings).locator(".table-note")
        expect(note).to_contain_text("“Not set”: " + EXPLANATIONS["setting_not_set"])
    context.close()
