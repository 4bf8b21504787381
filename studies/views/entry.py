"""Getting in: invitation and crowd links, information sheet and consent, tutorial."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from ..forms import ConsentForm
from ..models import ConsentVersion, Study
from ..selectors import annotator_by_token
from ..services import (
    annotator_complete_tutorial,
    annotator_consent,
    annotator_decline,
    annotator_join_crowd,
    consent_version_current,
    crowd_identity,
)
from .common import annotator_page, session_sign_in


def index(request: HttpRequest) -> HttpResponse:
    return render(request, "studies/index.html")


def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """Sign the holder of an invitation link in to their study (no password)."""
    annotator = annotator_by_token(token=token)
    if annotator is None:
        return render(request, "studies/invalid_link.html", status=404)
    session_sign_in(request, annotator)
    annotator.last_seen_at = timezone.now()
    annotator.save(update_fields=["last_seen_at"])
    return redirect("studies:home", slug=annotator.study.slug)


def join(request: HttpRequest, slug: str) -> HttpResponse:
    """Entry from a crowd platform (Prolific or MTurk parameters)."""
    study = get_object_or_404(Study, slug=slug)
    if request.GET.get("assignmentId") == "ASSIGNMENT_ID_NOT_AVAILABLE":
        return render(request, "studies/annotate/crowd_preview.html", {"study": study})
    identity = crowd_identity(request.GET)
    if identity is None:
        return render(
            request,
            "studies/invalid_link.html",
            {"reason": "This link lacks your crowd-platform id. Please start the study "
             "again from the platform."},
            status=400,
        )  # fmt: skip
    platform, participant, data = identity
    try:
        annotator = annotator_join_crowd(
            study=study, platform=platform, participant_id=participant, data=data
        )
    except ValidationError as exc:
        return render(
            request, "studies/invalid_link.html", {"reason": " ".join(exc.messages)}, status=403
        )
    session_sign_in(request, annotator)
    annotator.last_seen_at = timezone.now()
    annotator.save(update_fields=["last_seen_at"])
    return redirect("studies:home", slug=study.slug)


@annotator_page(consent=False, tutorial=False)
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
@annotator_page(consent=False, tutorial=False)
def decline(request: HttpRequest) -> HttpResponse:
    annotator = request.annotator
    has_answers = annotator.assignments.filter(judgements__isnull=False).exists()
    removed = annotator_decline(annotator=annotator)
    return render(
        request,
        "studies/annotate/declined.html",
        {"study": request.study, "has_answers": has_answers, "removed": removed},
    )


@annotator_page(tutorial=False)
def tutorial(request: HttpRequest) -> HttpResponse:
    study, annotator = request.study, request.annotator
    if request.method == "POST":
        annotator_complete_tutorial(annotator=annotator)
        messages.success(request, "Thank you. You can reopen the tutorial at any time.")
        return redirect("studies:home", slug=study.slug)
    return render(
        request,
        "studies/annotate/tutorial.html",
        {
            "study": study,
            "annotator": annotator,
            "categories": list(study.categories.order_by("order", "bit")),
            "first_time": annotator.tutorial_completed_at is None,
        },
    )
