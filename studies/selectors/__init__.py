"""Reads on studies (HackSoft style): querysets and plain data for views and admin."""

from collections.abc import Iterable

from django.db.models import F, Prefetch, Q, QuerySet
from django.utils import timezone

from .. import hot_path
from ..models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    BatchItem,
    DialogueContext,
    ErrorCategory,
    Judgement,
    LikertRating,
    Reflection,
    Stage,
    StageGroupWait,
    Study,
)
from ..personal_data import PURGED_PREFIX
from .progress import GroupProgress, StageProgress, StudyProgress, study_progress
from .readiness import stage_code_warnings, study_missing_for_opening, study_opening_message
from .stages import (
    StageState,
    StageStatus,
    annotator_stage_states,
    annotators_stage_states,
    stage_categories,
    stage_tutorial_due,
    stage_unlock_time,
    study_stage_categories,
)

__all__ = [
    "GroupProgress",
    "StageProgress",
    "StageState",
    "StageStatus",
    "StudyProgress",
    "annotator_stage_states",
    "annotators_stage_states",
    "stage_categories",
    "stage_code_warnings",
    "stage_tutorial_due",
    "stage_unlock_time",
    "study_missing_for_opening",
    "study_opening_message",
    "study_progress",
    "study_stage_categories",
]  # and the functions below


def annotator_by_token(*, token: str) -> Annotator | None:
    """The active annotator whose invitation link carries ``token``, else None. A
    cleared token (``purged-<row id>``: a personal-data purge, a screened-out person)
    opens nothing."""
    if not token or len(token) > 64 or token.startswith(PURGED_PREFIX):
        return None
    return (
        Annotator.objects.select_related("study", "group")
        .filter(access_token=token, is_active=True)
        .first()
    )


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


# --- the REST API (studies/apis/) -------------------------------------------------------------
# Querysets in a stable order (pagination needs one), each list in a fixed number of
# queries. Annotators appear by pseudonym only: these never load their rows, so no
# e-mail, platform id or access token can reach a response.


def study_list() -> QuerySet[Study]:
    return Study.objects.order_by("-created_at", "-id")


def studies_with_configuration() -> QuerySet[Study]:
    """Studies with their stages, groups and categories prefetched (in their orders)."""
    return Study.objects.prefetch_related(
        Prefetch("stages", queryset=_stages_with_groups()),
        Prefetch("groups", queryset=AnnotatorGroup.objects.order_by("name")),
        Prefetch("categories", queryset=ErrorCategory.objects.order_by("order", "bit")),
    )


def stage_list(*, study: Study) -> QuerySet[Stage]:
    """The study's stages in order, with their groups taking part and the groups' own
    waits (for ``Stage.k`` and ``Stage.m``, their study)."""
    return _stages_with_groups().filter(study=study)


def _stages_with_groups() -> QuerySet[Stage]:
    return (
        Stage.objects.select_related("study")
        .prefetch_related(
            Prefetch("groups", queryset=AnnotatorGroup.objects.order_by("name", "id")),
            Prefetch("group_waits", queryset=StageGroupWait.objects.order_by("group__name")),
        )
        .order_by("position")
    )


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
    statuses: Iterable[str] = Assignment.counted_statuses(),
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
    keeps judgements with a larger id (incremental downloads). A Likert stage's answers
    come with their ratings (``ratings``, prefetched with their dimensions: one more
    query per page); the coherence protocol's have none. A pairwise answer comes with
    its second candidate's source (``opponent_source``); ``source`` matches either
    candidate of a pair."""
    qs = Judgement.objects.filter(assignment__stage__study=study).prefetch_related(
        Prefetch(
            "ratings",
            queryset=LikertRating.objects.select_related("dimension").order_by(
                "dimension__position"
            ),
        )
    )
    if statuses:
        qs = qs.filter(assignment__status__in=list(statuses))
    if stage_id is not None:
        qs = qs.filter(assignment__stage_id=stage_id)
    if group_id is not None:
        qs = qs.filter(assignment__group_id=group_id)
    if source is not None:  # (a pair: either candidate's)
        qs = qs.filter(Q(reflection__source=source) | Q(opponent__source=source))
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
        opponent_source=F("opponent__source"),
    )


def study_analysed_sources(*, study: Study) -> list[str]:
    """The sources of a study's reflections that an analysis counts (attention checks
    never are), sorted: what a run or an export may leave out (``excluded_sources``)."""
    return list(
        Reflection.objects.filter(context__study=study)
        .exclude(kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by("source")
        .values_list("source", flat=True)
        .distinct()
    )


def study_generation_keys(*, study: Study) -> list[str]:
    """The settings (keys) of the study's reflections' generation metadata that hold a
    single value (a string, number, true/false or null) somewhere, sorted: what an
    analysis can break its rates down by, or cross. (A study has a handful of distinct
    metadata objects, read once each.)"""
    keys: set[str] = set()
    distinct = (
        Reflection.objects.filter(context__study=study)
        .exclude(generation={})
        .order_by()
        .values_list("generation", flat=True)
        .distinct()
    )
    for metadata in distinct:
        if isinstance(metadata, dict):
            keys |= {
                str(key)
                for key, value in metadata.items()
                if value is None or isinstance(value, str | int | float | bool)
            }
    return sorted(keys)


def error_category_slugs(*, study_id: int) -> list[tuple[int, str]]:
    """(bit, slug) of the study's error categories in display order."""
    return list(
        ErrorCategory.objects.filter(study_id=study_id)
        .order_by("order", "bit")
        .values_list("bit", "slug")
    )


# --- the annotation page's hot path ------------------------------------------------------
# Who is asking and what an item's panel shows: statements of the hot path module, read
# on every annotator request.


def annotator_of_session(*, session_key: str, slug: str) -> Annotator | None:
    """``hot_path.annotator_of_session`` at the current time."""
    return hot_path.annotator_of_session(session_key=session_key, slug=slug, now=timezone.now())


item_panel_reads = hot_path.item_panel_reads
