"""Reads on studies (HackSoft style): querysets and plain data for views and admin."""

import math
from dataclasses import dataclass

from django.db.models import Count, F, Q

from .models import Annotator, Assignment, ErrorCategory, Judgement, Study


def annotator_by_token(*, token: str) -> Annotator | None:
    """The active annotator whose invitation link carries ``token``, else None."""
    if not token or len(token) > 64:
        return None
    return (
        Annotator.objects.select_related("study", "group")
        .filter(access_token=token, is_active=True)
        .first()
    )


@dataclass(frozen=True)
class CapacityRow:
    """Work of one group in one stage, in assignment slots (batches × k)."""

    stage: object
    group: object
    slots: int
    done: int
    in_progress: int
    open: int
    annotators: int
    annotators_needed: int


def study_capacity(*, study: Study) -> list[CapacityRow]:
    """Per stage and group: slots done, in progress and open, and how many more
    annotators must be invited to fill the open slots.

    Each existing annotator of the group can still take ``m`` minus the batches they
    hold in the stage; invitations are needed for the open slots beyond that, ``m``
    per new annotator. (A batch takes at most one slot per annotator, so with few
    batches left the real need can be slightly higher.)
    """
    k, m = study.overlap_k, study.batches_per_stage
    stages = list(study.stages.annotate(n_batches=Count("batches")).order_by("position"))
    groups = list(study.groups.annotate(n_annotators=Count("annotators")).order_by("name"))
    counts = {
        (row["stage_id"], row["group_id"]): row
        for row in Assignment.objects.filter(stage__study=study)
        .values("stage_id", "group_id")
        .annotate(
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            in_progress=Count("id", filter=Q(status__in=Assignment.OPEN)),
        )
    }
    rows = []
    for stage in stages:
        for group in groups:
            c = counts.get((stage.pk, group.pk), {})
            done, in_progress = c.get("done", 0), c.get("in_progress", 0)
            slots = stage.n_batches * k
            open_ = max(0, slots - done - in_progress)
            capacity_left = max(0, group.n_annotators * m - done - in_progress)
            rows.append(
                CapacityRow(
                    stage=stage,
                    group=group,
                    slots=slots,
                    done=done,
                    in_progress=in_progress,
                    open=open_,
                    annotators=group.n_annotators,
                    annotators_needed=math.ceil(max(0, open_ - capacity_left) / m),
                )
            )
    return rows


def study_has_judgements(*, study_id: int) -> bool:
    return Judgement.objects.filter(assignment__stage__study_id=study_id).exists()


def error_category_is_used(*, category: ErrorCategory) -> bool:
    """Whether any judgement of the category's study selected it."""
    return (
        Judgement.objects.filter(assignment__stage__study_id=category.study_id)
        .annotate(_hit=F("error_flags").bitand(1 << category.bit))
        .filter(_hit__gt=0)
        .exists()
    )
