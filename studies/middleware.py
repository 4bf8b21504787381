"""Annotator pages inside a crowd platform's frame (MTurk ExternalQuestion).

Browsers send a page's cookies from inside another site's frame only when they are
``SameSite=None; Secure`` (so only over HTTPS), and some refuse such third-party
cookies altogether. For a study shown in MTurk's frame (the views mark its annotator
pages' responses, ``studies.views.common.response_for_study_frame``):

* its session, CSRF and join cookies are made ``SameSite=None; Secure``;
* its pages also carry the annotator through a signed token in the URL (``ct``,
  naming the session and the MTurk assignment; honoured on that study's pages only): a
  request with a valid token uses the token's session even without cookies, and its
  redirects keep the token; ``static/js/frame-token.js`` adds it to the page's links and
  forms. The token is signed, not encrypted: like any link that signs someone in, whoever
  holds it can act as that worker, and the session key inside it is readable. So it is
  only ever made for a session that holds annotators alone, never for a signed-in
  staff member's (whose key would open the admin). A token is no weaker than the
  session cookie it stands for, so requests carrying one are not CSRF-checked (a forged
  request would need the token).

Listed before ``SessionMiddleware`` and ``CsrfViewMiddleware``: it sets the session
cookie they read, and sees the cookies they set.
https://developer.mozilla.org/en-US/docs/Web/HTTP/Reference/Headers/Set-Cookie#samesitesamesite-value
"""

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth import SESSION_KEY as AUTH_SESSION_KEY
from django.core import signing

CROSS_SITE_COOKIES = "crowd_frame_study"  # the views' mark on a response: the study slug
JOIN_COOKIE_PREFIX = "joined-"  # the signed cookie of the browser that joined a study
TOKEN_PARAMETER = "ct"
TOKEN_SALT = "studies.crowd.frame"


def frame_token(*, session_key: str, slug: str, assignment: str = "") -> str:
    return signing.dumps({"s": session_key, "study": slug, "a": assignment}, salt=TOKEN_SALT)


def frame_token_read(token: str) -> dict | None:
    try:
        return signing.loads(token, salt=TOKEN_SALT, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:
        return None


def _with_token(url: str, slug: str, token: str) -> str:
    parts = urlsplit(url)
    if parts.netloc or not parts.path.startswith(f"/s/{slug}/"):
        return url  # only the study's own pages
    if f"{TOKEN_PARAMETER}=" in parts.query:
        return url
    query = f"{parts.query}&" if parts.query else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{parts.path}?{query}{urlencode({TOKEN_PARAMETER: token})}{fragment}"


class CrowdFrame:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = request.GET.get(TOKEN_PARAMETER)
        data = frame_token_read(token) if token else None
        if data and request.path.startswith(f"/s/{data['study']}/"):
            request.COOKIES[settings.SESSION_COOKIE_NAME] = data["s"]
            request.crowd_token = token
            request._dont_enforce_csrf_checks = True
        response = self.get_response(request)
        slug = getattr(response, CROSS_SITE_COOKIES, None)
        if slug:
            names = {settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME}
            for name, morsel in response.cookies.items():
                if name in names or name.startswith(JOIN_COOKIE_PREFIX):
                    morsel["samesite"] = "None"
                    morsel["secure"] = True
            token = getattr(request, "crowd_token", None)
            session = getattr(request, "session", None)
            session_key = getattr(session, "session_key", None)
            staff_session = session is not None and AUTH_SESSION_KEY in session
            if (
                token is None
                and session_key
                and not staff_session
                and getattr(response, "crowd_frame_assignment", "")
            ):
                token = frame_token(
                    session_key=session_key, slug=slug, assignment=response.crowd_frame_assignment
                )
            if token:
                for header in ("Location", "HX-Redirect", "HX-Push-Url"):
                    if header in response:
                        response[header] = _with_token(response[header], slug, token)
        return response
