"""The Content-Security-Policy of every page (django-csp 4, ``CSPMiddleware``).

Scripts, styles, images, fonts and requests come from this site only: no inline
script or style element, style attribute or ``on…=`` handler anywhere (they
live in ``static/``), so injected markup cannot run or restyle anything. htmx's own
indicator style is off (``includeIndicatorStyles`` in base.html's htmx-config) and
kept in site.css instead. Pages are not framed (``frame-ancestors 'none'``, as
``X-Frame-Options: DENY``).

One function builds the policy (``content_security_policy``, read by settings), one
widens it for a response (``response_allow_framing``): the hook through which a
study's own crowd-platform origins may frame its pages (a view calls it on its
response with the study's origins), and one lets a response's forms post to another
origin (``response_allow_form_action``: a crowd worker's result posted back to MTurk).
They live in the lowest layer so that every app's
views can call them. The API documentation pages (drf-spectacular's Redoc and Swagger
UI) are the one documented exception: ``API_DOCS_POLICY``, applied in
``annotation_site.api_urls``.
https://django-csp.readthedocs.io/en/latest/configuration.html
"""

from collections.abc import Iterable

from csp.constants import NONE, SELF, UNSAFE_INLINE


def content_security_policy(*, frame_ancestors: Iterable[str] = (NONE,)) -> dict:
    """The site's policy, in django-csp 4's ``CONTENT_SECURITY_POLICY`` format."""
    return {
        "DIRECTIVES": {
            "default-src": [SELF],
            "script-src": [SELF],
            "style-src": [SELF],
            # blob: the dashboard draws a figure's PNG from its SVG in the browser.
            "img-src": [SELF, "data:", "blob:"],
            "font-src": [SELF],
            "connect-src": [SELF],
            "object-src": [NONE],
            "base-uri": [SELF],
            "form-action": [SELF],
            "frame-ancestors": list(frame_ancestors),
        }
    }


def response_allow_framing(response, *, origins: Iterable[str]):
    """Let ``origins`` (e.g. ``https://app.prolific.com``) frame this one response: its
    policy's ``frame-ancestors`` becomes them, and ``X-Frame-Options`` is left off
    (``frame-ancestors`` is what browsers obey; the two must not disagree)."""
    response._csp_replace = {
        **(getattr(response, "_csp_replace", None) or {}),
        "frame-ancestors": list(origins) or [NONE],
    }
    response.xframe_options_exempt = True
    return response


def response_allow_form_action(response, *, origins: Iterable[str]):
    """Let this one response's forms post to ``origins`` besides the site itself (an
    MTurk task posting its result to MTurk's external-submit endpoint)."""
    response._csp_replace = {
        **(getattr(response, "_csp_replace", None) or {}),
        "form-action": [SELF, *origins],
    }
    return response


#: The API documentation pages: Redoc renders with styled-components, which inject
#: ``<style>`` elements at run time, and Swagger UI sets inline styles, so their
#: styles may be inline; scripts stay the site's own (their inline start-up scripts
#: are replaced by static files), and Redoc runs its search in a blob: worker. Images
#: stay the site's own: Redoc's attribution logo on its vendor's CDN is blocked.
API_DOCS_POLICY = {"style-src": [SELF, UNSAFE_INLINE], "worker-src": [SELF, "blob:"]}
