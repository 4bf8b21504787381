"""Builds the JSON report of a study from the judgements DataFrame.

The report is a contract other tools read: keys are
only ever added, never renamed. Everything is computed per annotator group
and per stage over the items of that stage; an *item* is a reflection in a
stage, so the human reflection of a context is one item per stage and the
same reflection across stages (which is what the cross-stage analysis pairs).
Undefined values are ``null``. Only the statistics themselves live in
:mod:`analysis.metrics`; this module slices the data and names the results.

PostgreSQL stores the report as ``jsonb``, which does not keep key order, so
``stage_order`` and ``group_order`` list stages (by position) and groups (by
name) in reading order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from studies.protocol import category_selected, default_mee_merge

from .. import metrics
from .comparisons import ComparisonData, comparisons_build
from .descriptions import (
    Codings,
    codebook_entries,
    crossed_categories_null,
    descriptions_build,
    generation_categories_null,
    stage_categories_null,
)
from .diversity import diversity_build, spread_build
from .gates import GateData, gates_build
from .likert import LikertData, likert_build
from .quality import quality_block
from .questionnaires import QuestionnaireData, questionnaires_build
from .systems import systems_build, systems_empty

REPORT_VERSION = 15


@dataclass(frozen=True)
class Category:
    slug: str
    label: str
    bit: int


def judgements_with_categories(frame: pd.DataFrame, categories: Sequence[Category]) -> pd.DataFrame:
    """The analysed judgements as every report table reads them: adds one boolean
    column per category and ``mee`` (the slug of the most evident error) decoded
    from the stored bit set, and ``item``/``rater``/``human``, vectorised."""
    flags = frame["error_flags"].fillna(0).astype(np.int64).to_numpy()
    columns = {c.slug: category_selected(flags, c.bit) for c in categories}
    by_bit = {c.bit: c.slug for c in categories}
    mee = frame["most_evident_bit"].map(by_bit, na_action="ignore")
    return frame.assign(
        **columns,
        mee=mee,
        item=frame["reflection_id"],
        rater=frame["annotator"],
        coherent=frame["coherent"].astype(bool),
        human=np.where(frame["kind"] == "human", "human", "synthetic"),
    )


def _coherence(cell: pd.DataFrame, *, resamples: int, seed: int) -> dict:
    ratings = cell[["item", "rater"]].assign(
        label=np.where(cell["coherent"], "coherent", "incoherent")
    )
    summary = metrics.agreement_summary(
        ratings=ratings, categories=["coherent", "incoherent"], resamples=resamples, seed=seed
    )
    summary["majority_agreement"] = {
        "coherent": metrics.majority_agreement_ratio(ratings=cell, label_given=cell["coherent"]),
        "incoherent": metrics.majority_agreement_ratio(ratings=cell, label_given=~cell["coherent"]),
    }
    return summary


def _error_categories(cell: pd.DataFrame, categories: Sequence[Category]) -> dict:
    result = {}
    for index, category in enumerate(categories):
        given = cell[category.slug] & ~cell["coherent"]
        # Every category reads the same cell: check its one row per (item, rater) once.
        majority, flagged = metrics.majority_agreement_counts(
            ratings=cell, label_given=given, check_unique=index == 0
        )
        result[category.slug] = {
            "majority_agreement": majority / flagged if flagged else None,
            "n_items_flagged": flagged,
        }
    return result


def _label_distribution(cell: pd.DataFrame, slugs: list[str]) -> dict:
    by_source = metrics.label_distribution(judgements=cell, by="source", categories=slugs)
    by_kind = metrics.label_distribution(judgements=cell, by="human", categories=slugs)
    return {**by_source, **by_kind}


def _most_evident_error(
    cell: pd.DataFrame, slugs: list[str], merge: dict[str, str], *, resamples: int, seed: int
) -> dict:
    variants = {
        "raw": {"consensus": False, "merge": None},
        "consensus_adjusted": {"consensus": True, "merge": None},
        "hallucinatory_merged": {"consensus": False, "merge": merge},
        "hallucinatory_merged_consensus_adjusted": {"consensus": True, "merge": merge},
    }
    return {
        name: metrics.mee_agreement(
            judgements=cell, categories=slugs, resamples=resamples, seed=seed, **options
        )
        for name, options in variants.items()
    }


def _stage_cell(
    cell: pd.DataFrame,
    categories: Sequence[Category],
    offered: Sequence[str],
    mee_merge: dict[str, list[str]],
    *,
    resamples: int,
    seed: int,
) -> dict:
    """One group × stage entry; the most evident error over the ``offered`` slugs (a
    category nobody could choose would still count in Randolph's kappa), over all
    ``categories`` in a stage that offers none (its numbers are then nulled)."""
    slugs = [c.slug for c in categories]
    mee_slugs = [slug for slug in slugs if slug in offered] or slugs
    merge = {
        slug: label for label, merged in mee_merge.items() for slug in merged if slug in mee_slugs
    }
    coherence = _coherence(cell, resamples=resamples, seed=seed)
    return {
        "n_judgements": len(cell),
        "n_items": coherence["n_items"],
        "n_items_total": int(cell["item"].nunique()),
        "raters_per_item": coherence["raters_per_item"],
        "n_annotators": int(cell["rater"].nunique()),
        "coherent_rate": float(cell["coherent"].mean()),
        "coherence": coherence,
        "error_categories": _error_categories(cell, categories),
        "label_distribution": _label_distribution(cell, slugs),
        "human_vs_synthetic": metrics.coherent_rate_test(
            judgements=cell, by="human", order=["human", "synthetic"]
        ),
        "most_evident_error": _most_evident_error(
            cell, mee_slugs, merge, resamples=resamples, seed=seed
        ),
        "empathy": metrics.empathy_agreement(judgements=cell, resamples=resamples, seed=seed),
        "category_sets": metrics.category_set_agreement(
            judgements=cell, categories=mee_slugs, resamples=resamples, seed=seed
        ),
        "agreement_over_time": (
            metrics.agreement_over_time(judgements=cell, submitted=cell["submitted_at"])
            if "submitted_at" in cell
            else []
        ),
    }


def _scores_by_item(cell: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    grouped = cell.groupby("item")["coherent"]
    return grouped.sum().astype(int), grouped.size()


def _inter_group(data: pd.DataFrame, stage_order: list[str], *, resamples: int, seed: int):
    entries = []
    data = data[["stage", "group", "item", "coherent"]]  # only these are read: narrow copies
    for stage in stage_order:
        in_stage = data.loc[data["stage"] == stage]
        groups = sorted(in_stage["group"].unique(), key=str)
        for group_a, group_b in itertools.combinations(groups, 2):
            scores_a, raters_a = _scores_by_item(in_stage.loc[in_stage["group"] == group_a])
            scores_b, raters_b = _scores_by_item(in_stage.loc[in_stage["group"] == group_b])
            correlation = metrics.inter_group_correlation(scores_a=scores_a, scores_b=scores_b)
            between = metrics.between_group_agreement(
                scores={group_a: scores_a, group_b: scores_b},
                raters={group_a: raters_a, group_b: raters_b},
                resamples=resamples,
                seed=seed,
            )
            entries.append(
                {"stage": stage, "groups": [str(group_a), str(group_b)], **correlation, **between}
            )
    return entries


def _automatic_evaluators(
    data: pd.DataFrame, scores: pd.DataFrame | None, stage_order: list[str], group_order: list[str]
) -> list[dict]:
    if scores is None or scores.empty:
        return []
    entries = []
    for (stage, evaluator), rows in scores.groupby(["stage", "evaluator"], sort=False):
        if stage not in stage_order:
            continue
        automatic = rows.set_index("reflection_id")["score"]
        for group in group_order:
            cell = data.loc[(data["stage"] == stage) & (data["group"] == group)]
            if cell.empty:
                continue
            coherence, _ = _scores_by_item(cell)
            correlation = metrics.inter_group_correlation(scores_a=automatic, scores_b=coherence)
            entries.append(
                {"stage": stage, "evaluator": str(evaluator), "group": group, **correlation}
            )
    order = {stage: i for i, stage in enumerate(stage_order)}
    entries.sort(key=lambda e: (order[e["stage"]], e["evaluator"], group_order.index(e["group"])))
    return entries


def report_build(
    *,
    frame: pd.DataFrame,
    study_slug: str,
    parameters: dict,
    categories: Sequence[Category],
    mee_merge: dict[str, list[str]] | None = None,
    scores: pd.DataFrame | None = None,
    generation: pd.Series | None = None,
    progress: Callable[[float], None] | None = None,
    assignments: pd.DataFrame | None = None,
    stages: Sequence[str] = (),
    questionnaires: QuestionnaireData | None = None,
    codings: Codings | None = None,
    offered_categories: Mapping[str, Sequence[str]] | None = None,
    likert: LikertData | None = None,
    comparisons: ComparisonData | None = None,
    gates: list[GateData] | None = None,
    positions: pd.DataFrame | None = None,
    pay: pd.DataFrame | None = None,
    candidate_texts: pd.DataFrame | None = None,
    candidate_vectors: np.ndarray | None = None,
    embeddings_pending: int = 0,
    selections: dict[str, dict] | None = None,
    spread_members: pd.DataFrame | None = None,
) -> dict:
    """The full report. ``frame`` comes from
    :func:`analysis.selectors.judgements.judgements_frame` (already filtered to what
    counts), ``categories`` are the study's error categories in display order,
    ``mee_merge`` the study's most-evident-error merge (``Study.mee_merge``; default
    the protocol's hallucinatory merge), ``scores`` the automatic-evaluator scores
    (``stage``, ``reflection_id``, ``evaluator``, ``score``), ``generation`` the
    reflections' generation metadata as JSON text indexed by reflection id
    (:func:`analysis.selectors.judgements.generation_metadata`). ``progress`` is called with
    the fraction done after each group × stage. ``assignments``
    (:func:`analysis.selectors.judgements.assignments_frame`, every assignment whatever its
    status) and ``stages`` (the study's stage names by position) feed ``quality``
    and ``waiting_periods``; without them both are empty. ``codings``
    (:func:`analysis.selectors.judgements.description_codings`) feed ``descriptions``.
    ``offered_categories`` maps a stage name to the slugs its "No" offered
    (:func:`analysis.selectors.judgements.stage_offered_slugs`; none in a free-text
    stage); a stage not in it offered every category. The statistics of a category a
    stage did not offer are null there (:func:`.descriptions.stage_categories_null`).
    ``likert`` (:func:`analysis.selectors.likert.likert_data`) feeds the ``likert``
    block of the study's Likert stages (:mod:`.likert`; ``frame`` holds the coherence
    protocol's answers only), ``comparisons``
    (:func:`analysis.selectors.comparisons.comparison_data`) the ``pairwise`` and
    ``ranking`` blocks of its pairwise and ranking stages (:mod:`.comparisons`), ``gates``
    (:func:`analysis.selectors.gates.gate_data`) the ``gated`` block (:mod:`.gates`),
    ``positions`` (:func:`analysis.selectors.judgements.item_positions`) the
    ``order_effects`` and the trends' position term, ``pay``
    (:func:`analysis.selectors.pay.pay_rates`) the ``pay`` block, ``candidate_texts``
    (:func:`analysis.selectors.judgements.stage_candidate_texts`), with their embeddings
    ``candidate_vectors`` (rows aligned; None with ``embeddings_pending`` texts not
    embedded yet) and the stages' candidate ``selections``
    (:func:`analysis.selectors.candidates.stage_selections`), the ``diversity`` block,
    and ``spread_members`` (:func:`analysis.selectors.candidates.spread_members`) the
    ``spread`` block (:mod:`.diversity`)."""
    offered_categories = offered_categories or {}
    slugs = [c.slug for c in categories]
    mee_merge = default_mee_merge() if mee_merge is None else mee_merge
    resamples = int(parameters.get("bootstrap_resamples", 1000))
    seed = int(parameters.get("seed", 0))
    report_progress = progress or (lambda fraction: None)
    groups: dict = {}
    stage_order: list[str] = []
    group_order: list[str] = []
    inter_group: list = []
    evaluators: list = []
    systems = systems_empty()
    quality: dict = {}
    waits: dict = {}
    descriptions: dict = {}
    data = (
        metrics.with_positions(judgements_with_categories(frame, categories), positions)
        if not frame.empty
        else None
    )
    if data is not None and assignments is not None and "assignment_id" in data:
        # When each judgement was submitted (its assignment's time): agreement over time.
        submitted = assignments.set_index("assignment_id")["submitted_at"]
        data["submitted_at"] = data["assignment_id"].map(submitted)
    if assignments is not None and not assignments.empty:
        waits = metrics.waiting_periods(assignments=assignments, stage_order=list(stages))
        quality = quality_block(
            judgements=data if data is not None else no_judgements_frame(),
            assignments=assignments,
            parameters=parameters,
        )
    if data is not None:
        stage_order = (
            data[["stage_position", "stage"]]
            .drop_duplicates()
            .sort_values("stage_position")["stage"]
            .tolist()
        )
        group_order = sorted(data["group"].unique().tolist(), key=str)
        # Rows by group and stage as integer codes: one hash of each text column, then
        # cheap integer masks (comparing a million strings per mask is not).
        group_codes, groups_coded = pd.factorize(data["group"])
        stage_codes, stages_coded = pd.factorize(data["stage"])
        group_rows = {g: group_codes == groups_coded.get_loc(g) for g in group_order}
        stage_rows = {s: stage_codes == stages_coded.get_loc(s) for s in stage_order}
        cells = [
            (group, stage)
            for group in group_order
            for stage in stage_order
            if (group_rows[group] & stage_rows[stage]).any()
        ]
        total_steps = len(cells) + 2
        done = 0
        for group in group_order:
            in_group = data.loc[group_rows[group]]
            stages = {}
            for stage in stage_order:
                if (group, stage) not in cells:
                    continue
                cell = in_group.loc[stage_rows[stage][group_rows[group]]]
                offered = offered_categories.get(stage, slugs)
                stages[stage] = stage_categories_null(
                    _stage_cell(
                        cell, categories, offered, mee_merge, resamples=resamples, seed=seed
                    ),
                    slugs,
                    offered,
                )
                done += 1
                report_progress(done / total_steps)
            group_stages = [s for s in stage_order if s in stages]
            human = in_group.loc[in_group["kind"] == "human"]
            groups[group] = {
                "stages": stages,
                "human_cross_stage": [
                    metrics.cross_stage_shift(
                        judgements=human, stage_from=a, stage_to=b, recurring="is_recurring"
                    )
                    for a, b in itertools.pairwise(group_stages)
                ],
                "annotators": metrics.annotator_consistency(
                    judgements=human, stages=group_stages, recurring="is_recurring"
                ),
                "annotators_pooled": metrics.annotator_consistency_pooled(
                    judgements=human, stages=group_stages, recurring="is_recurring"
                ),
            }
        inter_group = _inter_group(data, stage_order, resamples=resamples, seed=seed)
        report_progress((done + 1) / total_steps)
        evaluators = _automatic_evaluators(data, scores, stage_order, group_order)
        systems = systems_build(
            data=data,
            slugs=slugs,
            stage_order=stage_order,
            group_order=group_order,
            scores=scores,
            generation=generation,
            resamples=resamples,
            seed=seed,
            mee_merge=mee_merge,
            crossed=parameters.get("crossed_settings") or (),
        )
        systems["generation_settings"] = generation_categories_null(
            systems["generation_settings"], slugs, offered_categories
        )
        systems["generation_crossed"] = crossed_categories_null(
            systems["generation_crossed"], slugs, offered_categories
        )
        descriptions = descriptions_build(
            data=data,
            codings=codings,
            cells={(g, s): group_rows[g] & stage_rows[s] for g, s in cells},
        )
    report_progress(1.0)
    return {
        "study": study_slug,
        "report_version": REPORT_VERSION,
        "parameters": parameters,
        "n_judgements": len(frame),
        "stage_order": stage_order,
        "group_order": group_order,
        "categories": [{"slug": c.slug, "label": c.label} for c in categories],
        "stage_categories": {
            stage: [slug for slug in slugs if slug in offered_categories.get(stage, slugs)]
            for stage in stage_order
        },
        "most_evident_error_merge": mee_merge,
        "groups": groups,
        "inter_group": inter_group,
        "automatic_evaluators": evaluators,
        **systems,
        "quality": quality,
        "waiting_periods": waits,
        "workload": metrics.workload(judgements=data, assignments=assignments)
        if data is not None
        else [],
        "pay": metrics.pay_summary(
            rates=pay if pay is not None else pd.DataFrame(),
            assignments=assignments,
            judgements=data,
            stage_order=list(stages) or stage_order,
            group_order=group_order,
        ),
        "order_effects": metrics.order_effects(
            judgements=data, stage_order=stage_order, group_order=group_order
        )
        if data is not None
        else {},
        **questionnaires_build(questionnaires),
        "codebook": codebook_entries(codings),
        "descriptions": descriptions,
        "likert": likert_build(likert, resamples=resamples, seed=seed, scores=scores),
        **comparisons_build(comparisons, resamples=resamples, seed=seed),
        "gated": gates_build(gates),
        "diversity": diversity_build(
            candidate_texts,
            list(stages) or stage_order,
            seed=seed,
            vectors=candidate_vectors,
            embeddings_pending=embeddings_pending,
            selections=selections,
        ),
        "spread": spread_build(spread_members, data, list(stages) or stage_order),
    }


def no_judgements_frame() -> pd.DataFrame:
    """The judgements as ``annotator_quality`` reads them, none of them (a study whose
    every batch was rejected still shows the failed attention checks)."""
    columns = ["group", "rater", "stage", "item", "coherent", "seconds_spent", "assignment_id"]
    return pd.DataFrame({column: pd.Series(dtype=object) for column in columns})
