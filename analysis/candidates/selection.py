"""The candidate selection: from a study's pools to a stage's synthetic reflections.

Per context, in the pool's order (as imported):

1. duplicates are removed: the same text as an earlier candidate (exact), or the same
   but for case and punctuation; a candidate with its context's human reflection's
   text is removed too (a batch cannot hold two equal texts);
2. the remaining candidates are embedded (:mod:`.embeddings`) and clustered by
   agglomerative clustering, merging while the linkage distance is below the threshold
   (default 0.7, cosine distance, average linkage: the papers name neither);
3. each cluster's representative is its member with the most whitespace tokens (a tie
   drawn with the seed);
4. ``per_context`` clusters are drawn with the seed (all of them when there are no
   more), optionally in turn across the values of one generation setting of their
   representatives;
5. the drawn representatives become the synthetic reflections of the chosen stage,
   written as a materials file would write them (each batch with the human reflection
   and an attention check), in one transaction with the clusters and their members.

The same pool, parameters and seed give the same selection. The run also records the
diversity of the pool and of the selection (:mod:`.statistics`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pandas as pd
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from studies.datafiles.materials import ContextSpec, Item, MaterialsImportError, materials_write
from studies.locks import studies_locked
from studies.models import PoolCandidate, Reflection, Stage, Study

from ..models import CandidateCluster, CandidateSelection, ClusterMember
from . import clustering
from .embeddings import EmbeddingModelError, embed
from .parameters import SelectionParameters
from .pool import pool_frame, pool_settings
from .statistics import diversity_of


class CandidateSelectionError(Exception):
    """The selection cannot run or finish; the message says why, nothing was written."""


def stage_selection_problem(stage: Stage) -> str | None:
    """Why the selection cannot fill ``stage``, or None."""
    if stage.batches.exists():
        return (
            f"Stage {stage.name!r} already has batches: a selection fills a stage that has "
            "none. Choose another stage, or add one."
        )
    if Stage.objects.filter(pk=stage.pk, gate__isnull=False).exists():
        return f"Stage {stage.name!r} is gated: its items come from its gate."
    return None


def candidate_selection_create(
    *,
    study: Study,
    stage: Stage,
    parameters: SelectionParameters,
    seed: int | None = None,
    user=None,
) -> CandidateSelection:
    """A queued selection, once its inputs are checked (ValidationError by field
    otherwise, nothing written)."""
    found = dict(parameters.problems())
    candidate_selections_expire()
    if stage.study_id != study.pk:
        found["stage"] = "Choose a stage of this study."
    elif problem := stage_selection_problem(stage):
        found["stage"] = problem
    elif CandidateSelection.objects.filter(
        stage=stage,
        status__in=[CandidateSelection.Status.QUEUED, CandidateSelection.Status.RUNNING],
    ).exists():
        found["stage"] = f"A selection for stage {stage.name!r} is already queued or running."
    if not PoolCandidate.objects.filter(context__study=study).exists():
        found["__all__"] = (
            "The study has no candidate pool: import one first (Import materials, "
            "with “A candidate pool” ticked)."
        )
    elif without_human := list(
        PoolCandidate.objects.filter(context__study=study)
        .exclude(context__reflections__kind=Reflection.Kind.HUMAN)
        .order_by("context__external_id")
        .values_list("context__external_id", flat=True)
        .distinct()[:5]
    ):
        found["__all__"] = (
            "These contexts of the pool have no human reflection, which every batch needs: "
            f"{', '.join(without_human)}. Import them again with it."
        )
    if parameters.stratify_by and parameters.stratify_by not in pool_settings(study_id=study.pk):
        found["stratify_by"] = (
            f"No pool candidate has the generation setting {parameters.stratify_by!r}."
        )
    if seed is not None and not 0 <= seed < 2**63:
        found["seed"] = "The seed is a whole number from 0."
    if found:
        raise ValidationError(found)
    return CandidateSelection.objects.create(
        study=study,
        stage=stage,
        seed=study.seed if seed is None else seed,
        parameters=parameters.as_dict(),
        requested_by=user if user is not None and user.is_authenticated else None,
    )


Progress = Callable[[str], None]


def _lost_after() -> timedelta:
    """A selection queued this long without starting, or running this long, was lost
    (its message, or its worker killed at the time limit)."""
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)


def candidate_selections_expire() -> int:
    """Mark failed the selections a worker can no longer be running: queued without
    starting, or running, for longer than the task's hard time limit. Returns how many."""
    limit = timezone.now() - _lost_after()
    Status = CandidateSelection.Status
    return CandidateSelection.objects.filter(
        Q(status=Status.QUEUED, created_at__lt=limit)
        | Q(status=Status.RUNNING, started_at__lt=limit)
    ).update(
        status=Status.FAILED,
        error="The selection was lost (its task never started, or its worker stopped or "
        "hit the time limit): start it again.",
        finished_at=timezone.now(),
    )


def candidate_selection_run(*, selection_id: int, progress: Progress | None = None) -> None:
    """Run a queued selection; a failure is recorded on it with its message (and
    raised as CandidateSelectionError), and nothing but cached embeddings is written."""
    # Claimed by one update: a message delivered twice starts the selection once.
    claimed = CandidateSelection.objects.filter(
        pk=selection_id, status=CandidateSelection.Status.QUEUED
    ).update(status=CandidateSelection.Status.RUNNING, started_at=timezone.now())
    if not claimed:
        return
    selection = CandidateSelection.objects.select_related("study", "stage").get(pk=selection_id)

    def report(message: str) -> None:
        CandidateSelection.objects.filter(pk=selection.pk).update(progress=message[:200])
        if progress:
            progress(message)

    try:
        result = _select(selection, report)
    except (CandidateSelectionError, EmbeddingModelError, MaterialsImportError) as exc:
        message = (
            "; ".join(f"{p.where}: {p.message}" for p in exc.problems)
            if isinstance(exc, MaterialsImportError)
            else str(exc)
        )
        CandidateSelection.objects.filter(pk=selection.pk).update(
            status=CandidateSelection.Status.FAILED,
            error=message,
            progress="",
            finished_at=timezone.now(),
        )
        raise CandidateSelectionError(message) from exc
    except BaseException as exc:
        CandidateSelection.objects.filter(pk=selection.pk).update(
            status=CandidateSelection.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        raise
    report(f"Done: {result['counts']['selected']} candidates in stage {selection.stage.name!r}.")


def _select(selection: CandidateSelection, report: Progress) -> dict:
    params = SelectionParameters.from_dict(selection.parameters)
    study = selection.study
    if selection.stage_id is None:
        raise CandidateSelectionError("Its stage was deleted.")
    pool = pool_frame(study_id=study.pk)
    if pool.empty:
        raise CandidateSelectionError("The study's candidate pool is empty.")
    humans = dict(
        Reflection.objects.filter(context__study=study, kind=Reflection.Kind.HUMAN).values_list(
            "context_id", "text"
        )
    )
    report(f"Removing duplicates from {len(pool):,} candidates")
    pool["kept_of"] = -1
    # A batch cannot hold the human reflection twice, nor twice but for case and
    # punctuation.
    human_keys = {c: clustering.normalised(t) for c, t in humans.items()}
    pool["same_as_human"] = [
        clustering.normalised(text) == human_keys.get(context)
        for text, context in zip(pool["text"], pool["context_id"], strict=True)
    ]
    exact = near = 0
    for _, rows in pool.groupby("context_id", sort=False).groups.items():
        positions = pool.index.get_indexer(rows)
        kept_of, n_exact, n_near = clustering.duplicates(pool["text"].to_numpy()[positions])
        pool.loc[rows, "kept_of"] = positions[kept_of]
        exact += n_exact
        near += n_near

    def embedding_progress(done: int, total: int) -> None:
        report(f"Embedding {done:,} of {total:,} new texts ({params.model})")

    report(f"Embedding {pool['text'].nunique():,} texts ({params.model})")
    vectors = embed(pool["text"].tolist(), model=params.model, progress=embedding_progress)

    report("Clustering")
    candidates = pool.loc[(pool["kept_of"] == pool.index) & ~pool["same_as_human"]]
    clusters: list[dict] = []
    for dialogue_id, part in candidates.groupby("dialogue_id", sort=True):
        rng = random.Random(f"{selection.seed}/candidates/{dialogue_id}")
        labels = clustering.clusters(
            vectors[part.index.to_numpy()],
            threshold=params.threshold,
            metric=params.metric,
            linkage=params.linkage,
        )
        tokens = [clustering.token_count(t) for t in part["text"]]
        chosen = clustering.representatives(labels, tokens, rng)
        numbers = sorted(chosen)
        strata = (
            [_setting(part["generation"].iloc[chosen[n]].get(params.stratify_by)) for n in numbers]
            if params.stratify_by
            else None
        )
        drawn = set(clustering.sample(numbers, params.per_context, rng, strata))
        ids = part["id"].to_numpy()
        for number in numbers:
            clusters.append(
                {
                    "context_id": int(part["context_id"].iloc[0]),
                    "dialogue_id": dialogue_id,
                    "number": number,
                    "representative": int(ids[chosen[number]]),
                    "members": ids[labels == number].tolist(),
                    "selected": number in drawn,
                }
            )
    # Each removed duplicate joins its kept copy's cluster.
    cluster_of = {m: i for i, c in enumerate(clusters) for m in c["members"]}
    ids = pool["id"].to_numpy()
    duplicates_of = [
        (int(ids[i]), cluster_of.get(int(ids[k])))
        for i, k in enumerate(pool["kept_of"].to_numpy())
        if i != k
    ]

    selected = [c for c in clusters if c["selected"]]
    if not selected:
        raise CandidateSelectionError(
            "Nothing to select: every candidate repeats its context's human reflection."
        )
    by_id = pool.set_index("id")
    counts = {
        "candidates": len(pool),
        "contexts": int(pool["context_id"].nunique()),
        "exact_duplicates": exact,
        "near_duplicates": near,
        "same_as_human": int((pool["same_as_human"] & (pool["kept_of"] == pool.index)).sum()),
        "clusters": len(clusters),
        "selected": len(selected),
        # Contexts whose every candidate repeats their human reflection: no batch.
        "contexts_without_candidates": int(
            pool["context_id"].nunique() - candidates["context_id"].nunique()
        ),
        # Contexts with fewer clusters than asked for: all of theirs are selected.
        "contexts_short": int(
            (
                pd.Series([c["dialogue_id"] for c in clusters]).value_counts() < params.per_context
            ).sum()
        ),
    }
    report("Computing the diversity of the pool and of the selection")
    diversity = _diversity(pool, vectors, selected, params, selection.seed)
    report("Writing the stage")
    with transaction.atomic():
        studies_locked().get(pk=study.pk)
        stage = Stage.objects.filter(pk=selection.stage_id).first()
        if stage is None:
            raise CandidateSelectionError("Its stage was deleted while it ran.")
        if problem := stage_selection_problem(stage):
            raise CandidateSelectionError(problem)
        specs = _stage_specs(study, stage, selected, by_id)
        materials_write(study=study, specs=specs)
        reflections = dict(
            (((context_id, source, text), pk))
            for pk, context_id, source, text in Reflection.objects.filter(
                context__study=study, batch_items__batch__stage=stage, kind="synthetic"
            ).values_list("pk", "context_id", "source", "text")
        )
        stored = CandidateCluster.objects.bulk_create(
            CandidateCluster(
                selection=selection,
                context_id=c["context_id"],
                number=c["number"],
                representative_id=c["representative"],
                selected=c["selected"],
                reflection_id=reflections.get(
                    (
                        c["context_id"],
                        by_id.at[c["representative"], "source"],
                        by_id.at[c["representative"], "text"],
                    )
                )
                if c["selected"]
                else None,
            )
            for c in clusters
        )
        ClusterMember.objects.bulk_create(
            [
                ClusterMember(cluster=stored[i], candidate_id=m)
                for i, c in enumerate(clusters)
                for m in c["members"]
            ]
            + [
                ClusterMember(cluster=stored[i], candidate_id=m, duplicate=True)
                for m, i in duplicates_of
                if i is not None
            ]
        )
        CandidateSelection.objects.filter(pk=selection.pk).update(
            status=CandidateSelection.Status.DONE,
            counts=counts,
            diversity=diversity,
            error="",
            finished_at=timezone.now(),
        )
    return {"counts": counts}


def _setting(value) -> str:
    from ..metrics.protocol.generation import setting_value

    return setting_value(value)


def _stage_specs(
    study: Study, stage: Stage, selected: list[dict], by_id: pd.DataFrame
) -> list[ContextSpec]:
    """The selected representatives as a materials file would give them."""
    humans = {
        r.context_id: r
        for r in Reflection.objects.filter(context__study=study, kind=Reflection.Kind.HUMAN)
    }
    specs: dict[int, ContextSpec] = {}
    for c in selected:
        context_id = c["context_id"]
        where = f'dialogue "{c["dialogue_id"]}"'
        spec = specs.get(context_id)
        if spec is None:
            human = humans.get(context_id)
            spec = specs[context_id] = ContextSpec(
                external_id=c["dialogue_id"],
                where=where,
                fmt="json",
                human=Item(None, human.source, human.text, "human", human.generation, where)
                if human
                else None,
            )
        row = by_id.loc[c["representative"]]
        spec.synthetic.append(
            Item(
                stage.name,
                row["source"],
                row["text"],
                "synthetic",
                dict(row["generation"]),
                f"{where}, cluster {c['number']}",
            )
        )
    return list(specs.values())


def _diversity(
    pool: pd.DataFrame,
    vectors: np.ndarray,
    selected: list[dict],
    params: SelectionParameters,
    seed: int,
) -> dict:
    position = pd.Series(pool.index, index=pool["id"])
    chosen = position.loc[[c["representative"] for c in selected]].to_numpy()
    return {
        "pool": diversity_of(
            texts=pool["text"].tolist(),
            contexts=pool["dialogue_id"].tolist(),
            sources=pool["source"].tolist(),
            vectors=vectors,
            pairs_per_context=params.pool_pairs_per_context,
            seed=seed,
        ),
        "selection": diversity_of(
            texts=pool["text"].to_numpy()[chosen].tolist(),
            contexts=pool["dialogue_id"].to_numpy()[chosen].tolist(),
            sources=pool["source"].to_numpy()[chosen].tolist(),
            vectors=vectors[chosen],
            seed=seed,
        ),
        "pool_pairs_per_context": params.pool_pairs_per_context,
        "model": params.model,
    }
