"""The site's icon: linked from every page and answered at /favicon.ico (no 404 noise)."""

from pathlib import Path

from django.contrib.staticfiles import finders
from django.templatetags.static import static


def test_favicon_ico_leads_to_the_sites_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == static("img/favicon.svg")
    icon = finders.find("img/favicon.svg")
    assert icon is not None
    text = Path(icon).read_text(encoding="utf-8")
    assert text.startswith("<svg") and "style" not in text and "script" not in text


def test_every_page_links_the_icon(client, db):
    page = client.get("/").content.decode()
    assert f'<link rel="icon" href="{static("img/favicon.svg")}" type="image/svg+xml">' in page
