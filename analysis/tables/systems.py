"""The report's system-level tables: systems per group, their pairs, the comparison
of two groups over the systems both judged, the generation settings' (:mod:`.generation`), and
the automatic evaluators per source and per system."""

from __future__ import annotations

from ..metrics.protocol.evaluators import MIN_SCORED_ITEMS
from ..metrics.protocol.systems import SIGNIFICANCE
from .comparisons import EVALUATOR, NO_SCORES, evaluator_measures
from .format import finite
from .generation import generation_tables
from .model import GROUP, STAGE, Key, Measure, Pair, Table, at, build_table
from .walk import (
    group_pair,
    per_group_in_order,
)

EMPATHY_POINTS = ("1", "2", "3", "4", "5")
SOURCE = Key("Source", ("source",))


def _system(prefix: str, label: str) -> Key:
    return Key(
        label,
        (f"stage_{prefix}", f"source_{prefix}"),
        show=lambda stage, source: f"{source} · {stage}",
    )


SECTION = "Systems"
SECTION_INTRO = (
    "Which system is more coherent, for which group, and do the groups rank the "
    "systems alike? A system is a source of reflections in a stage."
)


def systems_table(report: dict) -> Table:
    """The first table of the dashboard's Systems section (``extra["section"]``)."""
    table = build_table(
        slug="systems",
        caption="Systems: coherence and empathy per group",
        keys=[GROUP, STAGE, SOURCE],
        measures=[
            Measure("n_judgements", "Judgements", "n_judgements", at("n_judgements"), "count"),
            Measure("n_items", "Items", "system_items", at("n_items"), "count"),
            Measure(
                "coherent_rate",
                "Coherent share [95% CI]",
                "coherent_rate",
                at("coherent_rate"),
                ci=at("coherent_rate_ci"),
            ),
            Measure(
                "majority_coherent_rate",
                "Majority coherent",
                "majority_coherent_rate",
                at("majority_coherent_rate"),
            ),
            Measure(
                "empathy_mean",
                "Empathy mean",
                "empathy_mean",
                at("empathy_mean"),
                digits=2,
                count=("n_empathy", at("n_empathy")),
            ),
            *(
                Measure(
                    "empathy_share",
                    f"Empathy {point}",
                    "empathy_share",
                    at("empathy_distribution", point),
                    digits=2,
                    facet=("empathy", point),
                )
                for point in EMPATHY_POINTS
            ),
        ],
        entries=(
            ((group, entry.get("stage", ""), entry.get("source", "")), entry)
            for group, entry in per_group_in_order(report, "systems")
        ),
        note="A system is a source of reflections in a stage (the human reflections of a "
        "stage are one). The interval resamples the system's items.",
    )
    table.extra.update(section=SECTION, intro=SECTION_INTRO)
    return table


def holm_significant(entry: dict) -> bool:
    """A pair whose Holm-adjusted p-value is below ``SIGNIFICANCE``."""
    p = finite(entry.get("p_holm"))
    return p is not None and p < SIGNIFICANCE


def system_pairs_table(report: dict) -> Table:
    def side(entry: dict, name: str) -> tuple:
        system = entry.get(name) or {}
        return system.get("stage", ""), system.get("source", "")

    return build_table(
        slug="system-pairs",
        caption="Pairs of systems per group",
        keys=[GROUP, _system("a", "System A"), _system("b", "System B")],
        measures=[
            Measure("cohens_h", "Cohen's h (A − B)", "cohens_h", at("cohens_h")),
            Measure("chi2_p", "χ² p", "system_chi2_p", at("chi2_p"), "p"),
            Measure(
                "p_holm",
                "Holm p",
                "p_holm",
                at("p_holm"),
                "p",
                flag=("significant_holm", "holm_significant", holm_significant),
            ),
            Measure(
                "cohens_d_empathy", "Cohen's d, empathy", "cohens_d_empathy", at("cohens_d_empathy")
            ),
        ],
        entries=(
            ((group, *side(entry, "a"), *side(entry, "b")), entry)
            for group, entry in per_group_in_order(report, "system_pairs")
        ),
        note=f"✱ marks the pairs whose coherent shares differ after Holm's correction over "
        f"all the group's pairs (adjusted p < {SIGNIFICANCE}).",
        empty="Needs a group that judged two systems.",
    )


GROUPS = Key("Groups", ("group_a", "group_b"), show=lambda a, b: f"{a} vs {b}")


def group_systems_table(report: dict) -> Table:
    def rates(entry: dict, a: str, b: str):
        shares = entry.get("coherent_rate") or {}
        return (a, shares.get(a)), (b, shares.get(b))

    entries = []
    for comparison in report.get("group_comparisons") or []:
        a, b = group_pair(comparison)
        for entry in comparison.get("systems") or []:
            data = {**entry, "rates": rates(entry, a, b)}
            entries.append(((a, b, entry.get("stage", ""), entry.get("source", "")), data))
    return build_table(
        slug="group-systems",
        caption="Groups compared per system",
        keys=[GROUPS, STAGE, SOURCE],
        measures=[
            Measure(
                "coherent_rate",
                "Coherent share",
                "group_coherent_rate",
                at("rates"),
                facet=("group", ""),
                pair=Pair.VERSUS,
            ),
            Measure("chi2_p", "χ² p", "groups_chi2_p", at("chi2_p"), "p"),
        ],
        entries=entries,
        empty="Needs two groups that judged the same system.",
    )


def group_comparison_table(report: dict) -> Table:
    return build_table(
        slug="group-comparison",
        caption="Do the groups rank the systems alike?",
        keys=[GROUPS],
        measures=[
            Measure(
                "n_systems",
                "Common systems",
                "n_systems_common",
                lambda entry: len(entry.get("systems") or []),
                "count",
            ),
            Measure("kendall_tau", "Kendall τ-b", "kendall_tau", at("kendall_tau")),
            Measure("kendall_p", "p", "p_value", at("kendall_p"), "p"),
            Measure("mean_abs_delta_h", "Mean |Δh|", "mean_abs_delta_h", at("mean_abs_delta_h")),
            Measure(
                "mean_abs_delta_d_empathy",
                "Mean |Δd| empathy",
                "mean_abs_delta_d_empathy",
                at("mean_abs_delta_d_empathy"),
            ),
            Measure("mean_abs_h_a", "Mean |h| (first)", "mean_abs_h", at("mean_abs_h_a")),
            Measure("mean_abs_h_b", "Mean |h| (second)", "mean_abs_h", at("mean_abs_h_b")),
        ],
        entries=(
            (
                group_pair(entry),
                {
                    **entry,
                    "mean_abs_h_a": (entry.get("mean_abs_h") or (None, None))[0],
                    "mean_abs_h_b": (entry.get("mean_abs_h") or (None, None))[1],
                },
            )
            for entry in report.get("group_comparisons") or []
        ),
        empty="Needs two groups that judged the same systems.",
    )


def evaluator_source_table(report: dict) -> Table:
    return build_table(
        slug="automatic-evaluators-by-source",
        caption="Automatic evaluators vs coherence scores, per source",
        keys=[STAGE, EVALUATOR, GROUP, SOURCE],
        measures=evaluator_measures(),
        entries=(
            (
                (
                    e.get("stage", ""),
                    e.get("evaluator", ""),
                    e.get("group", ""),
                    e.get("source", ""),
                ),
                e,
            )
            for e in report.get("automatic_evaluators_by_source") or []
        ),
        note=f"Sources with at least {MIN_SCORED_ITEMS} scored items the group judged.",
        empty=f"No source has {MIN_SCORED_ITEMS} scored items.",
    )


def evaluator_systems_table(report: dict) -> Table:
    return build_table(
        slug="automatic-evaluators-systems",
        caption="Automatic evaluators vs coherent share, per system",
        keys=[EVALUATOR, GROUP],
        measures=[
            Measure("n_systems", "Systems", "evaluator_systems", at("n_systems"), "count"),
            Measure("spearman", "Spearman ρ", "evaluator_system_spearman", at("spearman")),
            Measure("spearman_p", "p", "p_value", at("spearman_p"), "p"),
        ],
        entries=(
            ((e.get("evaluator", ""), e.get("group", "")), e)
            for e in report.get("automatic_evaluators_systems") or []
        ),
        empty=NO_SCORES,
    )


def system_tables(report: dict) -> list[Table]:
    """The system-level tables in reading order (none for a report from before
    they existed); the automatic evaluators' only where the study has scores."""
    if "systems" not in report:
        return []
    tables = [
        systems_table(report),
        system_pairs_table(report),
        group_systems_table(report),
        group_comparison_table(report),
        *generation_tables(report),
    ]
    if report.get("automatic_evaluators_by_source") or report.get("automatic_evaluators_systems"):
        tables += [evaluator_source_table(report), evaluator_systems_table(report)]
    return tables
