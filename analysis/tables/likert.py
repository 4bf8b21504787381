"""The report's Likert tables (its ``likert`` block): the ratings per group, stage,
dimension and system; the pairs of systems of a group; two groups compared."""

from __future__ import annotations

from ..metrics.protocol.systems import SIGNIFICANCE
from .comparisons import EVALUATOR, NO_SCORES
from .model import GROUP, STAGE, Key, Measure, Table, at, build_table
from .systems import GROUPS, holm_significant
from .walk import group_order, stage_order

DIMENSION = Key("Dimension", ("dimension",))
SYSTEM = Key("System", ("source",))


def _stages(report: dict, likert: dict) -> list[str]:
    """The Likert stages in reading order (stage_order lists the coherence stages
    only: the dimensions' keys come in stage position order)."""
    known = stage_order(report)
    stages = list(likert.get("dimensions") or {})
    return [s for s in known if s in stages] + [s for s in stages if s not in known]


def _groups(report: dict, likert: dict) -> list[str]:
    cells = likert.get("cells") or {}
    known = group_order(report)
    return [g for g in known if g in cells] + sorted(g for g in cells if g not in known)


def _dimensions(likert: dict, stage: str) -> list[dict]:
    return list((likert.get("dimensions") or {}).get(stage) or [])


def _dimension_cells(report: dict) -> list[tuple[str, str, str, dict]]:
    """(group, stage, dimension, its cell) of the likert block, in reading order."""
    likert = report.get("likert") or {}
    result = []
    for group in _groups(report, likert):
        for stage in _stages(report, likert):
            for dimension in _dimensions(likert, stage):
                cell = ((likert["cells"].get(group) or {}).get(stage) or {}).get(dimension["name"])
                if cell:
                    result.append((group, stage, dimension["name"], cell))
    return result


def likert_entries(report: dict) -> list[tuple[tuple, dict]]:
    return [
        ((group, stage, dimension, source), {**cell["systems"][source], "alpha": cell.get("alpha")})
        for group, stage, dimension, cell in _dimension_cells(report)
        for source in sorted(cell.get("systems") or {})
    ]


def likert_table(report: dict) -> Table:
    return build_table(
        slug="likert",
        caption="Likert ratings",
        keys=[GROUP, STAGE, DIMENSION, SYSTEM],
        measures=[
            Measure("n_ratings", "Ratings", "likert_n_ratings", at("n_ratings"), "count"),
            Measure(
                "n_cannot_judge",
                "Cannot judge",
                "likert_cannot_judge",
                at("n_cannot_judge"),
                "count",
            ),
            Measure("n_items", "Items", "likert_items", at("n_items"), "count"),
            Measure("mean", "Mean [95% CI]", "likert_mean", at("mean"), digits=2, ci=at("mean_ci")),
            Measure("sd", "SD", "likert_sd", at("sd"), digits=2),
            Measure("median", "Median", "likert_median", at("median"), digits=1),
            Measure("alpha", "Krippendorff α (dimension)", "likert_alpha", at("alpha")),
        ],
        entries=likert_entries(report),
        note='Over individual ratings; "cannot judge" answers are counted and left out of '
        "everything else. α is ordinal on points, interval on a 0–100 slider. The interval "
        "resamples items.",
        empty="No Likert ratings yet.",
    )


def likert_pairs_table(report: dict) -> Table:
    entries = [
        ((group, stage, dimension, pair["a"], pair["b"]), pair)
        for group, stage, dimension, cell in _dimension_cells(report)
        for pair in cell.get("system_pairs") or []
    ]
    return build_table(
        slug="likert-pairs",
        caption="Likert ratings: pairs of systems per group",
        keys=[
            GROUP,
            STAGE,
            DIMENSION,
            Key("System A", ("a",)),
            Key("System B", ("b",)),
        ],
        measures=[
            Measure("cohens_d", "Cohen's d (A − B)", "likert_cohens_d", at("cohens_d")),
            Measure("p", "Mann–Whitney p", "likert_mann_whitney_p", at("p"), "p"),
            Measure(
                "p_holm",
                "Holm p",
                "p_holm",
                at("p_holm"),
                "p",
                flag=("significant_holm", "likert_holm_significant", holm_significant),
            ),
        ],
        entries=entries,
        note="Over item means (an item's mean of its ratings). ✱ marks the pairs that differ "
        f"after Holm's correction over the group's pairs of the stage and dimension "
        f"(adjusted p < {SIGNIFICANCE}).",
        empty="Needs a group that rated two systems.",
    )


def likert_groups_table(report: dict) -> Table:
    likert = report.get("likert") or {}
    entries = []
    for entry in likert.get("between_groups") or []:
        a, b = entry["groups"]
        for source in sorted(entry.get("systems") or {}):
            entries.append(
                (
                    (a, b, entry["stage"], entry["dimension"], source),
                    {**entry["systems"][source], "kendall_tau_b": entry.get("kendall_tau_b")},
                )
            )
    return build_table(
        slug="likert-groups",
        caption="Likert ratings: two groups compared",
        keys=[GROUPS, STAGE, DIMENSION, SYSTEM],
        measures=[
            Measure("p", "Mann–Whitney p", "likert_mann_whitney_p", at("p"), "p"),
            Measure(
                "spearman",
                "Spearman ρ",
                "likert_spearman",
                at("spearman"),
                count=("likert_items_both", at("n_items_both")),
            ),
            Measure(
                "kendall_tau_b", "Kendall τ-b (systems)", "likert_kendall_tau", at("kendall_tau_b")
            ),
        ],
        entries=entries,
        note="Per system both groups rated: the Mann–Whitney U test between their item means "
        "and Spearman's ρ over the items both rated; Kendall's τ-b between the groups' "
        "orderings of the stage's systems by the mean of their item means (the same on "
        "every row of a stage and dimension).",
        empty="Needs two groups that rated the same Likert stage.",
    )


def likert_evaluators_table(report: dict) -> Table:
    likert = report.get("likert") or {}
    return build_table(
        slug="likert-evaluators",
        caption="Automatic evaluators vs Likert ratings",
        keys=[STAGE, EVALUATOR, GROUP, DIMENSION],
        measures=[
            Measure("n_items", "Items", "likert_evaluator_items", at("n_items"), "count"),
            Measure("spearman", "Spearman ρ", "likert_evaluator_spearman", at("spearman")),
            Measure("spearman_p", "p", "p_value", at("spearman_p"), "p"),
            Measure("pearson", "Pearson r", "likert_evaluator_pearson", at("pearson")),
            Measure("pearson_p", "p", "p_value", at("pearson_p"), "p"),
        ],
        entries=(
            ((e["stage"], e["evaluator"], e["group"], e["dimension"]), e)
            for e in likert.get("automatic_evaluators") or []
        ),
        note="Each evaluator's scores against the group's item means (an item's mean of its "
        'ratings, "cannot judge" left out), every system of the stage together.',
        empty=NO_SCORES,
    )


def likert_tables(report: dict) -> list[Table]:
    """The Likert tables, when the study has Likert stages (the evaluators' when it has
    automatic scores of them)."""
    likert = report.get("likert") or {}
    if not likert.get("dimensions"):
        return []
    tables = [likert_table(report), likert_pairs_table(report), likert_groups_table(report)]
    if likert.get("automatic_evaluators"):
        tables.append(likert_evaluators_table(report))
    return tables


def nothing_counted(report: dict) -> str | None:
    """How the renderings say that no judgement of the coherence protocol counted
    ("No judgements", or, beside another instrument's answers, "No judgements of the
    coherence protocol"), else None."""
    if report.get("group_order"):
        return None
    if any((report.get(block) or {}).get("cells") for block in ("likert", "pairwise", "ranking")):
        return "No judgements of the coherence protocol"
    return "No judgements"
