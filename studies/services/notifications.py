"""E-mails to annotators: their waiting period for a stage is over."""

from datetime import datetime

from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from ..links import absolute_url
from ..models import (
    Annotator,
    StageUnlockNotice,
    Study,
)
from ..selectors.stages import StageStatus, annotators_stage_states, stage_group_rules


def unlock_notifications_send(*, now: datetime | None = None) -> int:
    """E-mail each annotator (with a stored address) whose waiting period for their
    next stage has ended, once per stage, with their invitation link on ``SITE_URL``.
    Returns the number of e-mails sent.

    The states are read per open study for all its annotators at once
    (``annotators_stage_states``), so the queries grow with the studies, not with
    the people."""
    now = now or timezone.now()
    sent = 0
    for study in Study.objects.filter(status=Study.Status.OPEN).order_by("pk"):
        annotators = Annotator.objects.filter(study=study, is_active=True).exclude(email="")
        people = {a.pk: a for a in annotators.order_by("pk")}
        if not people:
            continue
        states = annotators_stage_states(study=study, annotators=annotators, now=now)
        rules = stage_group_rules(study_id=study.pk)  # (a group may wait its own time)
        notified = set(
            StageUnlockNotice.objects.filter(annotator__in=annotators).values_list(
                "annotator_id", "stage_id"
            )
        )
        for pk, annotator in people.items():
            for state in states.get(pk, ()):
                if (
                    state.status in (StageStatus.OPEN, StageStatus.BUSY)
                    and state.unlocks_at is not None
                    and rules.wait(state.stage, annotator.group_id).total_seconds() > 0
                    and state.unlocks_at <= now
                    and (pk, state.stage.pk) not in notified
                ):
                    _unlock_mail_send(annotator, study, state.stage)
                    StageUnlockNotice.objects.create(
                        annotator=annotator, stage=state.stage, sent_at=now
                    )
                    sent += 1
    return sent


def _unlock_mail_send(annotator: Annotator, study: Study, stage) -> None:
    link = absolute_url(reverse("studies:invitation", args=[annotator.access_token]))
    send_mail(
        subject=f"{study.title}: the next stage is open for you",
        message=(
            f"Hello {annotator.pseudonym},\n\n{stage.public_name} of "
            f'"{study.title}" is now open for you. Continue with your '
            f"personal link:\n{link}\n\nThank you for taking part."
        ),
        from_email=None,
        recipient_list=[annotator.email],
    )
