"""The documentation site under /docs/: built by `manage.py build_docs` (MkDocs, strict)
and served by the application to staff, within the Content-Security-Policy."""

import base64
import hashlib
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation_site.docs_site import DocsBuildError, docs_site_build
from tests.factories import StaffUserFactory


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory):
    """The site, built once for the session as `make docs` builds it."""
    site_dir = tmp_path_factory.mktemp("docs") / "site"
    docs_site_build(site_dir=site_dir)
    return site_dir


@pytest.fixture
def staff_client(client, db, settings, docs_site):
    settings.DOCS_ROOT = str(docs_site)
    client.force_login(StaffUserFactory())
    return client


def _policy(response) -> dict[str, list[str]]:
    parts = (part.split() for part in response["Content-Security-Policy"].split(";"))
    return {name: values for name, *values in parts if name}


def test_the_home_page_and_a_nested_page_are_served_as_html(staff_client):
    home = staff_client.get("/docs/")
    assert home.status_code == 200
    assert home["Content-Type"] == "text/html; charset=utf-8"
    assert "<h1" in home.content.decode() and "Where to read" in home.content.decode()
    crowd = staff_client.get("/docs/researchers/crowd/")
    assert crowd.status_code == 200
    assert "Crowd studies on Prolific and MTurk" in crowd.content.decode()
    # The address without its slash leads to the page, as a web server would.
    assert staff_client.get("/docs/researchers/crowd").url == "/docs/researchers/crowd/"


def test_the_pages_assets_and_example_files_are_served(staff_client):
    page = staff_client.get("/docs/analysts/imports/").content.decode()
    stylesheet = re.search(r'href="\.\./\.\./(assets/stylesheets/main\.[^"]+\.css)"', page)
    assert stylesheet, "the theme's stylesheet"
    css = staff_client.get(f"/docs/{stylesheet.group(1)}")
    assert css.status_code == 200 and css["Content-Type"].startswith("text/css")
    example = staff_client.get("/docs/examples/materials.csv")
    assert example.status_code == 200
    assert b"annomi_dialogue_id" in b"".join(example.streaming_content)
    screenshot = staff_client.get("/docs/screenshots/dashboard.png")
    assert screenshot.status_code == 200 and screenshot["Content-Type"] == "image/png"
    # The screenshot scripts beside the pictures are not part of the site.
    assert staff_client.get("/docs/screenshots/capture.py").status_code == 404


def test_nothing_outside_the_site_is_served(staff_client):
    for path in ("/docs/no/such/page/", "/docs/../manage.py", "/docs/%2e%2e/manage.py"):
        assert staff_client.get(path).status_code == 404, path


def test_the_policy_allows_exactly_the_pages_own_inline_scripts(staff_client):
    response = staff_client.get("/docs/researchers/")
    html = response.content
    scripts = re.findall(rb"<script>(.*?)</script>", html, re.S)
    assert scripts, "Material's inline scripts"
    policy = _policy(response)
    expected = {
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in scripts
    }
    assert set(policy["script-src"]) == {"'self'", *expected}
    assert policy["style-src"] == ["'self'"] and policy["default-src"] == ["'self'"]
    # Nothing from elsewhere: no web fonts, no CDN.
    assert not re.search(
        rb'(?:src|href)="(?:https?:)?//', html.replace(b'href="https://squidfunk', b"")
    )


def test_the_documentation_is_for_staff(client, db, settings, docs_site):
    settings.DOCS_ROOT = str(docs_site)
    response = client.get("/docs/researchers/")
    assert response.status_code == 302
    assert response.url.startswith("/admin/login/?next=/docs/researchers/")


def test_a_signed_in_user_who_is_not_staff_is_refused(client, db, settings, docs_site):
    """The one gate of staff pages: a signed-in user it refuses gets a 403, not a login
    page they are already past."""
    settings.DOCS_ROOT = str(docs_site)
    client.force_login(get_user_model().objects.create_user("someone", password="x"))
    assert client.get("/docs/researchers/").status_code == 403


def test_a_server_without_a_built_site_says_how_to_build_it(client, db, settings, tmp_path):
    settings.DOCS_ROOT = str(tmp_path / "never-built")
    client.force_login(StaffUserFactory())
    response = client.get("/docs/")
    assert response.status_code == 503
    page = response.content.decode()
    assert "The documentation has not been built on this server" in page
    assert "python manage.py build_docs" in page
    assert client.get("/docs/researchers/").status_code == 503


def test_building_refuses_to_replace_a_directory_that_is_no_build(tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("not documentation")
    with pytest.raises(DocsBuildError, match="holds no documentation build"):
        docs_site_build(site_dir=occupied)
    assert [p.name for p in occupied.iterdir()] == ["keep.txt"]
    with pytest.raises(CommandError, match="The documentation was not built"):
        call_command("build_docs", site_dir=occupied)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["occupied"]


def test_a_rebuild_replaces_the_earlier_build_whole(tmp_path, capsys):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitemap.xml").write_text("an earlier build")
    (site_dir / "stale.html").write_text("a page since removed")
    call_command("build_docs", site_dir=site_dir)
    assert (site_dir / "index.html").is_file()
    assert not (site_dir / "stale.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
    assert "The documentation is built in" in capsys.readouterr().out


def test_a_broken_link_fails_the_build_and_the_site_served_stays(tmp_path, settings):
    sources = tmp_path / "project"
    (sources / "docs").mkdir(parents=True)
    (sources / "mkdocs.yml").write_text(
        (Path(settings.BASE_DIR) / "mkdocs.yml").read_text().split("\nnav:")[0]
    )
    (sources / "docs" / "index.md").write_text("# Home\n\n[Missing](#no-such-section)\n")
    settings.BASE_DIR = sources
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitemap.xml").write_text("an earlier build")
    with pytest.raises(DocsBuildError, match="no such anchor"):
        docs_site_build(site_dir=site_dir)
    assert [p.name for p in site_dir.iterdir()] == ["sitemap.xml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "site"]


def test_the_admin_pages_link_the_formats_they_take_to_their_documentation(
    staff_client, loaded_study, docs_site
):
    pages = [
        f"/admin/studies/study/{loaded_study.pk}/import-materials/",
        f"/admin/studies/study/{loaded_study.pk}/export/",
        f"/admin/analysis/automaticscore/import/{loaded_study.pk}/",
    ]
    linked = set()
    for url in pages:
        page = staff_client.get(url)
        assert page.status_code == 200, url
        html = page.content.decode()
        # No page sends its reader to the repository's README; the dataset card is a
        # file of that name (dataset hubs read it), offered on the export page.
        assert "README" not in html.replace("README.md", ""), url
        links = re.findall(r'href="(/docs/[^"]*)"', html)
        # Every admin page links the documentation's home (the user tools).
        assert "/docs/" in links, url
        links = [link for link in links if link != "/docs/"]
        assert links, f"{url} links no documentation page"
        linked.update(links)
    assert linked == {
        "/docs/analysts/imports/",
        "/docs/analysts/exports/",
        "/docs/analysts/exports/#item-level-export",
        "/docs/analysts/exports/#publishing-the-data-as-a-dataset",
        "/docs/analysts/questionnaires/",
        "/docs/analysts/automatic-scores/",
    }
    for link in linked:
        path, _, anchor = link.partition("#")
        target = staff_client.get(path)
        assert target.status_code == 200, link
        assert not anchor or f'id="{anchor}"' in target.content.decode(), link
