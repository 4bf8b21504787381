"""The report's pairwise and ranking tables (its ``pairwise`` and ``ranking`` blocks):
the pairs of systems per group and stage, the systems' strengths, agreement and
position bias, two groups compared, and the rankings' mean ranks and concordance."""

from __future__ import annotations

from ..metrics.protocol.systems import SIGNIFICANCE
from .model import GROUP, STAGE, Key, Measure, Table, at, build_table
from .systems import GROUPS, holm_significant
from .walk import group_order

SYSTEM = Key("System", ("source",))
SYSTEM_A, SYSTEM_B = Key("System A", ("a",)), Key("System B", ("b",))
ANSWERS = Key(
    "Answers",
    ("derived",),
    show=lambda derived: "implied by rankings" if derived else "chosen",
)


def _in_order(report: dict, block: dict) -> list[tuple[str, str, dict]]:
    """(group, stage, cell) of a block in reading order: groups as the coherence
    block orders them, the others by name; stages as the block lists them."""
    cells = block.get("cells") or {}
    groups = [g for g in group_order(report) if g in cells]
    groups += sorted(g for g in cells if g not in groups)
    stages = list(block.get("stages") or [])
    result = []
    for group in groups:
        known = [s for s in stages if s in cells[group]]
        known += sorted(s for s in cells[group] if s not in known)
        result.extend((group, stage, cells[group][stage]) for stage in known)
    return result


def _pairwise_cells(report: dict) -> list[tuple[str, str, dict]]:
    return _in_order(report, report.get("pairwise") or {})


def pairwise_table(report: dict) -> Table:
    entries = [
        ((group, stage, bool(cell.get("derived")), pair["a"], pair["b"]), pair)
        for group, stage, cell in _pairwise_cells(report)
        for pair in cell.get("pairs") or []
    ]
    return build_table(
        slug="pairwise",
        caption="Pairwise preference: pairs of systems",
        keys=[GROUP, STAGE, ANSWERS, SYSTEM_A, SYSTEM_B],
        measures=[
            Measure("wins", "A wins", "pairwise_wins", at("wins"), "count"),
            Measure("losses", "B wins", "pairwise_losses", at("losses"), "count"),
            Measure("ties", "Ties", "pairwise_ties", at("ties"), "count"),
            Measure("win_rate", "A's win rate", "pairwise_win_rate", at("win_rate")),
            Measure("cohens_h", "Cohen's h", "pairwise_cohens_h", at("cohens_h")),
            Measure("binomial_p", "Binomial p", "pairwise_binomial_p", at("binomial_p"), "p"),
            Measure(
                "p_holm",
                "Holm p",
                "p_holm",
                at("p_holm"),
                "p",
                flag=("significant_holm", "pairwise_holm_significant", holm_significant),
            ),
        ],
        entries=entries,
        note="A's win rate leaves ties out. ✱ marks the pairs whose wins differ from an even "
        f"split after Holm's correction over the group's pairs of the stage (adjusted p < "
        f"{SIGNIFICANCE}). Rows implied by rankings count a candidate ranked above another "
        "as a win, an equal rank as a tie.",
        empty="No pairwise answers yet.",
    )


def pairwise_strengths_table(report: dict) -> Table:
    entries = [
        ((group, stage, bool(cell.get("derived")), system), entry)
        for group, stage, cell in _pairwise_cells(report)
        for system, entry in (cell.get("strengths") or {}).items()
    ]
    return build_table(
        slug="pairwise-strengths",
        caption="Pairwise preference: Bradley–Terry strengths",
        keys=[GROUP, STAGE, ANSWERS, SYSTEM],
        measures=[
            Measure(
                "strength",
                "Strength [95% CI]",
                "pairwise_strength",
                at("strength"),
                digits=2,
                ci=at("ci"),
            ),
        ],
        entries=entries,
        note="Log-scale strengths, mean 0 per group and stage: a system with strength s beats "
        "one with t with probability 1 / (1 + e^(t − s)). Fitted on the wins, ties left out. "
        "The interval resamples contexts.",
        empty="No pairwise answers yet.",
    )


def pairwise_agreement_table(report: dict) -> Table:
    entries = [
        ((group, stage, bool(cell.get("derived"))), cell)
        for group, stage, cell in _pairwise_cells(report)
    ]
    return build_table(
        slug="pairwise-agreement",
        caption="Pairwise preference: agreement and position",
        keys=[GROUP, STAGE, ANSWERS],
        measures=[
            Measure("n_answers", "Answers", "pairwise_n_answers", at("n_answers"), "count"),
            Measure("n_pairs", "Pairs", "pairwise_n_pairs", at("n_pairs"), "count"),
            Measure(
                "fleiss",
                "Fleiss κ [95% CI]",
                "pairwise_fleiss",
                at("agreement", "fleiss", "value"),
                ci=at("agreement", "fleiss", "ci"),
            ),
            Measure(
                "randolph",
                "Randolph κ [95% CI]",
                "pairwise_randolph",
                at("agreement", "randolph", "value"),
                ci=at("agreement", "randolph", "ci"),
            ),
            Measure(
                "alpha",
                "Krippendorff α [95% CI]",
                "pairwise_alpha",
                at("agreement", "alpha", "value"),
                ci=at("agreement", "alpha", "ci"),
            ),
            Measure("share_a", "A chosen", "pairwise_share_a", at("position", "share_a")),
            Measure(
                "position_p", "p (A vs B)", "pairwise_position_p", at("position", "binomial_p"), "p"
            ),
            Measure("mean_abs_h", "Mean |h|", "pairwise_mean_abs_h", at("mean_abs_h")),
        ],
        entries=entries,
        note="Agreement is on which candidate of a pair won (or a tie), the items being the "
        'pairs of one context. "A chosen" is the left candidate\'s share of the decisive '
        "choices (none for answers implied by rankings, which show no sides).",
        empty="No pairwise answers yet.",
    )


def pairwise_groups_table(report: dict) -> Table:
    entries = []
    for entry in (report.get("pairwise") or {}).get("between_groups") or []:
        a, b = entry["groups"]
        mean_a, mean_b = entry.get("mean_abs_h") or (None, None)
        entries.append(
            (
                (a, b, entry["stage"], bool(entry.get("derived"))),
                {**entry, "mean_abs_h_a": mean_a, "mean_abs_h_b": mean_b},
            )
        )
    return build_table(
        slug="pairwise-groups",
        caption="Pairwise preference: two groups compared",
        keys=[GROUPS, STAGE, ANSWERS],
        measures=[
            Measure(
                "kendall_tau", "Kendall τ-b (strengths)", "pairwise_kendall_tau", at("kendall_tau")
            ),
            Measure("kendall_p", "p", "p_value", at("kendall_p"), "p"),
            Measure("mean_abs_delta_h", "Mean |Δh|", "mean_abs_delta_h", at("mean_abs_delta_h")),
            Measure("mean_abs_h_a", "Mean |h| (first)", "pairwise_mean_abs_h", at("mean_abs_h_a")),
            Measure("mean_abs_h_b", "Mean |h| (second)", "pairwise_mean_abs_h", at("mean_abs_h_b")),
        ],
        entries=entries,
        note="Kendall's τ-b between the two groups' strengths over the systems both compared "
        "(needs three); the mean absolute difference of their pairs' Cohen's h.",
        empty="Needs two groups that answered the same pairwise or ranking stage.",
    )


def _ranking_cells(report: dict) -> list[tuple[str, str, dict]]:
    return _in_order(report, report.get("ranking") or {})


def ranking_table(report: dict) -> Table:
    entries = [
        ((group, stage, system), entry)
        for group, stage, cell in _ranking_cells(report)
        for system, entry in sorted(
            (cell.get("systems") or {}).items(),
            key=lambda item: (item[1].get("mean_rank") is None, item[1].get("mean_rank") or 0),
        )
    ]
    return build_table(
        slug="ranking",
        caption="Ranking: mean rank per system",
        keys=[GROUP, STAGE, SYSTEM],
        measures=[
            Measure("n_blocks", "Rankings", "ranking_blocks", at("n_blocks"), "count"),
            Measure(
                "mean_rank",
                "Mean rank [95% CI]",
                "ranking_mean_rank",
                at("mean_rank"),
                digits=2,
                ci=at("ci"),
            ),
        ],
        entries=entries,
        note="1 is the best. Ties count as mid-ranks; a system with several candidates in "
        "a context ranks as their mean there. The interval resamples contexts.",
        empty="No rankings yet.",
    )


def ranking_concordance_table(report: dict) -> Table:
    entries = [((group, stage), cell) for group, stage, cell in _ranking_cells(report)]
    return build_table(
        slug="ranking-concordance",
        caption="Ranking: agreement among annotators and the Friedman test",
        keys=[GROUP, STAGE],
        measures=[
            Measure("n_rankings", "Rankings", "ranking_n_rankings", at("n_rankings"), "count"),
            Measure("n_contexts", "Contexts", "ranking_n_contexts", at("n_contexts"), "count"),
            Measure("mean_w", "Mean Kendall W", "ranking_mean_w", at("concordance", "mean_w")),
            Measure(
                "share_significant",
                "Contexts with p < 0.05",
                "ranking_share_significant",
                at("concordance", "share_significant"),
            ),
            Measure("friedman", "Friedman χ²", "ranking_friedman", at("friedman", "statistic")),
            Measure("friedman_p", "p", "p_value", at("friedman", "p"), "p"),
        ],
        entries=entries,
        note="Kendall's W (tie-corrected) among the annotators who ranked a context, averaged "
        "over the contexts; the Friedman test across systems over the rankings that rank "
        "every system.",
        empty="No rankings yet.",
    )


def preference_tables(report: dict) -> list[Table]:
    """The pairwise and ranking tables, when the study has such stages' answers."""
    tables = []
    if (report.get("pairwise") or {}).get("cells"):
        tables += [
            pairwise_table(report),
            pairwise_strengths_table(report),
            pairwise_agreement_table(report),
            pairwise_groups_table(report),
        ]
    if (report.get("ranking") or {}).get("cells"):
        tables += [ranking_table(report), ranking_concordance_table(report)]
    return tables
