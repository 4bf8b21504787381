"""Stage refusals (a stage locked or waiting, no work to hand out) and wait exemptions;
the states themselves are read by :mod:`studies.selectors.stages`."""

from datetime import datetime

from django.core.exceptions import ValidationError
from django.utils.html import format_html

from ..errors import ErrorCode
from ..models import Annotator, Stage, WaitExemption
from ..times import time_display, time_html


class NoWorkAvailable(Exception):
    """Nothing to hand out right now (a normal outcome, shown as a friendly page):
    ``code`` says why, the message says it to the annotator."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


class StageLocked(Exception):
    """The annotator's next stage is not open to them yet."""

    def __init__(self, stage: Stage, unlocks_at: datetime | None):
        self.stage = stage
        self.unlocks_at = unlocks_at
        self.code = ErrorCode.STAGE_WAITING if unlocks_at else ErrorCode.STAGE_LOCKED
        when = f"at {time_display(unlocks_at)}" if unlocks_at else "after the previous stage"
        super().__init__(f"{stage.public_name} opens for you {when}.")

    @property
    def html(self) -> str:
        """The message for a page: the unlock time in the annotator's time zone."""
        if self.unlocks_at is None:
            return str(self)
        return format_html(
            "{} opens for you at {}.", self.stage.public_name, time_html(self.unlocks_at)
        )


def wait_exemption_grant(
    *, annotator: Annotator, stage: Stage, by=None, reason: str = ""
) -> WaitExemption:
    """Let ``annotator`` start ``stage`` without its minimum wait (recorded)."""
    if stage.study_id != annotator.study_id:
        raise ValidationError({"stage": "This stage belongs to another study."})
    if not stage.study.stages.filter(position__lt=stage.position).exists():
        raise ValidationError({"stage": "The first stage has no waiting period."})
    exemption, _ = WaitExemption.objects.get_or_create(
        annotator=annotator, stage=stage, defaults={"granted_by": by, "reason": reason}
    )
    return exemption
