"""E-mails to annotators: their waiting period for a stage is over."""

from datetime import datetime

from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from ..models import (
    Annotator,
    StageUnlockNotice,
    Study,
)
from ..selectors.stages import StageStatus, annotator_stage_states


def unlock_notifications_send(*, now: datetime | None = None, base_url: str = "") -> int:
    """E-mail each annotator (with a stored address) whose waiting period for their
    next stage has ended, once per stage. Returns the number of e-mails sent."""
    now = now or timezone.now()
    sent = 0
    annotators = (
        Annotator.objects.filter(is_active=True, study__status=Study.Status.OPEN)
        .exclude(email="")
        .select_related("study")
    )
    for annotator in annotators.iterator(chunk_size=500):
        notified = set(annotator.unlock_notices.values_list("stage_id", flat=True))
        for state in annotator_stage_states(annotator=annotator, now=now):
            if (
                state.status in (StageStatus.OPEN, StageStatus.BUSY)
                and state.unlocks_at is not None
                and state.stage.min_wait.total_seconds() > 0
                and state.unlocks_at <= now
                and state.stage.pk not in notified
            ):
                link = base_url + reverse("studies:invitation", args=[annotator.access_token])
                send_mail(
                    subject=f"{annotator.study.title}: the next stage is open for you",
                    message=(
                        f"Hello {annotator.pseudonym},\n\n{state.stage.public_name} of "
                        f'"{annotator.study.title}" is now open for you. Continue with your '
                        f"personal link:\n{link}\n\nThank you for taking part."
                    ),
                    from_email=None,
                    recipient_list=[annotator.email],
                )
                StageUnlockNotice.objects.create(
                    annotator=annotator, stage=state.stage, sent_at=now
                )
                sent += 1
    return sent
