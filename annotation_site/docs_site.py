"""The documentation site (``mkdocs.yml``, ``docs/``): built with MkDocs into
``settings.DOCS_ROOT`` and served by the application under ``/docs/`` to staff.

Staff only, since the pages explain what annotators must not read on the study's own
site (how the attention check works, how crowd workers are screened). A site that was
never built gets a page saying how to build it, not an error.

The pages of Material for MkDocs run a few small inline scripts (its colour scheme and
the place it keeps the reader's settings); the Content-Security-Policy allows exactly
those of the page served, by their SHA-256 hashes, and nothing else inline.
https://www.mkdocs.org/user-guide/cli/#mkdocs-build
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils._os import safe_join

from studies.permissions import user_is_active_staff
from studies.views.common import staff_page

#: A directory MkDocs built: it always writes a sitemap. Only such a directory is replaced.
BUILT_MARKER = "sitemap.xml"
INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.S)


class DocsBuildError(Exception):
    """The site could not be built; the message says why (MkDocs' own output)."""


def docs_site_build(*, site_dir: Path) -> None:
    """Build the site strictly (a broken link or anchor fails) into ``site_dir``.

    It is built beside ``site_dir`` first and then put in its place, so a running server
    serves the old site or the new one, never half of one; a failed build leaves the old
    site as it was. A non-empty ``site_dir`` that is not an earlier build is refused.
    """
    site_dir = Path(site_dir)
    if site_dir.exists() and any(site_dir.iterdir()) and not (site_dir / BUILT_MARKER).is_file():
        raise DocsBuildError(
            f"{site_dir} is not empty and holds no documentation build: not replacing it. "
            "Point DJANGO_DOCS_ROOT at an empty or new directory."
        )
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{site_dir.name}-", dir=site_dir.parent))
    try:
        built = subprocess.run(
            [
                # Not --quiet: MkDocs' strict mode counts only the warnings it prints.
                *(sys.executable, "-m", "mkdocs", "build", "--strict"),
                *("--config-file", str(Path(settings.BASE_DIR) / "mkdocs.yml")),
                *("--site-dir", str(staging)),
            ],
            capture_output=True,
            text=True,
            # Material's notice about MkDocs 2 on every build; the pins are in pyproject.toml.
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
        if built.returncode != 0:
            problems = [
                line for line in built.stderr.splitlines() if "WARNING" in line or "ERROR" in line
            ]
            raise DocsBuildError(
                "\n".join(problems) or built.stderr.strip() or built.stdout.strip()
            )
        staging.chmod(0o755)
        previous = site_dir.with_name(f".{site_dir.name}-previous")
        shutil.rmtree(previous, ignore_errors=True)
        if site_dir.exists():
            site_dir.rename(previous)
        staging.rename(site_dir)
        shutil.rmtree(previous, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _inline_script_hashes(html: bytes) -> list[str]:
    digests = (hashlib.sha256(script).digest() for script in INLINE_SCRIPT.findall(html))
    return sorted({f"'sha256-{base64.b64encode(digest).decode()}'" for digest in digests})


@staff_page(may=user_is_active_staff)
def docs_page(request, path: str = ""):
    """A file of the built site: a directory's ``index.html``, a page's assets."""
    root = Path(settings.DOCS_ROOT)
    if not (root / "index.html").is_file():
        return render(request, "docs_not_built.html", status=503)
    try:
        file = Path(safe_join(root, path))
    except SuspiciousFileOperation:
        raise Http404("No such page in the documentation.") from None
    if file.is_dir():
        if path and not path.endswith("/"):
            return redirect(f"{request.path}/")
        file = file / "index.html"
    if not file.is_file():
        raise Http404("No such page in the documentation.")
    if file.suffix != ".html":
        return FileResponse(file.open("rb"))
    html = file.read_bytes()
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    if hashes := _inline_script_hashes(html):
        response._csp_update = {"script-src": hashes}
    return response
