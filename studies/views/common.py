"""Who is asking: the annotator signed in to a study through their link, or the
staff member on a staff page (``staff_page``)."""

import logging
from enum import IntEnum
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from redis.exceptions import RedisError

from ..csp import response_allow_form_action, response_allow_framing
from ..middleware import CROSS_SITE_COOKIES, JOIN_COOKIE_PREFIX
from ..models import Annotator
from ..permissions import Capability, study_for_user, user_is_active_staff
from ..selectors import annotator_of_session
from ..services import annotator_needs_consent
from ..services.crowd import study_frame_origins
from ..services.questionnaires import questionnaire_step
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


class Step(IntEnum):
    """The steps of an annotator's way through a study, in their one order: the
    screening questionnaire, the information sheet and consent, the tutorial, the
    training quiz, the batches, and the questionnaire after a finished stage (asked
    before the annotator goes on or gets their completion code). Each annotator page
    names the last step it comes after (``annotator_page(after=...)``)."""

    SCREENING = 1
    CONSENT = 2
    TUTORIAL = 3
    TRAINING = 4
    # the batches come here: their pages come after TRAINING
    STAGE_QUESTIONNAIRE = 6


def annotator_page(*, after: Step | None):
    """Views of one study's annotator: signed in through their link, and through every
    step up to and including ``after`` (``Step``; None: only signed in, as the
    questionnaire page, the first step). Direct URLs cannot skip a step, and a page
    never sends back to a step that comes after it (so two gates cannot send a person
    to and fro)."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, slug, *args, **kwargs):
            annotator = session_annotator(request, slug)
            if annotator is None:
                return render(request, "studies/annotate/signed_out.html", status=403)
            request.annotator = annotator
            request.study = annotator.study
            response = None if after is None else _step_due(request, annotator, after)
            if response is None:
                response = view(request, *args, **kwargs)
            return response_for_study_frame(response, annotator.study)

        return wrapper

    return decorator


def _step_due(request, annotator: Annotator, after: Step):
    """A redirect to the first step up to ``after`` the annotator has not taken, else
    None."""
    slug = annotator.study.slug
    if questionnaire_step(annotator=annotator, after_stage=False) is not None:
        # the screening questionnaire, or the end page of a screened-out person
        return redirect("studies:questionnaire", slug=slug)
    if after >= Step.CONSENT and annotator_needs_consent(annotator=annotator):
        return redirect("studies:consent", slug=slug)
    if after >= Step.TUTORIAL and annotator.tutorial_completed_at is None:
        return redirect("studies:tutorial", slug=slug)
    if after >= Step.TRAINING and (gate := training_gate(request, annotator)) is not None:
        return gate
    if after >= Step.STAGE_QUESTIONNAIRE and questionnaire_step(annotator=annotator) is not None:
        return redirect("studies:questionnaire", slug=slug)
    return None


def training_gate(request, annotator: Annotator):
    """The training quiz's gate: to the quiz while the annotator's study has one they
    have not passed (``annotator.training_due``, read with the annotator in the same
    query), else None. A refused action (a POST, such as claiming a batch) is told why;
    it wrote nothing."""
    if not getattr(annotator, "training_due", False):
        return None
    if request.method == "POST":
        messages.info(request, TRAINING_FIRST)
    return redirect("studies:training", slug=annotator.study.slug)


TRAINING_FIRST = "Please pass the practice quiz before your first batch."


def render_with_crowd_return(request, template: str, back, context: dict, status: int = 200):
    """Render an annotator page that may show a crowd worker's way back to their
    platform (``back``: a ``CrowdReturn`` or None, in the context as ``back``); an
    MTurk return's form may post to MTurk from this page."""
    response = render(request, template, {**context, "back": back}, status=status)
    if back is not None and back.posts:
        response_allow_form_action(response, origins=[back.form_origin])
    return response


# --- crowd entry: the browser that joined, and joins per client address ---------------

JOIN_COOKIE_SALT = "studies.crowd.join"

JOIN_COOKIE_MAX_AGE = 180 * 24 * 3600  # stages can be weeks apart


def _join_cookie_name(study) -> str:
    return f"{JOIN_COOKIE_PREFIX}{study.slug}"


def join_cookie_set(response, study, annotator: Annotator) -> None:
    """Mark this browser as the one through which ``annotator`` joined ``study``: a
    signed cookie (it cannot be made up), which resumes them within a stage."""
    response.set_signed_cookie(
        _join_cookie_name(study),
        str(annotator.pk),
        salt=JOIN_COOKIE_SALT,
        max_age=JOIN_COOKIE_MAX_AGE,
        httponly=True,
        secure=settings.SESSION_COOKIE_SECURE,
        samesite=settings.SESSION_COOKIE_SAMESITE,
    )


def join_cookie_annotator(request, study) -> int | None:
    """The annotator id this browser's join cookie names for ``study`` (None when it
    has none, or a tampered one)."""
    value = request.get_signed_cookie(
        _join_cookie_name(study), default=None, salt=JOIN_COOKIE_SALT, max_age=JOIN_COOKIE_MAX_AGE
    )
    return int(value) if value and value.isdigit() else None


def client_address(request) -> str:
    """The client's address: ``REMOTE_ADDR``, or behind a trusted reverse proxy the
    last address of the header it sets (``CROWD_CLIENT_ADDRESS_HEADER``, e.g.
    ``HTTP_X_FORWARDED_FOR``: the address the proxy itself saw; earlier ones come
    from the client and could be made up)."""
    header = settings.CROWD_CLIENT_ADDRESS_HEADER
    if header and request.META.get(header):
        return request.META[header].split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR", "")


def join_rate_allows(request) -> bool:
    """Counts this join against its client address: at most ``CROWD_JOIN_LIMIT`` joins
    per ``CROWD_JOIN_WINDOW`` seconds, counted in Django's cache (Redis, shared by
    every web process).

    While Redis fails (unreachable, or any other RedisError) the join is allowed, with a
    warning: a limit that cannot count must not turn every crowd worker away."""
    key = f"crowd-join:{client_address(request)}"
    try:
        cache.add(key, 0, timeout=settings.CROWD_JOIN_WINDOW)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=settings.CROWD_JOIN_WINDOW)
            count = 1
    except RedisError as exc:
        logging.getLogger(__name__).warning(
            "Crowd join allowed without its rate limit: the cache (Redis) failed: %s", exc
        )
        return True
    return count <= settings.CROWD_JOIN_LIMIT


# --- MTurk's frame -------------------------------------------------------------------------


def response_for_study_frame(response, study):
    """An annotator page of ``study``: frameable by MTurk when the study says so
    (``frame-ancestors``, ``studies.csp``), with cookies that work in the frame."""
    origins = study_frame_origins(study=study)
    if origins:
        response_allow_framing(response, origins=origins)
        setattr(response, CROSS_SITE_COOKIES, study.slug)
    return response


# --- staff pages ---------------------------------------------------------------------------


def staff_page(*, may):
    """Staff pages and downloads. ``may`` is a ``Capability`` for a page of one study
    (its URL's ``slug``): the study is ``request.study`` for the view, a user without a
    role in it gets a 404 and one whose role does not allow ``may`` a 403 saying why
    (``studies.permissions.study_for_user``). Otherwise ``may`` is a predicate of the
    user (``studies.permissions``), refused with a 403. Anonymous visitors (annotators
    included: their sessions carry no user) go to the admin login, an htmx request
    from an expired login redirecting the whole page."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                if request.htmx:
                    response = HttpResponse(status=204)
                    response["HX-Redirect"] = reverse("admin:login") + "?next=" + request.path
                    return response
                return redirect_to_login(request.get_full_path(), reverse("admin:login"))
            if isinstance(may, Capability):
                if not user_is_active_staff(request.user):
                    raise PermissionDenied("Staff pages are for active staff accounts.")
                request.study = study_for_user(request.user, kwargs["slug"], may)
            elif not may(request.user):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
