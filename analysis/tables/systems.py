"""The report's system-level tables: systems per group, their pairs, the comparison
of two groups over the systems both judged, coherence per generation setting, and
the automatic evaluators per source and per system."""

from __future__ import annotations

from ..explanations import explain
from ..metrics.protocol.evaluators import MIN_SCORED_ITEMS
from ..metrics.protocol.generation import MIN_SETTING_ITEMS, NOT_SET_VALUE
from ..metrics.protocol.systems import SIGNIFICANCE
from ..metrics.protocol.trends import MIN_TREND_VALUES
from .comparisons import EVALUATOR, NO_SCORES, evaluator_measures
from .distributions import label_share_measures
from .format import finite
from .model import GROUP, STAGE, Key, Measure, Pair, Table, at, build_table
from .walk import (
    category_labels,
    generation_settings_in_order,
    group_pair,
    not_offered_in_row,
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


NOT_SET = "not set"


def _setting_shown(value: str) -> str:
    return NOT_SET if value == NOT_SET_VALUE else value


def _setting_title(value: str) -> str:
    return explain("setting_not_set") if value == NOT_SET_VALUE else ""


SETTING_KEYS = [
    GROUP,
    STAGE,
    Key("Setting", ("setting",)),
    # Not "value": the tidy CSV has a column of that name for the numbers.
    Key("Value", ("setting_value",), show=_setting_shown, title=_setting_title),
]


def _settings_entries(report: dict):
    return [
        ((group, stage, key, value), entry)
        for group, stage, key, value, entry in generation_settings_in_order(report)
    ]


def _settings_note(entries: list, note: str) -> str:
    """``note``, and what "not set" means when a row shows it."""
    if any(values[3] == NOT_SET_VALUE for values, _ in entries):
        return f"{note} “{NOT_SET.capitalize()}”: {explain('setting_not_set')}"
    return note


NO_SETTINGS = (
    f"No reflection carries generation metadata (or no value has {MIN_SETTING_ITEMS} items)."
)


def generation_settings_table(report: dict) -> Table:
    entries = _settings_entries(report)
    return build_table(
        slug="generation-settings",
        caption="Coherence per generation setting",
        keys=SETTING_KEYS,
        measures=[
            Measure("n_items", "Items", "setting_items", at("n_items"), "count"),
            Measure("coherent_rate", "Coherent share", "coherent_rate", at("coherent_rate")),
            Measure(
                "majority_coherent_rate",
                "Majority coherent",
                "majority_coherent_rate",
                at("majority_coherent_rate"),
            ),
            *label_share_measures(report, "label_distribution"),
        ],
        entries=entries,
        note=_settings_note(
            entries,
            "Per key of the reflections' generation metadata (model, decoding, p, prompt "
            f"type…) and each value with at least {MIN_SETTING_ITEMS} of the group's items "
            "in the stage.",
        ),
        empty=NO_SETTINGS,
        not_offered=not_offered_in_row(report),
    )


def generation_mee_table(report: dict) -> Table:
    segments = [*category_labels(report), ("no_majority", "No majority")]
    entries = _settings_entries(report)
    return build_table(
        slug="generation-mee",
        caption="Majority most evident error per generation setting",
        keys=SETTING_KEYS,
        measures=[
            Measure(
                "majority_mee_share",
                label,
                "majority_mee_share",
                at("majority_mee", slug),
                digits=2,
                facet=("majority_mee", slug),
            )
            for slug, label in segments
        ],
        entries=entries,
        note=_settings_note(
            entries,
            "Over the items whose majority said incoherent: the error named most evident "
            "by more than half of their incoherent annotators.",
        ),
        empty=NO_SETTINGS,
        not_offered=not_offered_in_row(report),
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
        generation_settings_table(report),
        generation_mee_table(report),
        generation_mee_variants_table(report),
        generation_trends_table(report),
    ]
    if (report.get("parameters") or {}).get("crossed_settings"):
        tables.append(generation_crossed_table(report))
    if report.get("automatic_evaluators_by_source") or report.get("automatic_evaluators_systems"):
        tables += [evaluator_source_table(report), evaluator_systems_table(report)]
    return tables


#: The majority MEE's variants as the table names them (``MEE_VARIANTS``' order).
MEE_VARIANT_LABELS = {
    "consensus_adjusted": "Consensus-adjusted",
    "hallucinatory_merged": "Merged",
    "hallucinatory_merged_consensus_adjusted": "Merged, consensus-adjusted",
}


def generation_mee_variants_table(report: dict) -> Table:
    merged = [(label, label.capitalize()) for label in report.get("most_evident_error_merge") or {}]
    segments = [*category_labels(report), *merged, ("no_majority", "No majority")]
    entries = [
        ((*keys, MEE_VARIANT_LABELS.get(name, name)), shares)
        for keys, entry in _settings_entries(report)
        for name, shares in (entry.get("majority_mee_variants") or {}).items()
    ]
    return build_table(
        slug="generation-mee-variants",
        caption="Majority most evident error per generation setting, consensus-adjusted and merged",
        keys=[*SETTING_KEYS, Key("Most evident error", ("variant",))],
        measures=[
            Measure(
                "majority_mee_share",
                label,
                "majority_mee_share",
                at(slug),
                digits=2,
                facet=("majority_mee", slug),
            )
            for slug, label in segments
        ],
        entries=entries,
        note=_settings_note(
            entries,
            "As the table above, with each annotator's most evident error consensus-adjusted "
            "(a category every incoherent annotator of the item selected), the merged "
            "categories as one (the study's merge), or both. No majority is its own share.",
        ),
        empty=NO_SETTINGS,
    )


def generation_trends_table(report: dict) -> Table:
    trends = report.get("generation_trends") or {}
    entries = [
        ((group, stage, key), trend)
        for group in report.get("group_order") or []
        for stage in report.get("stage_order") or []
        for key, trend in sorted(((trends.get(group) or {}).get(stage) or {}).items())
    ]
    return build_table(
        slug="generation-trends",
        caption="Coherence along a numeric generation setting",
        keys=[GROUP, STAGE, Key("Setting", ("setting",))],
        measures=[
            Measure("n_values", "Values", "trend_values", at("n_values"), "count"),
            Measure("n_items", "Items", "setting_items", at("n_items"), "count"),
            Measure("n_judgements", "Judgements", "n_judgements", at("n_judgements"), "count"),
            Measure("slope", "Slope (log-odds)", "trend_slope", at("slope"), ci=at("slope_ci")),
            Measure("odds_ratio", "Odds ratio", "trend_odds_ratio", at("odds_ratio")),
            Measure("p_value", "p", "p_value", at("p_value"), "p"),
            Measure("spearman", "Spearman ρ (rates)", "trend_spearman", at("spearman")),
            Measure("spearman_p", "ρ p", "p_value", at("spearman_p"), "p"),
        ],
        entries=entries,
        note="A logistic regression of each judgement's coherent label on the setting's "
        "value, its standard errors clustered by item; the slope is the change in the "
        "log-odds of coherent per unit of the setting (odds ratio: its exponent). Spearman's "
        f"ρ ranks the values against their coherent shares. Settings with {MIN_TREND_VALUES} "
        "or more numeric values.",
        empty="No numeric generation setting with three or more values.",
    )


def generation_crossed_table(report: dict) -> Table:
    crossed = report.get("generation_crossed") or {}
    keys = (report.get("parameters") or {}).get("crossed_settings") or []
    entries = [
        (
            (
                group,
                stage,
                ", ".join(
                    f"{key} {_setting_shown(entry['values'].get(key, NOT_SET_VALUE))}"
                    for key in keys
                ),
            ),
            entry,
        )
        for group in report.get("group_order") or []
        for stage in report.get("stage_order") or []
        for entry in (crossed.get(group) or {}).get(stage) or []
    ]
    return build_table(
        slug="generation-crossed",
        caption="Label distribution per combination of generation settings",
        keys=[GROUP, STAGE, Key("Settings", ("settings",))],
        measures=[
            Measure("n_items", "Items", "setting_items", at("n_items"), "count"),
            Measure(
                "majority_coherent_rate",
                "Majority coherent",
                "majority_coherent_rate",
                at("majority_coherent_rate"),
            ),
            Measure("coherent_rate", "Coherent share", "coherent_rate", at("coherent_rate")),
            *label_share_measures(report, "label_distribution"),
        ],
        entries=entries,
        note=f"The settings crossed: {' × '.join(keys)}; each combination with at least "
        f"{MIN_SETTING_ITEMS} of the group's items in the stage (not set: the item's "
        "metadata lacks the setting or gives it no value)."
        if keys
        else "",
        empty="No combination has enough items.",
        not_offered=not_offered_in_row(report),
    )
