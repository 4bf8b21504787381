"""Annotator-facing pages.

The full annotation flow (consent, tutorial, batches) is built on these entry points;
the invitation link is the one way in for invited annotators.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from .selectors import annotator_by_token

SESSION_ANNOTATOR = "annotator_id"


def index(request: HttpRequest) -> HttpResponse:
    return render(request, "studies/index.html")


def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """Sign the holder of an invitation link in to their study (no password)."""
    annotator = annotator_by_token(token=token)
    if annotator is None:
        return render(request, "studies/invalid_link.html", status=404)
    request.session.cycle_key()
    request.session[SESSION_ANNOTATOR] = annotator.pk
    annotator.last_seen_at = timezone.now()
    annotator.save(update_fields=["last_seen_at"])
    return render(
        request, "studies/welcome.html", {"annotator": annotator, "study": annotator.study}
    )
