"""The report's tables of generation settings: coherence and the majority most evident
error per setting value (raw, consensus-adjusted and merged), the trends along a
numeric setting, and the combinations of the settings a run crosses."""

from __future__ import annotations

from ..explanations import explain
from ..metrics.protocol.generation import MIN_SETTING_ITEMS, NOT_SET_VALUE
from ..metrics.protocol.trends import MIN_TREND_VALUES
from .distributions import label_share_measures
from .model import GROUP, STAGE, Key, Measure, Table, at, build_table
from .walk import category_labels, generation_settings_in_order, not_offered_in_row

NOT_SET = "not set"


def setting_shown(value: str) -> str:
    return NOT_SET if value == NOT_SET_VALUE else value


def _setting_title(value: str) -> str:
    return explain("setting_not_set") if value == NOT_SET_VALUE else ""


SETTING_KEYS = [
    GROUP,
    STAGE,
    Key("Setting", ("setting",)),
    # Not "value": the tidy CSV has a column of that name for the numbers.
    Key("Value", ("setting_value",), show=setting_shown, title=_setting_title),
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


def mee_share_measures(segments: list[tuple[str, str]], *path: str) -> list[Measure]:
    """One column per majority most evident error (and no majority) at ``path`` of a
    row's data: the raw table's and its variants'."""
    return [
        Measure(
            "majority_mee_share",
            label,
            "majority_mee_share",
            at(*path, slug),
            digits=2,
            facet=("majority_mee", slug),
        )
        for slug, label in segments
    ]


def generation_mee_table(report: dict) -> Table:
    segments = [*category_labels(report), ("no_majority", "No majority")]
    entries = _settings_entries(report)
    return build_table(
        slug="generation-mee",
        caption="Majority most evident error per generation setting",
        keys=SETTING_KEYS,
        measures=mee_share_measures(segments, "majority_mee"),
        entries=entries,
        note=_settings_note(
            entries,
            "Over the items whose majority said incoherent: the error named most evident "
            "by more than half of their incoherent annotators.",
        ),
        empty=NO_SETTINGS,
        not_offered=not_offered_in_row(report),
    )


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
        measures=mee_share_measures(segments),
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
            Measure(
                "position_slope",
                "Position slope",
                "trend_position_slope",
                at("position_slope"),
            ),
            Measure("position_p", "Position p", "p_value", at("position_p"), "p"),
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
                    f"{key} {setting_shown(entry['values'].get(key, NOT_SET_VALUE))}"
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
            Measure("n_judgements", "Judgements", "n_judgements", at("n_judgements"), "count"),
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


def generation_tables(report: dict) -> list[Table]:
    """In reading order; the crossed settings' only when the run crossed some."""
    tables = [
        generation_settings_table(report),
        generation_mee_table(report),
        generation_mee_variants_table(report),
        generation_trends_table(report),
    ]
    if (report.get("parameters") or {}).get("crossed_settings"):
        tables.append(generation_crossed_table(report))
    return tables
