"""Who is asking: the annotator signed in to a study through their link."""

from functools import wraps

from django.conf import settings
from django.shortcuts import redirect, render

from ..models import Annotator
from ..selectors import annotator_of_session
from ..services import annotator_needs_consent
from ..sessions import SESSION_ANNOTATORS


def session_sign_in(request, annotator: Annotator) -> None:
    signed_in = dict(request.session.get(SESSION_ANNOTATORS, {}))
    if signed_in.get(annotator.study.slug) != annotator.pk:
        request.session.cycle_key()  # a new identity gets a new session id
    signed_in[annotator.study.slug] = annotator.pk
    request.session[SESSION_ANNOTATORS] = signed_in


def session_annotator(request, slug: str) -> Annotator | None:
    """The annotator signed in to ``slug`` with this request's session: one query
    on the session's row (its ``annotators`` column), not reading the session data
    (so a change to the session earlier in this same request is not seen: annotator
    pages call this first)."""
    # The answer depends on the session cookie, as if the session had been read
    # (SessionMiddleware then adds "Vary: Cookie"); the session data is not loaded.
    request.session.accessed = True
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not session_key:
        return None
    return annotator_of_session(session_key=session_key, slug=slug)


def annotator_page(*, consent: bool = True, tutorial: bool = True):
    """Views of one study's annotator: signed in through their link, and (unless the
    view is part of getting there) consented to the current version and through the
    tutorial. Direct URLs cannot skip either step."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, slug, *args, **kwargs):
            annotator = session_annotator(request, slug)
            if annotator is None:
                return render(request, "studies/annotate/signed_out.html", status=403)
            request.annotator = annotator
            request.study = annotator.study
            if consent and annotator_needs_consent(annotator=annotator):
                return redirect("studies:consent", slug=slug)
            if tutorial and annotator.tutorial_completed_at is None:
                return redirect("studies:tutorial", slug=slug)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
