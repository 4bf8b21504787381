"""Automatic scores computed here: BLEU-4 and ROUGE-L of every synthetic reflection
against its context's human reflection (``analysis.metrics.overlap``), stored as the
automatic scores of the evaluators ``bleu`` and ``rouge_l`` (docs/analysts/automatic-scores.md,
"Computing BLEU-4 and ROUGE-L").

One rule keeps computed and imported scores of a metric apart: the study holds a
metric's scores from one origin only. Computing a metric replaces its earlier computed
scores; imported scores under its name (ignoring case: ``BLEU`` is ``bleu``) are
refused, by the computation and by the import alike
(``metrics.overlap.computed_metric_named``), unless the caller asks to replace them,
which deletes the other origin's scores of that metric (``automatic_scores_make_room``).
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from studies.errors import ErrorCode
from studies.locks import studies_locked
from studies.models import BatchItem, Reflection, Study

from .metrics.overlap import METRICS, SCORERS, computed_metric_named
from .models import AutomaticScore

logger = logging.getLogger(__name__)


#: The Celery task computing a study's scores (``analysis.tasks``), called by name.
COMPUTE_TASK = "analysis.compute_scores"
WRITE_BATCH_SIZE = 1000


@dataclass
class ComputeSummary:
    metrics: tuple[str, ...]
    reflections: int = 0
    created: int = 0
    replaced: int = 0
    imported_deleted: int = 0
    without_reference: int = 0

    def __str__(self) -> str:
        text = (
            f"Computed {' and '.join(self.metrics)} for {self.reflections} synthetic "
            f"reflection{'s' if self.reflections != 1 else ''} ({self.created} scores; "
            f"{self.replaced} computed earlier were replaced)."
        )
        if self.imported_deleted:
            text += f" {self.imported_deleted} imported scores of the same name were deleted."
        if self.without_reference:
            text += (
                f" {self.without_reference} synthetic reflection(s) of contexts without a "
                "human reflection were not scored."
            )
        return text


def automatic_scores_metrics_clean(metrics) -> tuple[str, ...]:
    """The metrics asked for, in ``METRICS`` order; ``ValidationError`` naming an
    unknown one."""
    asked = list(metrics or ())
    if not asked:
        raise ValidationError(
            f"Name at least one metric to compute: {', '.join(METRICS)}.",
            code=ErrorCode.SCORES_METRIC_UNKNOWN,
        )
    unknown = [m for m in asked if m not in METRICS]
    if unknown:
        raise ValidationError(
            f"Unknown metric {', '.join(map(repr, unknown))}: the metrics computed here are "
            f"{', '.join(METRICS)}.",
            code=ErrorCode.SCORES_METRIC_UNKNOWN,
        )
    return tuple(m for m in METRICS if m in asked)


def automatic_scores_imported_as_metrics(*, study: Study, metrics) -> dict[str, list[str]]:
    """For each of ``metrics``, the names (``BLEU``, ``Rouge_L``...) under which the
    study holds imported scores of that computed metric; only metrics that have some."""
    found: dict[str, list[str]] = {}
    stored = (
        AutomaticScore.objects.filter(study=study, origin=AutomaticScore.Origin.IMPORTED)
        .order_by("evaluator")
        .values_list("evaluator", flat=True)
        .distinct()
    )
    for name in stored:
        metric = computed_metric_named(name)
        if metric in metrics:
            found.setdefault(metric, []).append(name)
    return found


def automatic_scores_make_room(*, study: Study, metrics, origin: str) -> int:
    """Delete the study's scores of ``metrics`` (computed metric names) from the other
    origin than ``origin``; returns how many. Must be called inside a transaction
    holding the study's row lock (the import's and the computation's)."""
    metrics = set(metrics)
    if not metrics:
        return 0
    other = (
        AutomaticScore.Origin.IMPORTED
        if origin == AutomaticScore.Origin.COMPUTED
        else AutomaticScore.Origin.COMPUTED
    )
    candidates = AutomaticScore.objects.filter(study=study, origin=other)
    names = {
        name
        for name in candidates.values_list("evaluator", flat=True).distinct()
        if computed_metric_named(name) in metrics
    }
    if not names:
        return 0
    deleted, _ = candidates.filter(evaluator__in=names).delete()
    return deleted


def automatic_scores_compute_check(*, study: Study, metrics, replace: bool) -> tuple[str, ...]:
    """Everything that refuses a computation, before any work: the cleaned metrics, or a
    ``ValidationError`` with the reason."""
    metrics = automatic_scores_metrics_clean(metrics)
    if not Reflection.objects.filter(context__study=study, kind=Reflection.Kind.HUMAN).exists():
        raise ValidationError(
            f'The study "{study.slug}" has no human reflections to score against: '
            "import its materials first.",
            code=ErrorCode.SCORES_NO_REFERENCE,
        )
    conflicts = automatic_scores_imported_as_metrics(study=study, metrics=metrics)
    if conflicts and not replace:
        named = "; ".join(
            f"{metric}: imported as {', '.join(map(repr, names))}"
            for metric, names in conflicts.items()
        )
        raise ValidationError(
            f"The study holds imported scores under the name of a metric computed here "
            f"({named}). Replace them to compute the metric here (their scores are deleted), "
            "or rename that evaluator in the file and import it again.",
            code=ErrorCode.SCORES_IMPORTED_UNDER_METRIC_NAME,
        )
    return metrics


def _pairs(study: Study) -> tuple[list[tuple[int, int]], list[str], list[str], int]:
    """(stage id, reflection id), reference and hypothesis texts of every synthetic item
    of the study's batches whose context has a human reflection; and how many items
    have none. Two queries."""
    references = dict(
        Reflection.objects.filter(context__study=study, kind=Reflection.Kind.HUMAN)
        .order_by()
        .values_list("context_id", "text")
    )
    rows = (
        BatchItem.objects.filter(
            batch__stage__study=study, reflection__kind=Reflection.Kind.SYNTHETIC
        )
        .order_by("batch__stage__position", "batch_id", "position")
        .values_list("batch__stage_id", "reflection_id", "batch__context_id", "reflection__text")
    )
    keys, refs, hyps, missing = [], [], [], 0
    for stage_id, reflection_id, context_id, text in rows.iterator(chunk_size=5000):
        reference = references.get(context_id)
        if reference is None:
            missing += 1
            continue
        keys.append((stage_id, reflection_id))
        refs.append(reference)
        hyps.append(text)
    return keys, refs, hyps, missing


def automatic_scores_compute(*, study: Study, metrics, replace: bool = False) -> ComputeSummary:
    """Score every synthetic reflection of ``study`` against its context's human
    reflection with each of ``metrics`` and store the scores (origin computed), replacing
    the metric's earlier computed scores. ``ValidationError`` (nothing written) for an
    unknown metric, a study without human reflections, or imported scores under a
    metric's name without ``replace``.

    One durable transaction holding the study's row lock, the lock the scores import
    takes too: two computations (or a computation and an import) of one study run one
    after the other, never interleaved.
    """
    automatic_scores_metrics_clean(metrics)  # a bad name fails before the lock
    with transaction.atomic(durable=True):
        study = studies_locked().get(pk=study.pk)
        metrics = automatic_scores_compute_check(study=study, metrics=metrics, replace=replace)
        keys, references, hypotheses, missing = _pairs(study)
        summary = ComputeSummary(metrics=metrics, reflections=len(keys), without_reference=missing)
        if replace:
            summary.imported_deleted = automatic_scores_make_room(
                study=study, metrics=metrics, origin=AutomaticScore.Origin.COMPUTED
            )
        summary.replaced, _ = AutomaticScore.objects.filter(
            study=study, origin=AutomaticScore.Origin.COMPUTED, evaluator__in=metrics
        ).delete()
        now = timezone.now()
        for metric in metrics:
            scores = SCORERS[metric](references, hypotheses)
            AutomaticScore.objects.bulk_create(
                (
                    AutomaticScore(
                        study=study,
                        stage_id=stage_id,
                        reflection_id=reflection_id,
                        evaluator=metric,
                        score=float(score),
                        origin=AutomaticScore.Origin.COMPUTED,
                        imported_at=now,
                    )
                    for (stage_id, reflection_id), score in zip(keys, scores, strict=True)
                ),
                batch_size=WRITE_BATCH_SIZE,
            )
            summary.created += len(keys)
    return summary


def scores_compute_notice(metrics, *, studies: Sequence[str] = ()) -> str:
    """What the researcher is told once ``automatic_scores_compute_enqueue`` accepted
    ``metrics`` (of ``studies``, when several): on its way to the worker, or computed
    already in Celery's eager mode."""
    from .services import tasks_run_in_process

    what = " and ".join(metrics) + (f" for {', '.join(studies)}" if studies else "")
    if tasks_run_in_process():
        return f"Computed {what}: the scores are listed under Automatic metrics."
    return (
        f"Computing {what} in the background: the scores are listed under Automatic "
        "metrics once stored (reload the page)."
    )


def automatic_scores_compute_enqueue(*, study: Study, metrics, replace: bool = False) -> tuple:
    """Check the computation now (``ValidationError`` with the reason; nothing queued)
    and hand it to the worker, which checks again under the study's lock. In Celery's
    eager mode (``tasks_run_in_process``) it is computed here and now, so a refusal
    reaches the caller as a ``ValidationError`` too. Returns the metrics."""
    from .services import _task, tasks_run_in_process  # the services' one way to tasks

    metrics = automatic_scores_compute_check(study=study, metrics=metrics, replace=replace)
    if tasks_run_in_process():
        automatic_scores_compute(study=study, metrics=metrics, replace=replace)
        return metrics
    try:
        _task(COMPUTE_TASK).apply_async((study.pk, list(metrics), bool(replace)))
    except OperationalError as exc:
        logger.warning("Task queue unreachable; scores of %s not computed (%s).", study.slug, exc)
        raise ValidationError(
            "The task queue is unreachable, so nothing was started: try again in a moment, "
            "or run manage.py compute_scores.",
            code=ErrorCode.SCORES_QUEUE_DOWN,
        ) from exc
    return metrics
