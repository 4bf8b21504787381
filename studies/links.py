"""Absolute addresses of the site's pages (invitation links, crowd join links, the
links in e-mails and in ``load_demo``'s output): built here only, so every link a
researcher copies names the same host and port.

With a request (an admin page), the address the researcher reached the site at;
without one (a background job, a management command), the configured
``SITE_URL`` (``DJANGO_SITE_URL``, which ``make demo`` and ``make serve`` set from
``HOST`` and ``PORT``)."""

from django.conf import settings
from django.http import HttpRequest


def absolute_url(path: str, *, request: HttpRequest | None = None) -> str:
    """``path`` (from ``reverse``, starting with "/") as an absolute URL."""
    if request is not None:
        return request.build_absolute_uri(path)
    return settings.SITE_URL + path
