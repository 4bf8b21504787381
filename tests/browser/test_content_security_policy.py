"""The Content-Security-Policy in a real browser: the annotator's pages, the dashboard,
the Django admin, the API documentation pages and the documentation site run without a
single violation (reported by Chromium on the console and as ``securitypolicyviolation``
events)."""

import re

import pytest
from playwright.sync_api import expect

from analysis.services import analysis_run_compute
from studies.models import Stage
from studies.protocol import NO_ANSWER_FREE_TEXT
from tests.browser.test_annotation_flow import _choice, _consent_and_tutorial, _heading, _save
from tests.browser.test_dashboard import DESKTOP, _log_in

#: Runs before any page script, outside the page's policy: every violation is logged.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`
    + ` at ${e.sourceFile || document.location.pathname}:${e.lineNumber}`);
});
"""

REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@pytest.fixture
def watched(browser):
    """A page whose CSP violations are collected (``page.violations``)."""
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text)
            if "Content Security Policy" in message.text or "CSP violation" in message.text
            else None
        ),
    )
    page.violations = violations
    yield page
    context.close()


def _visit(page, url: str, *, heading: str | None = None) -> None:
    response = page.goto(url)
    assert response.status < 500, f"{url}: {response.status}"
    assert "default-src 'self'" in response.headers["content-security-policy"]
    if heading:
        expect(page.get_by_role("heading", name=heading).first).to_be_visible()
    page.wait_for_load_state("networkidle")


def test_the_annotator_pages_run_without_a_violation(watched, open_study, invitation_url):
    page = watched
    _consent_and_tutorial(page, invitation_url)
    # htmx at work: No reveals the categories, Yes the rating, the save swaps item 2 in.
    _choice(page, "coherent", "no").click()
    expect(page.locator("#item-panel input[name=categories]").first).to_be_visible()
    _choice(page, "coherent", "yes").click()
    _choice(page, "empathy", "4").click()
    _save(page).click()
    expect(_heading(page)).to_have_text(re.compile(r"^Response candidate 2 of"))
    page.go_back()
    page.wait_for_load_state("networkidle")
    _visit(page, f"{page.url.split('/s/')[0]}/s/{open_study.slug}/tutorial/")
    _visit(page, f"{page.url.split('/s/')[0]}/i/not-a-token/")
    assert page.violations == []


def test_a_free_text_batch_runs_without_a_violation(watched, open_study, invitation_url):
    """No, typing, a resized description box and Back: htmx swaps the items in without
    applying a style attribute (it used to copy the resized box's onto the next one)."""
    Stage.objects.filter(study=open_study, position=1).update(no_answer=NO_ANSWER_FREE_TEXT)
    page = watched
    _consent_and_tutorial(page, invitation_url)
    description = page.locator("#item-panel textarea[name=description]")
    # The keys only work once the panel's script has started (it stamps the form), and
    # the text only lands once No has put the cursor in the box: wait for each, as a
    # loaded machine (CI, several test processes) may be slower than the keystrokes.
    ready = page.locator("#item-panel form[data-annotate]")
    expect(ready).to_have_attribute("data-opened-at", re.compile(r"^\d+$"))
    page.keyboard.press("n")
    expect(description).to_be_focused()
    page.keyboard.type("Nothing in the dialogue says so.")
    _save(page).click()
    expect(_heading(page)).to_have_text(re.compile(r"^Response candidate 2 of"))
    expect(ready).to_have_attribute("data-opened-at", re.compile(r"^\d+$"))
    page.keyboard.press("n")
    expect(description).to_be_focused()
    page.keyboard.type("Typed, then")
    # A taller box, as dragging its corner leaves it: an inline height set through the
    # CSSOM, which the policy allows. (A real drag hit the corner only some of the time.)
    description.evaluate("box => { box.style.height = box.offsetHeight + 60 + 'px'; }")
    assert "height" in (description.get_attribute("style") or "")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#item-panel").get_by_role("link", name="← Back").click()
    expect(_heading(page)).to_have_text(re.compile(r"^Response candidate 1 of"))
    page.wait_for_load_state("networkidle")
    assert page.violations == []


def test_the_dashboard_and_the_admin_run_without_a_violation(
    watched, live_server, loaded_study, settings
):
    from tests.analysis.test_dashboard import judge_batches
    from tests.factories import StaffUserFactory

    settings.ANALYSIS_AUTO_RUN = False
    judge_batches(loaded_study, {"Layperson": 3, "Expert": 3})
    analysis_run_compute(study=loaded_study, parameters={"bootstrap_resamples": 20})
    StaffUserFactory(username="dash-researcher")
    page = watched

    _log_in(page, live_server, "/dashboard/pilot/")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page.locator("#figure-label-distribution svg[role=img]")).to_be_visible()
    page.locator("summary", has_text="Parameters").click()
    with page.expect_download():
        page.locator("#figure-label-distribution").get_by_role(
            "button", name="Download PNG"
        ).click()  # the PNG is drawn from the SVG through a blob: image
    base = live_server.url
    _visit(page, f"{base}/admin/", heading="Studies, materials and annotators")
    _visit(page, f"{base}/admin/studies/study/{loaded_study.pk}/change/")
    expect(page.locator("#capacity")).to_be_visible()
    page.locator("select[name=status]").select_option("open")  # admin widgets' scripts
    for own_page in ("import-materials", "create-annotators", "export"):
        _visit(page, f"{base}/admin/studies/study/{loaded_study.pk}/{own_page}/")
    _visit(page, f"{base}/admin/analysis/automaticscore/import/{loaded_study.pk}/")
    _visit(page, f"{base}/admin/studies/study/")
    _visit(page, f"{base}/admin/studies/assignment/")
    _visit(page, f"{base}/admin/analysis/analysisrun/")
    _visit(page, f"{base}/admin/auth/user/add/")
    assert page.violations == []


def test_the_api_documentation_pages_run_within_their_exception(watched, live_server):
    page = watched
    _visit(page, f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Reflection coherence")
    assert page.violations == []
    _visit(page, f"{live_server.url}/api/redoc/")
    expect(page.get_by_text("Reflection coherence studies API").first).to_be_visible()
    # The one thing blocked, on purpose: Redoc's attribution logo on its vendor's CDN
    # (no page of the site loads anything from elsewhere).
    assert page.violations and all(REDOC_LOGO in v for v in page.violations), page.violations


def test_the_documentation_site_runs_without_a_violation(watched, live_server, settings, tmp_path):
    from annotation_site.docs_site import docs_site_build
    from tests.factories import StaffUserFactory

    settings.DOCS_ROOT = str(tmp_path / "site")
    docs_site_build(site_dir=tmp_path / "site")
    StaffUserFactory(username="dash-researcher")
    page = watched
    _log_in(page, live_server, "/docs/")
    expect(page.get_by_role("heading", name="Reflection coherence studies")).to_be_visible()
    _visit(page, f"{live_server.url}/docs/researchers/crowd/", heading="Crowd studies")
    # The theme's scripts at work: the search runs in a worker over the search index.
    page.get_by_role("textbox", name="Search").first.click()
    page.keyboard.type("attention check")
    expect(page.locator(".md-search-result__item").first).to_be_visible()
    assert page.violations == []
