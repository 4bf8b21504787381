"""Capture the README screenshots from a running demo (`make screenshots`).

Drives Debian's Chromium (no browser download) through Playwright against a server
started on a free loopback port with the demo study loaded.

    python docs/screenshots/capture.py --base-url http://127.0.0.1:8799
"""

import argparse
import os
from pathlib import Path

from playwright.sync_api import sync_playwright

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
        page.locator("#capacity").screenshot(
            path=OUT / "admin-study-progress.png"
        )
        study_url = page.url
        page.goto(study_url.replace("/change/", "/create-annotators/"))
        page.select_option("#id_group", label="Layperson")
        page.fill("#id_count", "3")
        page.click("input[type=submit]")
        page.wait_for_selector("text=Invitation links")
        page.screenshot(path=OUT / "admin-invitation-links.png")
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
        browser.close()
    print(f"Screenshots written to {OUT}")


if __name__ == "__main__":
    main()
