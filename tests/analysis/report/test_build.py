"""The report of a study annotated through the real services, checked against an
independent computation from the ORM rows (a plain loop, fine in a test)."""

import json
from collections import defaultdict

import numpy as np
import pytest
from statsmodels.stats import inter_rater

from analysis.models import AutomaticScore
from analysis.parameters import analysis_parameters_clean
from analysis.report.build import report_build
from analysis.selectors.judgements import judgements_frame, report_categories
from analysis.services import analysis_run_compute
from studies.models import Assignment, Judgement, Reflection
from studies.services import assignment_reject

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_resamples": 50}


@pytest.fixture
def annotated_study(shared_annotated_study):
    """Built once for the module: every test here takes this study and no other."""
    return shared_annotated_study


def counted_judgements(study, *, include_expired=False, exclude_sources=()):
    statuses = {Assignment.Status.SUBMITTED} | (
        {Assignment.Status.EXPIRED} if include_expired else set()
    )
    return [
        j
        for j in Judgement.objects.filter(assignment__stage__study=study).select_related(
            "assignment__annotator__group", "assignment__stage", "reflection"
        )
        if j.assignment.status in statuses
        and j.reflection.kind != Reflection.Kind.ATTENTION_CHECK
        and j.reflection.source not in exclude_sources
    ]


def expected_fleiss(judgements, group, stage):
    per_item = defaultdict(lambda: [0, 0])
    for j in judgements:
        if j.assignment.annotator.group.name == group and j.assignment.stage.name == stage:
            per_item[j.reflection_id][0 if j.coherent else 1] += 1
    table = np.array(list(per_item.values()))
    return inter_rater.fleiss_kappa(table, method="fleiss"), len(table)


def test_report_matches_an_independent_computation_from_the_rows(annotated_study):
    run = analysis_run_compute(study=annotated_study, parameters=FAST)
    report = run.result
    rows = counted_judgements(annotated_study)
    # 3 contexts x 2 stages x 2 groups x 3 annotators x 3 analysed items (no attention).
    assert report["n_judgements"] == len(rows) == 108
    assert report["stage_order"] == ["GPT-2 stage", "GPT-3 stage"]
    assert report["group_order"] == ["Expert", "Layperson"]
    for group in ("Expert", "Layperson"):
        for stage in ("GPT-2 stage", "GPT-3 stage"):
            cell = report["groups"][group]["stages"][stage]
            kappa, n_items = expected_fleiss(rows, group, stage)
            assert cell["n_items"] == n_items == 9
            assert cell["raters_per_item"] == 3
            assert cell["coherence"]["fleiss_kappa"] == pytest.approx(kappa)
            in_cell = [
                j
                for j in rows
                if j.assignment.annotator.group.name == group and j.assignment.stage.name == stage
            ]
            assert cell["coherent_rate"] == pytest.approx(
                sum(j.coherent for j in in_cell) / len(in_cell)
            )
            shares = cell["label_distribution"]
            assert set(shares) == {"Human", stage.split()[0], "human", "synthetic"}
            for share in shares.values():
                assert sum(share.values()) == pytest.approx(1.0)


def test_only_submitted_non_rejected_non_attention_judgements_count(annotated_study):
    rejected = Assignment.objects.filter(annotator__group__name="Expert").first()
    assignment_reject(assignment=rejected, reason="Answered at random.")
    expired = Assignment.objects.filter(
        annotator__group__name="Layperson", status=Assignment.Status.SUBMITTED
    ).first()
    Assignment.objects.filter(pk=expired.pk).update(
        status=Assignment.Status.EXPIRED, expired_at=expired.submitted_at
    )
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    assert report["n_judgements"] == len(counted_judgements(annotated_study)) == 108 - 3 - 3

    with_expired = analysis_run_compute(
        study=annotated_study, parameters={**FAST, "include_expired": True}
    ).result
    assert with_expired["n_judgements"] == 108 - 3
    assert with_expired["parameters"]["include_expired"] is True
    attention = Judgement.objects.filter(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
    assert attention.count() == 36  # recorded, never analysed


def test_excluded_sources_leave_the_report(annotated_study):
    report = analysis_run_compute(
        study=annotated_study, parameters={**FAST, "excluded_sources": ["GPT-2"]}
    ).result
    assert report["parameters"]["excluded_sources"] == ["GPT-2"]
    expected = counted_judgements(annotated_study, exclude_sources=("GPT-2",))
    # 3 contexts x 2 GPT-2 candidates x 3 annotators x 2 groups = 36 judgements left out.
    assert report["n_judgements"] == len(expected) == 108 - 36
    shares = report["groups"]["Expert"]["stages"]["GPT-2 stage"]["label_distribution"]
    assert set(shares) == {"Human", "human"}


def test_report_keeps_the_contract_keys_and_is_strict_json(annotated_study):
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    json.dumps(report, allow_nan=False)  # raises on NaN / inf
    assert {"study", "parameters", "n_judgements", "groups", "inter_group"} <= set(report)
    assert report["parameters"] == analysis_parameters_clean(FAST)
    group = report["groups"]["Layperson"]
    assert set(group) == {"stages", "human_cross_stage", "annotators", "annotators_pooled"}
    stage = group["stages"]["GPT-3 stage"]
    for key in (
        "n_items",
        "raters_per_item",
        "coherence",
        "error_categories",
        "label_distribution",
        "human_vs_synthetic",
        "most_evident_error",
        "empathy",
    ):
        assert key in stage
    for key in (
        "fleiss_kappa",
        "fleiss_kappa_ci",
        "fleiss_band",
        "randolph_kappa",
        "randolph_kappa_ci",
        "krippendorff_alpha",
        "krippendorff_alpha_ci",
        "majority_agreement",
    ):
        assert key in stage["coherence"]
    assert set(stage["coherence"]["majority_agreement"]) == {"coherent", "incoherent"}
    assert set(stage["error_categories"]) == {
        "parroting",
        "malformed",
        "off_topic",
        "dialogue_contradicting",
        "on_topic_but_unverifiable",
    }
    for entry in stage["error_categories"].values():
        assert set(entry) == {"majority_agreement", "n_items_flagged"}
    assert set(stage["human_vs_synthetic"]["coherent_rate"]) == {"human", "synthetic"}
    assert "chi2_p" in stage["human_vs_synthetic"]
    (shift,) = group["human_cross_stage"]
    assert (shift["from"], shift["to"]) == ("GPT-2 stage", "GPT-3 stage")
    assert set(shift["all"]["coherent_rate"]) == {"GPT-2 stage", "GPT-3 stage"}
    assert {"all", "recurrence_free", "wilcoxon_p"} <= set(shift)
    assert set(group["annotators"]) == {f"Layperson {n}" for n in range(1, 5)}
    for annotator in group["annotators"].values():
        assert {"recurring_identical_rate", "nonrecurring_human_coherent_rate"} <= set(annotator)
    entry = report["inter_group"][0]
    assert entry["groups"] == ["Expert", "Layperson"]
    for key in (
        "stage",
        "n_items",
        "spearman",
        "spearman_p",
        "pearson",
        "pearson_p",
        "krippendorff_alpha_majority",
        "krippendorff_alpha_scores",
    ):
        assert key in entry
    assert report["automatic_evaluators"] == []


def test_recurrence_free_view_drops_reflections_an_annotator_met_twice(annotated_study):
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    rows = [
        j
        for j in counted_judgements(annotated_study)
        if j.reflection.kind == Reflection.Kind.HUMAN
        and j.assignment.annotator.group.name == "Expert"
    ]
    stages_per_pair = defaultdict(set)
    for j in rows:
        stages_per_pair[(j.assignment.annotator_id, j.reflection_id)].add(j.assignment.stage.name)
    free = [
        j for j in rows if len(stages_per_pair[(j.assignment.annotator_id, j.reflection_id)]) == 1
    ]
    shift = report["groups"]["Expert"]["human_cross_stage"][0]
    assert sum(shift["recurrence_free"]["n_judgements"].values()) == len(free)
    assert 0 < len(free) < len(rows)
    recurring = sum(1 for stages in stages_per_pair.values() if len(stages) == 2)
    annotators = report["groups"]["Expert"]["annotators"]
    assert sum(a["n_recurring"] for a in annotators.values()) == recurring


def test_automatic_evaluator_scores_are_correlated_with_each_group(annotated_study):
    from django.utils import timezone

    stage = annotated_study.stages.get(position=1)
    items = Reflection.objects.filter(
        batch_items__batch__stage=stage, kind__in=["human", "synthetic"]
    ).distinct()
    AutomaticScore.objects.bulk_create(
        AutomaticScore(
            study=annotated_study,
            stage=stage,
            reflection=reflection,
            evaluator="BLEU",
            score=float(len(reflection.text) % 7),
            imported_at=timezone.now(),
        )
        for reflection in items
    )
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    entries = report["automatic_evaluators"]
    assert [(e["stage"], e["evaluator"], e["group"]) for e in entries] == [
        ("GPT-2 stage", "BLEU", "Expert"),
        ("GPT-2 stage", "BLEU", "Layperson"),
    ]
    assert all(e["n_items"] == 9 for e in entries)


def test_progress_is_reported_and_ends_at_one(annotated_study):
    seen = []
    frame = judgements_frame(study_id=annotated_study.pk)
    report_build(
        frame=frame,
        study_slug="pilot",
        parameters=analysis_parameters_clean({"bootstrap_resamples": 0}),
        categories=report_categories(study_id=annotated_study.pk),
        progress=seen.append,
    )
    assert seen == sorted(seen)
    assert seen[-1] == 1.0
    assert len(seen) >= 5  # one per group x stage, then between groups, then done


def test_without_resamples_intervals_are_null(annotated_study):
    report = analysis_run_compute(
        study=annotated_study, parameters={"bootstrap_resamples": 0}
    ).result
    coherence = report["groups"]["Expert"]["stages"]["GPT-2 stage"]["coherence"]
    assert coherence["fleiss_kappa"] is not None
    assert coherence["fleiss_kappa_ci"] == [None, None]


def test_same_seed_gives_the_same_report(annotated_study):
    first = analysis_run_compute(study=annotated_study, parameters=FAST).result
    again = analysis_run_compute(study=annotated_study, parameters=FAST).result
    other = analysis_run_compute(study=annotated_study, parameters={**FAST, "seed": 5}).result
    assert first == again
    assert first != other


def test_the_workload_counts_what_the_database_holds(annotated_study):
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    counted = counted_judgements(annotated_study)
    assert [(e["group"], e["stage"]) for e in report["workload"]] == [
        (group, stage)
        for group in ("Expert", "Layperson")
        for stage in ("GPT-2 stage", "GPT-3 stage")
    ]
    for entry in report["workload"]:
        mine = [
            j
            for j in counted
            if j.assignment.group.name == entry["group"]
            and j.assignment.stage.name == entry["stage"]
        ]
        assert entry["n_judgements"] == len(mine)
        assert entry["n_annotators"] == len({j.assignment.annotator_id for j in mine})
        assert entry["n_assignments"] == len({j.assignment_id for j in mine})
        assert entry["n_batches"] == len({j.assignment.batch_id for j in mine})
        assert entry["n_human"] == len(
            {j.reflection_id for j in mine if j.reflection.kind == "human"}
        )
        seconds = sorted(
            (a.submitted_at - a.assigned_at).total_seconds() for a in {j.assignment for j in mine}
        )
        assert entry["median_seconds_batch"] == pytest.approx(float(np.median(seconds)))


def test_order_effects_read_each_annotators_shuffled_order(annotated_study):
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    counted = counted_judgements(annotated_study)
    for group in ("Expert", "Layperson"):
        for stage in ("GPT-2 stage", "GPT-3 stage"):
            entry = report["order_effects"][group][stage]
            by_position = defaultdict(list)
            for j in counted:
                if j.assignment.group.name == group and j.assignment.stage.name == stage:
                    by_position[j.assignment.order.index(j.reflection_id) + 1].append(j.coherent)
            assert [(p["position"], p["n_judgements"]) for p in entry["positions"]] == sorted(
                (p, len(v)) for p, v in by_position.items()
            )
            for row in entry["positions"]:
                assert row["coherent_rate"] == pytest.approx(np.mean(by_position[row["position"]]))


def test_pay_reads_the_stages_pay_and_the_submitted_batches(annotated_study):
    from decimal import Decimal

    from studies.models import StagePay

    stage = annotated_study.stages.get(position=1)
    lay = annotated_study.groups.get(name="Layperson")
    StagePay.objects.create(
        stage=stage, group=lay, unit="batch", amount=Decimal("1.50"), currency="GBP"
    )
    report = analysis_run_compute(study=annotated_study, parameters=FAST).result
    (cell,) = report["pay"]["cells"]
    submitted = Assignment.objects.filter(
        stage=stage, group=lay, status=Assignment.Status.SUBMITTED
    )
    assert (cell["group"], cell["stage"], cell["n_batches"]) == (
        "Layperson",
        stage.name,
        submitted.count(),
    )
    assert cell["total_cost"] == pytest.approx(1.5 * submitted.count())
    hourly = sorted(
        1.5 / ((a.submitted_at - a.assigned_at).total_seconds() / 3600) for a in submitted
    )
    assert cell["hourly_rate"]["median"] == pytest.approx(float(np.median(hourly)))
    assert report["pay"]["totals"] == {"GBP": pytest.approx(1.5 * submitted.count())}
