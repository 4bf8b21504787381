"""Item drafts: the choices on an item the annotator has not saved yet, kept on the
server as the page sends them (debounced) and shown again when the item is opened,
on this device or another. A draft is never an answer (see :mod:`studies.models.drafts`).
"""

from __future__ import annotations

import json
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import QueryDict
from django.utils import timezone

from ..hot_path.saves import AssignmentClosed, closed_reason, locked_assignment
from ..models import CHECK_MESSAGES, DRAFT_MAX_CHARS, Assignment, ItemDraft

#: Form fields that say how the page was sent, not what was chosen: never kept.
NOT_CHOICES = frozenset(
    {"csrfmiddlewaretoken", "seconds_spent", "shown_at", "form_mode", "revision", "draft_sent"}
)


def draft_fields(data: QueryDict) -> dict[str, list[str]]:
    """The choices of a posted form: field name → its values, without
    :data:`NOT_CHOICES`."""
    return {name: data.getlist(name) for name in data if name not in NOT_CHOICES}


def _sent_ms(data: QueryDict) -> int | None:
    raw = data.get("draft_sent") or ""
    if raw and not raw.isdigit():
        raise ValidationError({"draft_sent": "When the draft was sent is a whole number."})
    return int(raw) if raw else None


def _base_revision(data: QueryDict) -> int:
    raw = data.get("revision") or "0"
    if not raw.isdigit():
        raise ValidationError({"revision": "The revision is a whole number, 0 or more."})
    return int(raw)


def item_draft_save(
    *,
    annotator_id: int,
    assignment_id: int,
    number: int,
    data: QueryDict,
    now: datetime | None = None,
) -> ItemDraft | None:
    """Keep the choices of item ``number`` of the annotator's open assignment, as the
    answer form posts them (``revision``: the saved answer's revision the page showed).
    Replaces the item's earlier draft (unless that one was sent later by the page's
    clock, ``draft_sent``); no choices at all delete it (None). Raises
    ``Assignment.DoesNotExist`` (not the annotator's, or no such item),
    :class:`AssignmentClosed` (the batch takes no answers) or ``ValidationError`` (a
    bad revision, or more than :data:`DRAFT_MAX_CHARS` characters of choices); nothing
    is written then."""
    now = now or timezone.now()
    fields = draft_fields(data)
    if len(json.dumps(fields, ensure_ascii=False)) > DRAFT_MAX_CHARS:
        raise ValidationError(CHECK_MESSAGES["draft_fields_capped"])
    base_revision, sent_ms = _base_revision(data), _sent_ms(data)
    with transaction.atomic():
        # Locked as a save locks it: a draft racing the batch's submission waits for it,
        # then finds the batch closed (and submitting drops the drafts before it).
        assignment = locked_assignment(assignment_id, annotator_id)
        if not 1 <= number <= len(assignment.order):
            raise Assignment.DoesNotExist("No such response candidate.")
        closed = closed_reason(assignment, now)
        if closed is None and not fields:  # nothing chosen (the page threw it away)
            ItemDraft.objects.filter(assignment=assignment, number=number).delete()
            return None
        if closed is None:
            stored = ItemDraft.objects.filter(assignment=assignment, number=number).first()
            if stored and sent_ms is not None and (stored.sent_ms or 0) > sent_ms:
                return stored  # (the assignment's lock orders the drafts of its items)
            draft = ItemDraft(
                assignment=assignment,
                number=number,
                base_revision=base_revision,
                fields=fields,
                sent_ms=sent_ms,
                updated_at=now,
            )
            ItemDraft.objects.bulk_create(
                [draft],
                update_conflicts=True,
                unique_fields=["assignment", "number"],
                update_fields=["base_revision", "fields", "sent_ms", "updated_at"],
            )
    if closed is not None:
        raise AssignmentClosed(closed)
    return draft


def draft_initial(form, draft: dict | None, *, revision: int) -> dict | None:
    """The initial values of ``form`` (an unbound answer or ranking form) from a
    draft (``{"base_revision": …, "fields": {…}}``), or None when there is none or it
    is stale: made before the saved answer's latest revision ``revision``. Each field
    reads the draft as its widget reads a posted form."""
    if not draft or draft["base_revision"] != revision:
        return None
    data = QueryDict(mutable=True)
    for name, values in draft["fields"].items():
        data.setlist(name, values)
    return {
        name: field.widget.value_from_datadict(data, {}, form.add_prefix(name))
        for name, field in form.fields.items()
        if name not in NOT_CHOICES
    }


def assignment_drafts_clear(*, assignment_id: int) -> int:
    """Drop the drafts of a batch that takes no more answers; how many there were."""
    deleted, _ = ItemDraft.objects.filter(assignment_id=assignment_id).delete()
    return deleted
