"""Item drafts on the annotation pages: the page posts the item's choices as they
change (``static/js/annotate.js``, debounced, and once more as the page is left), and
the item page fills the form from them again (:mod:`studies.services.drafts`)."""

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from ..models import Assignment, ItemDraft
from ..services import AssignmentClosed
from ..services.drafts import draft_initial, item_draft_save
from .common import Step, annotator_page


def item_draft_read(*, assignment: Assignment, number: int = 1) -> dict | None:
    """The draft of item ``number`` as the item panel's read gives it (a ranking's one
    item is read here; the other panels read it with their answers)."""
    return (
        ItemDraft.objects.filter(assignment=assignment, number=number)
        .values("base_revision", "fields")
        .first()
    )


def form_from_draft(form, draft: dict | None, *, revision: int) -> bool:
    """Fill the unbound ``form`` from ``draft`` when it is not stale; whether it was."""
    initial = draft_initial(form, draft, revision=revision)
    if initial is None:
        return False
    form.initial = initial
    return True


@require_POST
@annotator_page(after=Step.TRAINING)
def item_draft(request: HttpRequest, assignment_id: int, number: int) -> HttpResponse:
    """Keep the posted choices of an item as its draft: 204, or a plain-text refusal
    (404 not the annotator's item, 409 the batch takes no answers, 400 a bad draft)."""
    try:
        item_draft_save(
            annotator_id=request.annotator.pk,
            assignment_id=assignment_id,
            number=number,
            data=request.POST,
        )
    except Assignment.DoesNotExist:
        raise Http404("No such response candidate.") from None
    except AssignmentClosed as exc:
        return HttpResponse(exc.messages[0], status=409, content_type="text/plain")
    except ValidationError as exc:
        return HttpResponse(" ".join(exc.messages), status=400, content_type="text/plain")
    return HttpResponse(status=204)
