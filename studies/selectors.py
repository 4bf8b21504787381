"""Reads on studies (HackSoft style): querysets and plain data for views and admin."""

import math
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, F, Prefetch, Q, QuerySet
from django.utils import timezone

from . import hot_path
from .models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    BatchItem,
    DialogueContext,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
    Study,
)


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
            in_progress=Count("id", filter=Assignment.open_q()),
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


# --- the REST API (studies/apis.py) ---------------------------------------------------------
# Querysets in a stable order (pagination needs one), each list in a fixed number of
# queries. Annotators appear by pseudonym only: these never load their rows, so no
# e-mail, platform id or access token can reach a response.


def study_list() -> QuerySet[Study]:
    return Study.objects.order_by("-created_at", "-id")


def study_by_slug(*, slug: str, with_configuration: bool = False) -> Study | None:
    """The study, optionally with its stages, groups and categories prefetched."""
    qs = Study.objects.filter(slug=slug)
    if with_configuration:
        qs = qs.prefetch_related(
            Prefetch("stages", queryset=Stage.objects.order_by("position")),
            Prefetch("groups", queryset=AnnotatorGroup.objects.order_by("name")),
            Prefetch("categories", queryset=ErrorCategory.objects.order_by("order", "bit")),
        )
    return qs.first()


def stage_list(*, study: Study) -> QuerySet[Stage]:
    return Stage.objects.filter(study=study).order_by("position")


def group_list(*, study: Study) -> QuerySet[AnnotatorGroup]:
    return AnnotatorGroup.objects.filter(study=study).order_by("name", "id")


def context_list(*, study: Study) -> QuerySet[DialogueContext]:
    """Contexts with their reflections (one query for any number of contexts)."""
    return (
        DialogueContext.objects.filter(study=study)
        .order_by("external_id", "id")
        .prefetch_related(Prefetch("reflections", queryset=Reflection.objects.order_by("id")))
    )


def batch_list(*, study: Study, stage_id: int | None = None) -> QuerySet[Batch]:
    """Batches with their context's dialogue id and their reflection ids in batch order."""
    qs = Batch.objects.filter(stage__study=study)
    if stage_id is not None:
        qs = qs.filter(stage_id=stage_id)
    return (
        qs.annotate(context_external_id=F("context__external_id"))
        .order_by("stage__position", "context__external_id", "id")
        .prefetch_related(
            Prefetch(
                "items",
                queryset=BatchItem.objects.order_by("position").only(
                    "batch_id", "reflection_id", "position"
                ),
            )
        )
    )


def _with_pseudonym(qs, prefix: str = ""):
    return qs.annotate(annotator_pseudonym=F(f"{prefix}annotator__pseudonym"))


def assignment_list(
    *,
    study: Study,
    statuses: Iterable[str] = (),
    stage_id: int | None = None,
    group_id: int | None = None,
) -> QuerySet[Assignment]:
    """The study's assignments by id, with ``annotator_pseudonym``; empty ``statuses``
    means every status."""
    qs = Assignment.objects.filter(stage__study=study)
    if statuses:
        qs = qs.filter(status__in=list(statuses))
    if stage_id is not None:
        qs = qs.filter(stage_id=stage_id)
    if group_id is not None:
        qs = qs.filter(group_id=group_id)
    return _with_pseudonym(qs).order_by("id")


def assignment_get(*, assignment_id: int) -> Assignment | None:
    """One assignment with ``annotator_pseudonym``."""
    return _with_pseudonym(Assignment.objects.filter(pk=assignment_id)).first()


def judgement_list(
    *,
    study: Study,
    statuses: Iterable[str] = (Assignment.Status.SUBMITTED,),
    stage_id: int | None = None,
    group_id: int | None = None,
    source: str | None = None,
    kind: str | None = None,
    annotator: str | None = None,
    since_id: int | None = None,
) -> QuerySet[Judgement]:
    """The study's judgements, each with its assignment's stage, group, status and
    recurrence, the annotator's pseudonym and the reflection's source and kind, in
    one query (joined, not prefetched). ``annotator`` is a pseudonym; ``since_id``
    keeps judgements with a larger id (incremental downloads)."""
    qs = Judgement.objects.filter(assignment__stage__study=study)
    if statuses:
        qs = qs.filter(assignment__status__in=list(statuses))
    if stage_id is not None:
        qs = qs.filter(assignment__stage_id=stage_id)
    if group_id is not None:
        qs = qs.filter(assignment__group_id=group_id)
    if source is not None:
        qs = qs.filter(reflection__source=source)
    if kind is not None:
        qs = qs.filter(reflection__kind=kind)
    if annotator is not None:
        qs = qs.filter(assignment__annotator__pseudonym=annotator)
    if since_id is not None:
        qs = qs.filter(pk__gt=since_id)
    return _with_pseudonym(qs, "assignment__").annotate(
        stage_id=F("assignment__stage_id"),
        group_id=F("assignment__group_id"),
        assignment_status=F("assignment__status"),
        is_recurring=F("assignment__is_recurring"),
        source=F("reflection__source"),
        kind=F("reflection__kind"),
    )


def error_category_slugs(*, study_id: int) -> list[tuple[int, str]]:
    """(bit, slug) of the study's error categories in display order."""
    return list(
        ErrorCategory.objects.filter(study_id=study_id)
        .order_by("order", "bit")
        .values_list("bit", "slug")
    )


def study_stage_group_progress(*, study: Study) -> list[dict]:
    """Data collection per stage and group, in five aggregate queries.

    Per stage (in order): ``batches``, and ``batches_complete``, the batches with k
    submitted assignments in every group. Per group within it: ``slots`` (batches ×
    k), ``assignments`` counted by status, ``batches_complete`` (k submitted
    assignments of this group), ``judgements`` (of submitted assignments, attention
    checks left out: what the analysis reads) and ``judgements_stored`` (every stored
    answer, whatever became of its assignment).
    """
    k = study.overlap_k
    stages = list(
        Stage.objects.filter(study=study)
        .order_by("position")
        .annotate(n_batches=Count("batches"))
        .values("id", "name", "position", "n_batches")
    )
    groups = list(group_list(study=study).values("id", "name"))
    by_status = {
        (row["stage_id"], row["group_id"], row["status"]): row["n"]
        for row in Assignment.objects.filter(stage__study=study)
        .order_by()
        .values("stage_id", "group_id", "status")
        .annotate(n=Count("id"))
    }
    analysed = Judgement.analysed_q()
    judgements = {
        (row["assignment__stage_id"], row["assignment__group_id"]): row
        for row in Judgement.objects.filter(assignment__stage__study=study)
        .order_by()
        .values("assignment__stage_id", "assignment__group_id")
        .annotate(stored=Count("id"), analysed=Count("id", filter=analysed))
    }
    complete: dict[tuple[int, int], set[int]] = {}
    for stage_id, group_id, batch_id in (
        Assignment.objects.filter(stage__study=study, status=Assignment.Status.SUBMITTED)
        .order_by()
        .values("stage_id", "group_id", "batch_id")
        .annotate(n=Count("id"))
        .filter(n__gte=k)
        .values_list("stage_id", "group_id", "batch_id")
    ):
        complete.setdefault((stage_id, group_id), set()).add(batch_id)

    rows = []
    for stage in stages:
        cells = []
        for group in groups:
            key = (stage["id"], group["id"])
            cells.append(
                {
                    "id": group["id"],
                    "name": group["name"],
                    "slots": stage["n_batches"] * k,
                    "assignments": {
                        status: by_status.get((*key, status), 0)
                        for status in Assignment.Status.values
                    },
                    "batches_complete": len(complete.get(key, ())),
                    "judgements": judgements.get(key, {}).get("analysed", 0),
                    "judgements_stored": judgements.get(key, {}).get("stored", 0),
                }
            )
        in_every_group = (
            set.intersection(*(complete.get((stage["id"], g["id"]), set()) for g in groups))
            if groups
            else set()
        )
        rows.append(
            {
                "id": stage["id"],
                "name": stage["name"],
                "position": stage["position"],
                "batches": stage["n_batches"],
                "batches_complete": len(in_every_group),
                "groups": cells,
            }
        )
    return rows


# --- the annotation page's hot path ------------------------------------------------------
# Who is asking and what an item's panel shows: statements of the hot path module, read
# on every annotator request.


def annotator_of_session(*, session_key: str, slug: str) -> Annotator | None:
    """``hot_path.annotator_of_session`` at the current time."""
    return hot_path.annotator_of_session(session_key=session_key, slug=slug, now=timezone.now())


item_panel_reads = hot_path.item_panel_reads
