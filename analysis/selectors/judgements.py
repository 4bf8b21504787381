"""The one place ORM rows become a DataFrame (one query, no per-row Python)."""

from datetime import UTC

import numpy as np
import pandas as pd
from django.db.models import (
    BigIntegerField,
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    Max,
    Q,
    TextField,
)
from django.db.models.functions import Cast, Extract

from studies.models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    BatchItem,
    Code,
    Coder,
    CrowdEntry,
    DescriptionCoding,
    DialogueContext,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from studies.selectors import study_stage_categories

from ..metrics.protocol.descriptions import CODING_COLUMNS, PRIMARY, SECOND
from ..models import AutomaticScore
from ..report.build import Category
from ..report.descriptions import Codings

JUDGEMENT_COLUMNS = {
    "id": "judgement_id",
    "assignment__batch__stage_id": "stage_id",
    "assignment__annotator__group_id": "group_id",
    "assignment__annotator_id": "annotator_id",
    "assignment__batch__context_id": "context_id",
    "reflection_id": "reflection_id",
    "reflection__source": "source",
    "reflection__kind": "kind",
    "coherent": "coherent",
    "error_flags": "error_flags",
    "most_evident_bit": "most_evident_bit",
    "empathy": "empathy",
    "assignment__is_recurring": "is_recurring",
    "assignment__status": "assignment_status",
    "described": "described",  # the answer has a description (annotated below)
    "assignment_id": "assignment_id",
    "seconds_spent": "seconds_spent",
}

# Columns named from the study's own (small) tables by the key each judgement carries,
# so no name is sent once per judgement: frame column -> (key column, model, field).
JUDGEMENT_NAMES = {
    "stage": ("stage_id", Stage, "name"),
    "stage_position": ("stage_id", Stage, "position"),
    "group": ("group_id", AnnotatorGroup, "name"),
    "annotator": ("annotator_id", Annotator, "pseudonym"),
    "dialogue_id": ("context_id", DialogueContext, "external_id"),
}

# Text columns with few distinct values, as categoricals (categories in sorted order):
# every group-by, mask and duplicate check then works on integer codes instead of
# hashing strings again.
JUDGEMENT_CATEGORICALS = ("stage", "group", "annotator", "source", "kind")

# Read only to name the columns above; not in the frame.
JUDGEMENT_NAMING_KEYS = ("stage_id", "group_id", "context_id")


def report_categories(*, study_id: int) -> list[Category]:
    """The study's error categories in display order, as the report names them."""
    rows = ErrorCategory.objects.filter(study_id=study_id).order_by("order", "bit")
    return [
        Category(slug, label, bit) for slug, label, bit in rows.values_list("slug", "label", "bit")
    ]


def judgements_frame(
    *,
    study_id: int,
    include_expired: bool = False,
    exclude_sources: tuple[str, ...] = (),
    columns: tuple[str, ...] = (),
) -> pd.DataFrame:
    """The coherence protocol's judgements that count for analysis
    (``Judgement.objects.analysed().coherence()``), one row each: ``JUDGEMENT_COLUMNS`` read per row, ``JUDGEMENT_NAMES`` from the study's
    tables, ``JUDGEMENT_CATEGORICALS`` as categoricals; only ``columns`` (frame column
    names) when given, to hold less."""
    wanted = set(columns)
    names = {
        column: spec for column, spec in JUDGEMENT_NAMES.items() if not wanted or column in wanted
    }
    keys = {key for key, _, _ in names.values()}
    fields = {
        field: name
        for field, name in JUDGEMENT_COLUMNS.items()
        if not wanted or name in wanted or name in keys
    }
    qs = (
        Judgement.objects.analysed(
            include_expired=include_expired, excluded_sources=exclude_sources
        )
        .coherence()
        .filter(assignment__batch__stage__study_id=study_id)
        .annotate(
            described=ExpressionWrapper(~Q(error_description=""), output_field=BooleanField())
        )
        .order_by()
        .values_list(*fields)
    )
    frame = pd.DataFrame.from_records(qs.iterator(chunk_size=20_000), columns=list(fields.values()))
    named = {
        column: _names_by_key(
            frame[key], model=model, field=field, study_id=study_id,
            categorical=column in JUDGEMENT_CATEGORICALS,
        )
        for column, (key, model, field) in names.items()
    }  # fmt: skip
    frame = frame.assign(**named).astype(
        {
            column: "category"
            for column in JUDGEMENT_CATEGORICALS
            if column not in named and column in frame
        }
    )
    return frame.drop(
        columns=[key for key in JUDGEMENT_NAMING_KEYS if key in frame and key not in wanted]
    )


def _names_by_key(
    keys: pd.Series, *, model, field: str, study_id: int, categorical: bool
) -> np.ndarray | pd.Categorical:
    """``field`` of the study's ``model`` row each key points to (categorical: as
    codes over the sorted names that occur, like ``astype("category")``)."""
    rows = model.objects.filter(study_id=study_id).order_by().values_list("pk", field)
    lookup = pd.DataFrame.from_records(list(rows), columns=["pk", "value"])
    position = pd.Index(lookup["pk"]).get_indexer(keys)
    if (position < 0).any():
        raise ValueError(f"judgements of another study's {model._meta.verbose_name}")
    if not categorical:
        return lookup["value"].take(position).to_numpy()
    names = pd.Categorical(lookup["value"])
    return pd.Categorical.from_codes(
        names.codes[position], dtype=names.dtype
    ).remove_unused_categories()


def stage_offered_slugs(*, study_id: int) -> dict[str, list[str]]:
    """Stage name → the slugs of the error categories its "No" offers
    (``study_stage_categories``); none in a stage that asks no categories
    (``AnswerSettings.asks_categories``: a free-text stage)."""
    offered = study_stage_categories(study_id=study_id)
    stages = Stage.objects.filter(study_id=study_id).only("name", "no_answer", "empathy_after_yes")
    return {
        stage.name: [c.slug for c in offered[stage.pk]]
        if stage.answer_settings.asks_categories
        else []
        for stage in stages
    }


def description_codings(*, study_id: int) -> Codings:
    """The study's codebook and the codings the report reads: the primary coder's
    (``Coder.objects.primary``) and the second coder's (the first other coder), one
    row per (description, coder, code), in one query."""
    # In the order the codes were added, as the coding page numbers them.
    codebook = list(
        Code.objects.filter(study_id=study_id).order_by("pk").values_list("slug", "label")
    )
    primary = Coder.objects.primary(study_id)
    roles: dict[int, str] = {}
    if primary is not None:
        roles[primary.pk] = PRIMARY
        second = Coder.objects.filter(study_id=study_id).exclude(pk=primary.pk).first()
        if second is not None:
            roles[second.pk] = SECOND
    qs = (
        DescriptionCoding.objects.filter(coder_id__in=list(roles))
        .order_by()
        .values_list("judgement_id", "coder_id", "uninformative", "codes__slug")
    )
    frame = pd.DataFrame.from_records(qs.iterator(chunk_size=20_000), columns=list(CODING_COLUMNS))
    frame["coder"] = frame["coder"].map(roles)
    return Codings(frame=frame, codebook=codebook)


ASSIGNMENT_COLUMNS = {
    "id": "assignment_id",
    "group__name": "group",
    "annotator__pseudonym": "annotator",
    "stage__name": "stage",
    "status": "status",
    "attention_passed": "attention_passed",
    "assigned_at_us": "assigned_at",  # annotated below
    "submitted_at_us": "submitted_at",
}


def _microseconds_since_epoch(field: str) -> Cast:
    """A time as whole microseconds since 1970 UTC (exact: PostgreSQL keeps
    microseconds). Read as integers, a study's times load several times faster than
    as datetime objects (0.6 s less CPU for the 111,000 assignments of a million
    judgements)."""
    return Cast(Extract(field, "epoch", tzinfo=UTC) * 1_000_000, BigIntegerField())


def assignments_frame(*, study_id: int) -> pd.DataFrame:
    """Every assignment of the study, whatever its status (quality: attention checks
    failed, parts of a stage that ended early; waiting periods: submissions and
    claims), one row each. In a study whose work was not recorded
    (``Study.work_recorded``: imported from a published file) the times are missing
    (NaT), so every statistic of times is unknown rather than the import's zero."""
    qs = (
        Assignment.objects.filter(stage__study_id=study_id)
        .annotate(
            assigned_at_us=_microseconds_since_epoch("assigned_at"),
            submitted_at_us=_microseconds_since_epoch("submitted_at"),
        )
        .order_by()
        .values_list(*ASSIGNMENT_COLUMNS)
    )
    frame = pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(ASSIGNMENT_COLUMNS.values())
    )
    recorded = Study.objects.filter(pk=study_id, work_recorded=True).exists()
    for column in ("assigned_at", "submitted_at"):
        frame[column] = (
            pd.to_datetime(frame[column], unit="us", utc=True)
            if recorded
            else pd.Series(pd.NaT, index=frame.index, dtype="datetime64[us, UTC]")
        )
    # Whether a crowd worker's part of the assignment's stage ended early: the few such
    # entries read once and matched by (annotator, stage), not a lookup per assignment.
    ended = CrowdEntry.objects.filter(
        stage__study_id=study_id, outcome=CrowdEntry.Outcome.PARTIAL
    ).values_list("annotator__pseudonym", "stage__name")
    frame["ended_early"] = pd.MultiIndex.from_frame(frame[["annotator", "stage"]]).isin(list(ended))
    return frame


def item_positions(*, study_id: int) -> pd.DataFrame:
    """Where each annotator saw each item: one row per (``assignment_id``,
    ``reflection_id``) of every submitted or expired coherence assignment's shuffled order
    (``Assignment.order``), with ``position`` (1 for the first, the attention check
    counted) and ``kind`` (human, synthetic, attention_check). One query for the
    orders, one for the kinds; the orders spread out in numpy. Empty in a study whose
    work was not recorded (``Study.work_recorded``: imported, its orders made up)."""
    columns = ["assignment_id", "reflection_id", "position", "kind"]
    if not Study.objects.filter(pk=study_id, work_recorded=True).exists():
        return pd.DataFrame(columns=columns)
    # The orders as JSON text ("[12, 9, 14]": a list of ids), split in one go: parsing
    # each list into Python objects and exploding them took 1.6 s of the 111,000
    # assignments of a million judgements (bench/README.md).
    rows = list(
        Assignment.objects.filter(
            stage__study_id=study_id,
            stage__instrument=Stage.Instrument.COHERENCE,  # (the others order pairs)
            status__in=[Assignment.Status.SUBMITTED, Assignment.Status.EXPIRED],
        )
        .order_by()
        .values_list("id", Cast("order", TextField()))
        .iterator(chunk_size=20_000)
    )
    texts = [text[1:-1].strip() for _, text in rows]
    lengths = np.array([text.count(",") + 1 if text else 0 for text in texts], dtype=np.int64)
    if not lengths.sum():
        return pd.DataFrame(columns=columns)
    ids = np.array(",".join(t for t in texts if t).split(","), dtype=np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    reflections = Reflection.objects.filter(context__study_id=study_id).order_by()
    known = pd.DataFrame.from_records(
        list(reflections.values_list("id", "kind")), columns=["id", "kind"]
    )
    found = pd.Index(known["id"]).get_indexer(ids)
    return pd.DataFrame(
        {
            "assignment_id": np.repeat(np.array([pk for pk, _ in rows], dtype=np.int64), lengths),
            "reflection_id": ids,
            "position": np.arange(len(ids), dtype=np.int64) - starts + 1,
            "kind": np.where(found >= 0, known["kind"].to_numpy()[found], None),
        }
    )[columns]


def annotator_ids_by_pseudonym(*, study_id: int) -> dict[str, int]:
    return dict(Annotator.objects.filter(study_id=study_id).values_list("pseudonym", "pk"))


def stage_names(*, study_id: int) -> list[str]:
    """The study's stage names by position."""
    return list(
        Stage.objects.filter(study_id=study_id).order_by("position").values_list("name", flat=True)
    )


AUTOMATIC_SCORE_COLUMNS = {
    "stage__name": "stage",
    "reflection_id": "reflection_id",
    "evaluator": "evaluator",
    "score": "score",
}


def automatic_scores_frame(*, study_id: int) -> pd.DataFrame:
    """Automatic-evaluator scores of the study's analysed items, one row per (stage,
    reflection, evaluator); ``stage`` is the stage name, as in ``judgements_frame``.

    Only a reflection still in its stage's batch counts (a materials re-import may have
    rebuilt the batch since the scores were imported); attention checks never do.
    """
    qs = (
        AutomaticScore.objects.filter(
            study_id=study_id, reflection__batch_items__batch__stage_id=F("stage_id")
        )
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by("stage__position", "evaluator", "reflection_id")
        .values_list(*AUTOMATIC_SCORE_COLUMNS)
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(AUTOMATIC_SCORE_COLUMNS.values())
    )


def stage_candidate_texts(*, study_id: int) -> pd.DataFrame:
    """The synthetic reflections each stage's batches hold, one row per batch item:
    ``stage``, ``context_id``, ``source``, ``text`` (in the stages' order), for the
    diversity of a stage's candidates."""
    qs = (
        BatchItem.objects.filter(
            batch__stage__study_id=study_id, reflection__kind=Reflection.Kind.SYNTHETIC
        )
        .order_by("batch__stage__position", "batch__context_id", "position")
        .values_list("batch__stage__name", "batch__context_id", "reflection__source",
                     "reflection__text")
    )  # fmt: skip
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=["stage", "context_id", "source", "text"]
    )


def generation_metadata(*, study_id: int) -> pd.Series:
    """The generation metadata of the study's reflections that have any, as JSON text
    indexed by reflection id (text: a study has a handful of distinct settings, parsed
    once each by :func:`analysis.metrics.generation_values`)."""
    qs = (
        Reflection.objects.filter(context__study_id=study_id)
        .exclude(generation={})
        .order_by()
        .values_list("id", Cast("generation", TextField()))
    )
    frame = pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=["reflection_id", "generation"]
    )
    return frame.set_index("reflection_id")["generation"].astype(object)


def automatic_evaluators_list(*, study_id: int) -> list[dict]:
    """The study's automatic evaluators: ``evaluator``, ``origin``, ``n_scores`` and
    ``last_set`` (when an import or a computation last set one), by name."""
    return list(
        AutomaticScore.objects.filter(study_id=study_id)
        .values("evaluator", "origin")
        .annotate(n_scores=Count("id"), last_set=Max("imported_at"))
        .order_by("evaluator", "origin")
    )


# --- the REST API (analysis/apis.py) -----------------------------------------------------


def analysis_run_list(*, study_id: int):
    """The study's runs, newest first, without their (large) reports."""
    from ..models import AnalysisRun

    return (
        AnalysisRun.objects.filter(study_id=study_id)
        .select_related("study")
        .defer("result")
        .order_by("-created_at", "-id")
    )


def analysis_run_get(*, run_id: int):
    """One run with its report, or None."""
    from ..models import AnalysisRun

    return AnalysisRun.objects.select_related("study").filter(pk=run_id).first()
