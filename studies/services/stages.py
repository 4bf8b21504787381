"""Stage refusals (a stage locked or waiting, no work to hand out), wait exemptions,
the categories a stage offers and the final mark of its error scheme; the states themselves are read by :mod:`studies.selectors.stages`."""

from collections.abc import Iterable
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html

from ..errors import ErrorCode
from ..locks import stages_locked
from ..models import Annotator, AnnotatorGroup, ErrorCategory, Stage, WaitExemption
from ..times import time_display, time_html


class NoWorkAvailable(Exception):
    """Nothing to hand out right now (a normal outcome, shown as a friendly page):
    ``code`` says why, the message says it to the annotator."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


#: What an annotator reads about a stage waiting for its error categories.
AWAITING_SCHEME_MESSAGE = (
    "{stage} opens once the researchers have finalised its error categories. Please come "
    "back later."
)


class StageLocked(Exception):
    """The annotator's next stage is not open to them yet: an earlier stage is not
    finished, its wait runs, or (``awaiting_scheme``) its error categories, which come
    from coding, are not final yet."""

    def __init__(self, stage: Stage, unlocks_at: datetime | None, *, awaiting_scheme=False):
        self.stage = stage
        self.unlocks_at = None if awaiting_scheme else unlocks_at
        if awaiting_scheme:
            self.code = ErrorCode.STAGE_SCHEME_NOT_FINAL
            super().__init__(AWAITING_SCHEME_MESSAGE.format(stage=stage.public_name))
            return
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


def stage_categories_validate(*, stage: Stage, categories: Iterable[ErrorCategory]) -> None:
    """A stage offers only categories of its own study (the database's trigger of
    migration 0022 refuses the rest too). Raises ``ValidationError`` on ``categories``."""
    foreign = sorted(c.label for c in categories if c.study_id != stage.study_id)
    if foreign:
        raise ValidationError(
            {
                "categories": f"A stage offers only its own study's error categories; "
                f"not of this study: {', '.join(foreign)}."
            }
        )


def stage_groups_validate(*, stage: Stage, groups: Iterable[AnnotatorGroup]) -> None:
    """A stage takes only groups of its own study (the trigger of migration 0031 refuses
    the rest too), and keeps every group that already has work in it: taking a group
    out would strand its assignments. None chosen: every group takes part. Raises
    ``ValidationError`` on ``groups``."""
    groups = list(groups)
    foreign = sorted(g.name for g in groups if g.study_id != stage.study_id)
    if foreign:
        raise ValidationError(
            {
                "groups": "A stage takes only its own study's groups; not of this study: "
                f"{', '.join(foreign)}."
            }
        )
    if stage.pk is None or not groups:
        return
    chosen = {g.pk for g in groups}
    working = (
        AnnotatorGroup.objects.filter(assignments__stage=stage)
        .exclude(pk__in=chosen)
        .distinct()
        .order_by("name")
        .values_list("name", flat=True)
    )
    if working:
        raise ValidationError(
            {
                "groups": "Annotators of these groups already have batches in this stage, so "
                f"they keep taking part: {', '.join(working)}."
            }
        )


@transaction.atomic
def stage_scheme_mark_final(*, stage: Stage, by) -> Stage:
    """Mark the error scheme of ``stage``, whose categories come from coding, final: it
    opens to annotators from now on (``Stage.awaits_scheme``); who and when are
    recorded. Refused (``ValidationError``, nothing written) for a stage whose
    categories do not come from coding, one already marked, or one that would offer no
    category. Locks the stage row."""
    stage = stages_locked().select_related("study").get(pk=stage.pk)
    if not stage.categories_from_coding:
        raise ValidationError(
            f"{stage.name}: its categories do not come from coding, so it has no scheme to "
            "mark final (it opens as usual)."
        )
    if stage.scheme_final_at is not None:
        raise ValidationError(
            f"{stage.name}: its scheme was marked final already, on "
            f"{stage.scheme_final_at:%Y-%m-%d %H:%M} UTC."
        )
    if not stage.study.categories.exists():
        raise ValidationError(
            f"{stage.name}: the study has no error categories yet; turn the codes into "
            "categories first."
        )
    stage.scheme_final_at = timezone.now()
    stage.scheme_final_by = by
    stage.save(update_fields=["scheme_final_at", "scheme_final_by"])
    return stage
