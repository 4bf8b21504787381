"""What is kept about a person a screening answer ended (screened out): counts per
answer (``ScreeningTally``), shared by everyone screened out and linked to nobody; a
response row without answers, dated by the day only; their annotator row without
its personal data (the model's ``PERSONAL_FIELDS``) except the crowd platform id,
which keeps the screening from being retaken; and, for a crowd worker, the entry's
screened-out outcome (the return they are paid with)."""

from __future__ import annotations

import operator
from datetime import datetime
from functools import reduce

from django.db.models import Exists, F, OuterRef, Q

from ..models import Annotator, CrowdEntry, Questionnaire, ScreeningTally
from ..models.people import SCREENED_OUT
from ..personal_data import personal_fields

#: What blocks re-entry: a crowd worker's platform id (cleared only by the purge).
KEPT_AT_SCREEN_OUT = ("platform_participant_id",)


def screened_out_exists() -> Exists:
    """For an annotator query (``OuterRef("pk")``): whether a screening answer ended
    their participation (the admin's column and filter)."""
    return Exists(Annotator.objects.filter(SCREENED_OUT, pk=OuterRef("pk")))


def screened_out_forget(*, annotator: Annotator) -> None:
    """Clear the personal data of a screened-out ``annotator`` (e-mail, invitation
    link, platform data, when last seen), keeping ``KEPT_AT_SCREEN_OUT``."""
    row = Annotator.objects.filter(pk=annotator.pk)
    for item in personal_fields():
        if item.model is Annotator and item.field not in KEPT_AT_SCREEN_OUT:
            item.erase(row)  # as the purge erases it (a secret gets a fresh value)
    row.update(last_seen_at=None)


def tally_keys(answer) -> list[str]:
    """The ``ScreeningTally.answer`` keys one answer adds to."""
    if answer.choice_ids:
        return [f"choice:{pk}" for pk in answer.choice_ids]
    if answer.scale is not None:
        return [f"scale:{answer.scale}"]
    return [ScreeningTally.TEXT]


def screening_tally(*, questionnaire: Questionnaire, cleaned: list) -> None:
    """Add one to each count (rows made on first use; one UPDATE adds, so concurrent
    screenings never lose a count)."""
    keys = [(None, ScreeningTally.PEOPLE)] + [
        (a.question.pk, key) for a in cleaned for key in (ScreeningTally.ANSWERED, *tally_keys(a))
    ]
    ScreeningTally.objects.bulk_create(
        [
            ScreeningTally(questionnaire=questionnaire, question_id=qid, answer=key)
            for qid, key in keys
        ],
        ignore_conflicts=True,
    )
    rows = reduce(operator.or_, (Q(question_id=qid, answer=key) for qid, key in keys))
    ScreeningTally.objects.filter(rows, questionnaire=questionnaire).update(count=F("count") + 1)


def questionnaire_screened_out_return(*, annotator: Annotator, now: datetime | None = None):
    """A screened-out crowd worker is sent back from the stage they entered with the
    screened-out outcome (``crowd_entry_close``: recorded once, the first outcome
    stands; asking again gives the same return). None for invited annotators."""
    from .crowd import crowd_entry_close

    entry = (
        CrowdEntry.objects.filter(annotator=annotator)
        .select_related("stage")
        .order_by("stage__position")
        .first()
    )
    if entry is None:
        return None
    return crowd_entry_close(
        annotator=annotator, stage=entry.stage, outcome=CrowdEntry.Outcome.SCREENED_OUT, now=now
    )
