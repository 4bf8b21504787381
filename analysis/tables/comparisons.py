"""The report's comparisons: between groups, across stages (human reflections),
human vs synthetic reflections, and automatic evaluators vs the groups."""

from __future__ import annotations

from .model import GROUP, STAGE, Key, Measure, Pair, Table, at, build_table
from .walk import cells_in_order, group_pair, shifts_in_order


def inter_group_table(report: dict) -> Table:
    entries = []
    for entry in report.get("inter_group") or []:
        group_a, group_b = group_pair(entry)
        entries.append(((entry.get("stage", ""), group_a, group_b), entry))
    return build_table(
        slug="inter-group",
        caption="Inter-group correlation and agreement",
        keys=[STAGE, Key("Groups", ("group_a", "group_b"), show=lambda a, b: f"{a} vs {b}")],
        measures=[
            Measure("n_items", "Common items", "inter_group_items", at("n_items"), "count"),
            Measure("spearman", "Spearman ρ", "spearman", at("spearman")),
            Measure("spearman_p", "p", "p_value", at("spearman_p"), "p"),
            Measure("pearson", "Pearson r", "pearson", at("pearson")),
            Measure("pearson_p", "p", "p_value", at("pearson_p"), "p"),
            Measure(
                "krippendorff_alpha_majority",
                "α majority labels [95% CI]",
                "alpha_majority",
                at("krippendorff_alpha_majority"),
                ci=at("krippendorff_alpha_majority_ci"),
            ),
            Measure(
                "krippendorff_alpha_scores",
                "α coherence scores [95% CI]",
                "alpha_scores",
                at("krippendorff_alpha_scores"),
                ci=at("krippendorff_alpha_scores_ci"),
            ),
        ],
        entries=entries,
        empty="Needs two groups that judged the same stage.",
    )


def _by_stage(subset: str, key: str):
    """``key`` (the coherent share, the number of judgements) of the shift's two
    stages, in ``subset`` of its judgements."""

    def get(shift: dict):
        first, second = shift.get("from", ""), shift.get("to", "")
        values = at(subset, key)(shift) or {}
        return (first, values.get(first)), (second, values.get(second))

    return get


def cross_stage_table(report: dict) -> Table:
    by_stage = ("stage", "")
    return build_table(
        slug="cross-stage",
        caption="Cross-stage shift on human reflections",
        keys=[GROUP, Key("Stages", ("from", "to"), show=lambda a, b: f"{a} → {b}")],
        measures=[
            Measure(
                "coherent_rate",
                "Coherent share",
                "shift_rate",
                _by_stage("all", "coherent_rate"),
                digits=2,
                facet=by_stage,
                pair=Pair.SHIFT,
            ),
            Measure(
                "n_judgements",
                "Judgements",
                "shift_n_judgements",
                _by_stage("all", "n_judgements"),
                "count",
                facet=by_stage,
                pair=Pair.SHIFT,
            ),
            Measure("chi2_p", "χ² p", "chi2_p", at("all", "chi2_p"), "p"),
            Measure(
                "recurrence_free_coherent_rate",
                "Recurrence-free",
                "shift_recurrence_free_rate",
                _by_stage("recurrence_free", "coherent_rate"),
                digits=2,
                facet=by_stage,
                pair=Pair.SHIFT,
            ),
            Measure(
                "recurrence_free_n_judgements",
                "Judgements",
                "shift_recurrence_free_n_judgements",
                _by_stage("recurrence_free", "n_judgements"),
                "count",
                facet=by_stage,
                pair=Pair.SHIFT,
            ),
            Measure(
                "recurrence_free_chi2_p", "χ² p", "chi2_p", at("recurrence_free", "chi2_p"), "p"
            ),
            Measure("wilcoxon_p", "Wilcoxon p", "wilcoxon_p", at("wilcoxon_p"), "p"),
            Measure(
                "n_items_paired", "Paired items", "n_items_paired", at("n_items_paired"), "count"
            ),
        ],
        entries=(
            ((group, shift.get("from", ""), shift.get("to", "")), shift)
            for group, shift in shifts_in_order(report)
        ),
        empty="Needs a group that judged two stages.",
    )


def human_vs_synthetic_table(report: dict) -> Table:
    def rate(kind: str, label: str, key: str) -> Measure:
        return Measure(
            "coherent_rate",
            label,
            key,
            at("coherent_rate", kind),
            digits=2,
            count=("n_judgements", at("n_judgements", kind)),
            facet=("reflections", kind),
        )

    return build_table(
        slug="human-vs-synthetic",
        caption="Human vs synthetic reflections",
        keys=[GROUP, STAGE],
        measures=[
            rate("human", "Human: coherent share", "human_rate"),
            rate("synthetic", "Synthetic: coherent share", "synthetic_rate"),
            Measure("chi2_p", "χ² p", "human_vs_synthetic_p", at("chi2_p"), "p"),
        ],
        entries=(
            ((group, stage), cell.get("human_vs_synthetic") or {})
            for group, stage, cell in cells_in_order(report)
        ),
    )


EVALUATOR = Key("Evaluator", ("evaluator",))
NO_SCORES = "No automatic scores yet: import them or compute them on the study's analysis page."


def evaluator_measures() -> list[Measure]:
    """An automatic evaluator's correlations with a group's coherence scores."""
    return [
        Measure("n_items", "Items", "evaluator_items", at("n_items"), "count"),
        Measure("spearman", "Spearman ρ", "evaluator_spearman", at("spearman")),
        Measure("spearman_p", "p", "p_value", at("spearman_p"), "p"),
        Measure("pearson", "Pearson r", "evaluator_pearson", at("pearson")),
        Measure("pearson_p", "p", "p_value", at("pearson_p"), "p"),
    ]


def automatic_evaluator_table(report: dict) -> Table:
    return build_table(
        slug="automatic-evaluators",
        caption="Automatic evaluators vs coherence scores",
        keys=[STAGE, EVALUATOR, GROUP],
        measures=evaluator_measures(),
        entries=(
            ((entry.get("stage", ""), entry.get("evaluator", ""), entry.get("group", "")), entry)
            for entry in report.get("automatic_evaluators") or []
        ),
        empty=NO_SCORES,
    )
