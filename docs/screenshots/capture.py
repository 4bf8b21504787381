"""Capture the documentation's screenshots from a running demo (`make screenshots`).

Drives Debian's Chromium (no browser download) through Playwright against a server
started on a free loopback port with the demo study loaded.

    python docs/screenshots/capture.py --base-url http://127.0.0.1:8799

The researcher's pages come first, the study's dashboard and the coding page (with
the descriptions ``coding_demo.py`` adds) among them (the demo comes
with simulated judgements and an analysis run). The annotator's pages (consent, tutorial, an item,
the most-evident question, review, the phone layout) are taken with the first of the
Layperson invitation links the admin has just created, so the annotator is always
new, or with ``--invitation-url`` for an annotator who has not consented yet.

With ``--prepared`` (the JSON ``prepare.py`` writes; `make screenshots` passes it), also
the demo study's Roles page (with the collaborator and coder ``prepare.py`` granted), a
crowd worker's page at the end of a stage and a free-text stage's item.
"""

import argparse
import json
import os
import re
from pathlib import Path
from urllib.parse import urljoin

from playwright.sync_api import expect, sync_playwright

OUT = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# Without these flags Chromium tries to reach Google services, which this
# network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--username", default="researcher")
    parser.add_argument("--password", default="demo-researcher")
    parser.add_argument(
        "--invitation-url",
        help="Invitation link of a new annotator (default: one created in the admin)",
    )
    parser.add_argument(
        "--prepared",
        help="JSON of the annotators prepare.py set up: their screenshots are taken too",
    )
    args = parser.parse_args()
    base = args.base_url.rstrip("/")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/admin/login/")
        page.fill("#id_username", args.username)
        page.fill("#id_password", args.password)
        page.click("input[type=submit]")
        page.goto(f"{base}/admin/studies/study/")
        page.click("text=Demo: coherence of counselling reflections")
        page.wait_for_selector("text=Materials and progress")
        page.screenshot(path=OUT / "admin-study.png")
        page.locator("#capacity").screenshot(path=OUT / "admin-study-progress.png")
        # The Stages table, wide enough for every column: each stage's codes and crowd
        # join links.
        page.set_viewport_size({"width": 2600, "height": 900})
        page.locator("#stages-group").screenshot(path=OUT / "admin-stage-crowd-links.png")
        page.set_viewport_size({"width": 1280, "height": 900})
        study_url = page.url
        page.goto(study_url.replace("/change/", "/create-annotators/"))
        # Groups are listed as "<name> (<study slug>)".
        layperson = page.locator("#id_group option", has_text="Layperson").first
        page.select_option("#id_group", value=layperson.get_attribute("value"))
        page.fill("#id_count", "3")
        page.click("input[type=submit]")
        page.wait_for_selector("text=Invitation links")
        page.screenshot(path=OUT / "admin-invitation-links.png")
        invitation_url = args.invitation_url or urljoin(
            page.url, page.locator("table a[href*='/i/']").first.get_attribute("href")
        )
        page.goto(study_url.replace("/change/", "/import-materials/"))
        page.set_input_files(
            "#id_file",
            files=[
                {
                    "name": "broken.csv",
                    "mimeType": "text/csv",
                    "buffer": (
                        b"annomi_dialogue_id,stage,dialogue_context,reflection_source,reflection\n"
                        b'x-1,GPT-5 stage,"[{""client"": ""I slept badly.""}]",GPT-5,Poor sleep.\n'
                    ),
                }
            ],
        )
        page.click("input[type=submit]")
        page.wait_for_selector(".errornote")
        page.screenshot(path=OUT / "admin-import-errors.png")
        capture_dashboard(page, base)
        capture_gate(page, base)
        capture_coding(page, base)
        capture_annotator_pages(browser, invitation_url)
        if args.prepared:
            capture_roles(page, study_url)
            links = json.loads(Path(args.prepared).read_text(encoding="utf-8"))
            capture_candidates(page, urljoin(base, links["candidates"]))
            capture_crowd_done(browser, urljoin(base, links["crowd_done"]))
            capture_free_text(browser, urljoin(base, links["free_text"]))
            capture_likert(browser, urljoin(base, links["likert"]))
            capture_pairwise(browser, urljoin(base, links["pairwise"]))
            capture_ranking(browser, urljoin(base, links["ranking"]))
        browser.close()
    print(f"Screenshots written to {OUT}")


def capture_candidates(page, url: str) -> None:
    """The Candidate selection page: the pool, the form and the finished selection with
    its diversity."""
    page.set_viewport_size({"width": 1280, "height": 1600})
    page.goto(url)
    page.wait_for_selector("text=Diversity of selection")
    page.screenshot(path=OUT / "candidate-selection.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def capture_roles(page, study_url: str) -> None:
    """The demo study's Roles page as its owner sees it: the holders (the collaborator
    and the coder prepare.py granted), the grant form being filled in (not sent) and
    the top of the audit list."""
    page.goto(study_url.replace("/change/", "/roles/"))
    expect(page.locator("#role-holders tr[data-username='cora']")).to_be_visible()
    page.get_by_label("Account").fill("ana.lyst@uni.example")
    page.get_by_role("radio", name=re.compile("^Analyst:")).check()
    page.screenshot(path=OUT / "roles.png", full_page=True)


def capture_dashboard(page, base: str) -> None:
    """The demo study's dashboard: progress, the analysis run and the top of its report
    (the demo's simulated judgements and its analysis run)."""
    page.goto(f"{base}/dashboard/demo/")
    expect(
        page.get_by_role("table", name="Global agreement on coherent / incoherent")
    ).to_be_visible()
    expect(page.locator("#figure-agreement svg")).to_be_visible()
    page.screenshot(
        path=OUT / "dashboard.png",
        full_page=True,
        clip={"x": 0, "y": 0, "width": 1280, "height": 2250},
    )


def capture_gate(page, base: str) -> None:
    """The gated demo study: the gate on its "Good reflection" stage's page, and the
    dashboard's table of what the gates let through."""
    page.goto(f"{base}/admin/studies/stage/?q=Good+reflection")
    page.get_by_role("link", name="Good reflection", exact=True).click()
    gate = page.locator("#gate-group")
    expect(gate).to_contain_text("items decided")
    gate.screenshot(path=OUT / "admin-stage-gate.png")
    page.set_viewport_size({"width": 1600, "height": 900})  # the table's every column
    page.goto(f"{base}/dashboard/demo-gated/")
    table = page.get_by_role("table", name="Gated stages: the items their gates let through")
    expect(table).to_be_visible()
    # The table is wider than the page's column, which scrolls it: shown whole here.
    # (through the CSS object model: the site's policy refuses a style element)
    table.evaluate("t => { t.closest('.table-scroll').style.overflow = 'visible'; }")
    table.screenshot(path=OUT / "dashboard-gated.png")
    page.set_viewport_size({"width": 1280, "height": 900})


def capture_coding(page, base: str) -> None:
    """The coding page of the demo's first stage (descriptions from coding_demo.py): it
    opens at the first description the researcher has not coded; one code ticked."""
    page.goto(f"{base}/coding/demo/stage-1/")
    expect(page.locator("#coding-panel[data-item]")).to_be_visible()
    page.locator("h1").click()
    page.keyboard.press("1")
    page.screenshot(path=OUT / "coding-page.png", full_page=True)


def _wait_for_item(page, number: int, n_items: int) -> None:
    """Until item ``number`` is shown and annotate.js has set it up (questions that do
    not apply yet are hidden, keys work)."""
    expect(page.locator("#item-heading")).to_have_text(f"Response candidate {number} of {n_items}")
    expect(page.locator("form[data-annotate]")).to_have_attribute(
        "data-opened-at", re.compile(r"^\d+$")
    )


def capture_annotator_pages(browser, invitation_url: str) -> None:
    """The annotator's path through one batch, in a context of its own (no admin
    session). The batch is left unsubmitted."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(invitation_url)
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    page.screenshot(path=OUT / "annotator-consent.png")
    page.locator("#id_agree").check()
    page.get_by_role("button", name="I agree and want to take part").click()
    expect(page.get_by_role("heading", name="How to judge the response candidates")).to_be_visible()
    page.screenshot(path=OUT / "annotator-tutorial.png", full_page=True)
    page.get_by_role("button", name="I have read the tutorial — start").click()
    page.get_by_role("button", name=re.compile(r"^Start (a|your next) batch")).click()
    heading = page.locator("#item-heading")
    expect(heading).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    n_items = int(heading.inner_text().rsplit(" ", 1)[1])
    _wait_for_item(page, 1, n_items)
    page.screenshot(path=OUT / "annotator-item.png")

    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    ).new_page()
    phone.goto(invitation_url)  # the same annotator on their phone: the batch continues
    phone.get_by_role("link", name="Continue your batch").click()
    _wait_for_item(phone, 1, n_items)
    phone.screenshot(path=OUT / "annotator-phone.png", full_page=True)
    phone.context.close()

    save = page.locator("#item-panel [data-save]")
    with page.expect_response(lambda r: "/draft/" in r.url):  # the page keeps a draft
        page.keyboard.press("n")
        page.keyboard.press("1")
        page.keyboard.press("3")
    expect(page.locator("#item-panel .q-most-evident")).to_be_visible()
    page.screenshot(path=OUT / "annotator-no-categories.png", full_page=True)
    page.reload()  # as a closed tab opened again: the choices come back from the draft
    expect(page.locator("[data-draft-restored]")).to_be_visible()
    page.locator("#item-panel").screenshot(path=OUT / "annotator-draft-restored.png")
    page.locator("#item-panel .q-most-evident label:visible").last.click()
    save.click()
    for number in range(2, n_items + 1):
        _wait_for_item(page, number, n_items)
        page.keyboard.press("y")
        page.keyboard.press(str(3 + number % 3))
        save.click()
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.screenshot(path=OUT / "annotator-review.png", full_page=True)
    context.close()


def capture_crowd_done(browser, link: str) -> None:
    """A Prolific worker who finished stage 1: its code, the way back to Prolific and
    when stage 2 opens."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(link)
    expect(page.locator(".crowd-return")).to_be_visible()
    page.screenshot(path=OUT / "annotator-stage-complete.png", full_page=True)
    context.close()


def _first_item(browser, link: str, item: str = "Response candidate"):
    """A context of its own at the first item of the annotator of ``link``: "Start a
    batch", or "Continue your batch" when taken again on the same database (``item``:
    what the heading calls an item, e.g. "Pair")."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(link)
    page.locator(
        "button, a", has_text=re.compile(r"(Start (a|your next)|Continue your) batch")
    ).first.click()
    heading = page.locator("#item-heading")
    expect(heading).to_have_text(re.compile(rf"^{item} 1 of \d+$"))
    expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
        "data-opened-at", re.compile(r"^\d+$")
    )
    return context, page


def capture_free_text(browser, link: str) -> None:
    """A stage that asks for a description after No: No, then the description typed."""
    context, page = _first_item(browser, link)
    page.keyboard.press("n")
    description = page.locator("#item-panel textarea[name='description']")
    description.fill("The client never said they drink every night; the response makes that up.")
    expect(page.locator("#item-panel [data-save]")).to_be_enabled()
    page.screenshot(path=OUT / "annotator-free-text.png", full_page=True)
    context.close()


def capture_likert(browser, link: str) -> None:
    """A Likert stage: fluency rated 4 with its key, the slider moved to 65 by typing."""
    context, page = _first_item(browser, link)
    page.keyboard.press("4")
    page.keyboard.type("65")
    expect(page.locator("#item-panel [data-save]")).to_be_enabled()
    page.locator("#item-panel").screenshot(path=OUT / "annotator-likert.png")
    context.close()


def capture_pairwise(browser, link: str) -> None:
    """A pairwise stage: B chosen with its key, a reason typed."""
    context, page = _first_item(browser, link, item="Pair")
    page.keyboard.press("b")
    page.locator("#id_reason").fill("B says back what the client feels, in plain words.")
    expect(page.locator("#item-panel [data-save]")).to_be_enabled()
    page.screenshot(path=OUT / "annotator-pairwise.png", full_page=True)
    context.close()


def capture_ranking(browser, link: str) -> None:
    """A ranking stage: the second response moved to the top with its key, the next
    one tied with it."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(link)
    page.locator(
        "button, a", has_text=re.compile(r"(Start (a|your next)|Continue your) batch")
    ).first.click()
    expect(page.locator("#item-heading")).to_have_text(re.compile(r"^Rank the \d+ responses$"))
    items = page.locator(".ranking-item")
    # The page's script has set the form up (it marks the time it did), then each key
    # after the page has taken the one before (the focus moved).
    expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
        "data-opened-at", re.compile(r"^\d+$")
    )
    page.keyboard.press("ArrowDown")
    expect(items.nth(0)).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(items.nth(1)).to_be_focused()
    page.keyboard.press("u")
    expect(items.nth(0)).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(items.nth(1)).to_be_focused()
    page.keyboard.press("t")
    expect(items.nth(1).locator("[data-place]")).to_have_text("=1")
    page.locator("#item-panel").screenshot(path=OUT / "annotator-ranking.png")
    context.close()


if __name__ == "__main__":
    main()
