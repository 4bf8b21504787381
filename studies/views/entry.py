"""Getting in: invitation and crowd links, information sheet and consent, tutorial."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from ..errors import ErrorCode
from ..forms import ConsentForm
from ..models import Annotator, ConsentVersion, Stage, Study, stage_tutorial
from ..permissions import Capability, studies_where, user_is_active_staff
from ..protocol import DEFAULT_ANSWER_SETTINGS, DESCRIPTION_MIN_LENGTH
from ..selectors import (
    annotator_by_token,
    annotator_stage_states,
    stage_categories,
    stage_tutorial_due,
)
from ..services import (
    annotator_complete_tutorial,
    annotator_consent,
    annotator_decline,
    consent_version_current,
)
from ..services.crowd_joins import (
    CrowdRefusal,
    crowd_identity,
    crowd_is_preview,
    crowd_join,
    stage_by_join_key,
)
from ..shortcuts import ITEM_KEYS, LIKERT_KEYS, PAIRWISE_KEYS, RANKING_KEYS
from .common import (
    Step,
    annotator_page,
    join_cookie_annotator,
    join_cookie_set,
    join_rate_allows,
    response_for_study_frame,
    session_sign_in,
)


def index(request: HttpRequest) -> HttpResponse:
    """The start page ("View site" in the admin): annotators are sent to their personal
    link; signed-in staff get their way on (the admin, the documentation, and each
    study's dashboard for those whose role in it may see it)."""
    staff = user_is_active_staff(request.user)
    context = {
        "staff": staff,
        "dashboards": (
            studies_where(request.user, Capability.SEE).order_by("title").only("slug", "title")
            if staff
            else ()
        ),
    }
    return render(request, "studies/index.html", context)


#: The refusal page's heading for each code it can carry: "This link is not valid" only
#: for a link that is wrong itself; any other refusal says what stands in the way.
INVALID_LINK = "This link is not valid"
REFUSAL_HEADINGS: dict[ErrorCode, str] = {
    ErrorCode.LINK_UNKNOWN: INVALID_LINK,
    ErrorCode.JOIN_WITHOUT_STAGE: INVALID_LINK,
    ErrorCode.JOIN_KEY_UNKNOWN: INVALID_LINK,
    ErrorCode.CROWD_IDS_MISSING: INVALID_LINK,
    ErrorCode.CROWD_WRONG_TASK: "This link belongs to another task",
    ErrorCode.JOIN_RATE_LIMITED: "Please wait a few minutes",
    ErrorCode.CROWD_CLOSED: "This study is not taking part now",
    ErrorCode.CROWD_NOT_A_PARTICIPANT: "This stage is for earlier participants",
    ErrorCode.CROWD_FULL: "This study is full",
    ErrorCode.PARTICIPATION_ENDED: "Your participation has ended",
    ErrorCode.CROWD_SCREENED_OUT: "The screening ended your participation",
    ErrorCode.CROWD_QUIZ_FAILED: "The practice quiz ended your participation",
    ErrorCode.CROWD_PART_FINISHED: "Your part of this stage is finished",
    ErrorCode.CROWD_STARTED_ELSEWHERE: "You started this stage elsewhere",
    ErrorCode.STAGE_LOCKED: "Please finish the earlier stage first",
    ErrorCode.STAGE_WAITING: "Come back later: your place is kept",
    ErrorCode.STAGE_NOT_FOR_GROUP: "This stage is not open to you",
    ErrorCode.STAGE_SCHEME_NOT_FINAL: "This stage is not open yet: your place is kept",
    ErrorCode.CROWD_NO_WORK_LEFT: "No work is left for you in this stage",
}


def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """Sign the holder of an invitation link in to their study (no password)."""
    annotator = annotator_by_token(token=token)
    if annotator is None:
        return _refused(request, ErrorCode.LINK_UNKNOWN, "", 404)
    session_sign_in(request, annotator)
    annotator.last_seen_at = timezone.now()
    annotator.save(update_fields=["last_seen_at"])
    return redirect("studies:home", slug=annotator.study.slug)


def _refused(request, code: ErrorCode, message: str, status: int) -> HttpResponse:
    """The refusal page: its heading (``REFUSAL_HEADINGS``) and ``message`` for the
    person, ``code`` in its markup for programs."""
    return render(
        request,
        "studies/refusal.html",
        {"heading": REFUSAL_HEADINGS[code], "reason": message, "code": code},
        status=status,
    )


def join_without_key(request: HttpRequest, slug: str) -> HttpResponse:
    """The study-wide link of earlier versions: each stage has its own link now."""
    get_object_or_404(Study, slug=slug)
    return _refused(
        request,
        ErrorCode.JOIN_WITHOUT_STAGE,
        "This link does not name a stage of the study. Please start again from the crowd "
        "platform's page for this study; if that does not help, write to the research team.",
        404,
    )


def join(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """Entry from a crowd platform into one stage (Prolific or MTurk parameters); its
    pages, refusals included, show in MTurk's frame when the study allows it."""
    study = get_object_or_404(Study, slug=slug)
    return response_for_study_frame(_join(request, study, key), study)


def _join(request: HttpRequest, study: Study, key: str) -> HttpResponse:
    stage = stage_by_join_key(study=study, key=key)
    if stage is None:
        return _refused(
            request,
            ErrorCode.JOIN_KEY_UNKNOWN,
            "This link is not (or no longer) a way into this study. Please start again from "
            "the crowd platform's page for this study.",
            404,
        )
    if crowd_is_preview(request.GET):
        return render(
            request,
            "studies/annotate/crowd_preview.html",
            {
                "study": study,
                "stage": stage,
                "settings": stage.answer_settings,
                "description_min": DESCRIPTION_MIN_LENGTH,
            },
        )
    if not join_rate_allows(request):
        return _refused(
            request,
            ErrorCode.JOIN_RATE_LIMITED,
            "Too many people joined from your network in the last few minutes. Please wait a "
            "few minutes and open the link again.",
            429,
        )
    try:
        identity = crowd_identity(request.GET)
        annotator = crowd_join(
            study=study,
            stage=stage,
            identity=identity,
            joined_before=join_cookie_annotator(request, study),
        )
    except CrowdRefusal as refusal:
        return _refused(request, refusal.code, refusal.message, refusal.status)
    session_sign_in(request, annotator)
    annotator.last_seen_at = timezone.now()
    annotator.save(update_fields=["last_seen_at"])
    response = redirect("studies:home", slug=study.slug)
    join_cookie_set(response, study, annotator)
    if identity.platform == Annotator.Platform.MTURK:
        # Where the frame refuses cookies, the pages carry this token instead
        # (studies.middleware.CrowdFrame).
        response.crowd_frame_assignment = identity.session_id
    return response


@annotator_page(after=Step.SCREENING)
def consent(request: HttpRequest) -> HttpResponse:
    study, annotator = request.study, request.annotator
    version = consent_version_current(study=study)
    if version is None:
        return render(request, "studies/annotate/not_ready.html", {"study": study}, status=503)
    form = ConsentForm(request.POST or None, initial={"version": version.pk})
    if request.method == "POST" and form.is_valid():
        accepted = ConsentVersion.objects.filter(
            pk=form.cleaned_data["version"], study=study
        ).first()
        try:
            if accepted is None:
                raise ValidationError("Unknown consent version.")
            annotator_consent(annotator=annotator, version=accepted)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("studies:home", slug=study.slug)
    return render(
        request,
        "studies/annotate/consent.html",
        {
            "study": study,
            "annotator": annotator,
            "version": version,
            "form": form,
            "updated_from": annotator.consented_version
            if annotator.consented_version_id and annotator.consented_version_id != version.pk
            else None,
        },
        status=422 if form.errors else 200,
    )


@require_POST
@annotator_page(after=Step.SCREENING)
def decline(request: HttpRequest) -> HttpResponse:
    annotator = request.annotator
    has_answers = annotator.assignments.filter(judgements__isnull=False).exists()
    removed = annotator_decline(annotator=annotator)
    return render(
        request,
        "studies/annotate/declined.html",
        {"study": request.study, "has_answers": has_answers, "removed": removed},
    )


def _current_stage(states) -> Stage | None:
    """The annotator's current stage: the first not done, else the last."""
    current = next((s for s in states if not s.passed), states[-1] if states else None)
    return current.stage if current else None


@annotator_page(after=Step.CONSENT)
def tutorial(request: HttpRequest) -> HttpResponse:
    study, annotator = request.study, request.annotator
    states = annotator_stage_states(annotator=annotator)
    stage = _current_stage(states)
    if request.method == "POST":
        # Recorded for a stage with a tutorial of its own only: one given its own
        # tutorial later is then still read by everyone.
        own = stage if stage is not None and stage.has_own_tutorial else None
        annotator_complete_tutorial(annotator=annotator, stage=own)
        messages.success(request, "Thank you. You can reopen the tutorial at any time.")
        return redirect("studies:home", slug=study.slug)
    due = stage_tutorial_due(annotator=annotator, states=states)
    return render(
        request,
        "studies/annotate/tutorial.html",
        {
            "study": study,
            "annotator": annotator,
            "stage": stage,
            "tutorial": stage_tutorial(study, stage),
            # Confirmed once at the start, and once more for a stage with a tutorial of
            # its own before its first batch.
            "new_stage": due if annotator.tutorial_completed_at is not None else None,
            # What the current stage offers and asks (all categories before any stage).
            "categories": stage_categories(stage=stage)
            if stage
            else list(study.categories.order_by("order", "bit")),
            "settings": stage.answer_settings if stage else DEFAULT_ANSWER_SETTINGS,
            "dimensions": list(stage.dimensions.order_by("position")) if stage else [],
            "first_time": annotator.tutorial_completed_at is None or due is not None,
            "keys": ITEM_KEYS,
            "likert_keys": LIKERT_KEYS,
            "pairwise_keys": PAIRWISE_KEYS,
            "ranking_keys": RANKING_KEYS,
        },
    )
