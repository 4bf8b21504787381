"""The agreement tables of the report: on coherent / incoherent, the majority
agreement ratios, the most evident error and the understanding (empathy) statement."""

from __future__ import annotations

from ..explanations import explain
from ..metrics.agreement import MIN_MAJORITY_RATERS
from .model import GROUP, STAGE, Key, Measure, Table, at, build_table
from .walk import category_labels, cells_in_order, not_offered_in_row

MEE_VARIANTS = {
    # report key: (shown as, explanation key)
    "raw": ("Raw", "mee_raw"),
    "consensus_adjusted": ("Consensus", "mee_consensus_adjusted"),
    "hallucinatory_merged": ("Merged", "mee_hallucinatory_merged"),
    "hallucinatory_merged_consensus_adjusted": (
        "Merged + consensus",
        "mee_hallucinatory_merged_consensus_adjusted",
    ),
}


def kappa_measures(*path: str, explained_as: str = "") -> list[Measure]:
    """Fleiss' and Randolph's kappa (with their bands) and Krippendorff's alpha of the
    agreement summary at ``path``, each with its interval, alpha with the number of
    items it used; explained by the keys prefixed with ``explained_as``."""
    return [
        Measure(
            "fleiss_kappa",
            "Fleiss κ [95% CI]",
            f"{explained_as}fleiss_kappa",
            at(*path, "fleiss_kappa"),
            ci=at(*path, "fleiss_kappa_ci"),
            banded=True,
        ),
        Measure(
            "randolph_kappa",
            "Randolph κ [95% CI]",
            f"{explained_as}randolph_kappa",
            at(*path, "randolph_kappa"),
            ci=at(*path, "randolph_kappa_ci"),
            banded=True,
        ),
        Measure(
            "krippendorff_alpha",
            "Krippendorff α [95% CI]",
            f"{explained_as}krippendorff_alpha",
            at(*path, "krippendorff_alpha"),
            ci=at(*path, "krippendorff_alpha_ci"),
            count=("n_items_alpha", at(*path, "n_items_alpha")),
        ),
    ]


def kappa_size_measures(*path: str) -> list[Measure]:
    """The items the kappas of the agreement summary at ``path`` used and their
    number of raters (Krippendorff's alpha shows its own item count, "(n = …)")."""
    return [
        Measure("n_items", "Items for κ", "kappa_items", at(*path, "n_items"), "count"),
        Measure(
            "raters_per_item",
            "Raters per item",
            "raters_per_item",
            at(*path, "raters_per_item"),
            "count",
        ),
    ]


def agreement_table(report: dict) -> Table:
    return build_table(
        slug="agreement",
        caption="Global agreement on coherent / incoherent",
        keys=[GROUP, STAGE],
        measures=[
            Measure("n_judgements", "Judgements", "n_judgements", at("n_judgements"), "count"),
            Measure("n_items_total", "Items judged", "n_items", at("n_items_total"), "count"),
            *kappa_size_measures("coherence"),
            Measure("n_annotators", "Annotators", "n_annotators", at("n_annotators"), "count"),
            Measure(
                "coherent_rate", "Coherent share", "coherent_rate", at("coherent_rate"), digits=2
            ),
            *kappa_measures("coherence"),
        ],
        entries=(((group, stage), cell) for group, stage, cell in cells_in_order(report)),
    )


def majority_table(report: dict) -> Table:
    def ratio(slug: str, label: str, path, count=None) -> Measure:
        return Measure(
            "majority_agreement",
            label,
            "majority_agreement",
            path,
            digits=2,
            count=count,
            facet=("label", slug),
        )

    measures = []
    for slug, label in (("coherent", "Coherent"), ("incoherent", "Incoherent")):
        measures.append(ratio(slug, label, at("coherence", "majority_agreement", slug)))
    for slug, label in category_labels(report):
        measures.append(
            ratio(
                slug,
                label,
                at("error_categories", slug, "majority_agreement"),
                ("n_items_flagged", at("error_categories", slug, "n_items_flagged")),
            )
        )
    return build_table(
        slug="majority",
        caption="Majority agreement ratios",
        keys=[GROUP, STAGE],
        measures=measures,
        entries=(((group, stage), cell) for group, stage, cell in cells_in_order(report)),
        note="Per label: items a majority gave the label ÷ items at least one annotator "
        f"gave it, over the items with at least {MIN_MAJORITY_RATERS} annotators; for the error "
        "categories, n is that denominator: those items flagged at least once.",
        not_offered=not_offered_in_row(report),
    )


def error_category_table(report: dict) -> Table:
    entries = [
        ((group, stage, variant), summary)
        for group, stage, cell in cells_in_order(report)
        for variant in MEE_VARIANTS
        if (summary := (cell.get("most_evident_error") or {}).get(variant)) is not None
    ]
    variant = Key(
        "Variant",
        ("variant",),
        show=lambda v: MEE_VARIANTS[v][0],
        header=False,
        title=lambda v: explain(MEE_VARIANTS[v][1]),
    )
    return build_table(
        slug="error-categories",
        caption="Error-category agreement (most evident error)",
        keys=[GROUP, STAGE, variant],
        measures=[
            Measure(
                "n_items_all_incoherent",
                "Items all incoherent",
                "n_items_all_incoherent",
                lambda s: s.get("n_items_all_incoherent", s.get("n_items")),
                "count",
            ),
            *kappa_size_measures(),
            *kappa_measures(),
        ],
        entries=entries,
        note="Over the items every annotator judged incoherent; an annotator who chose one "
        "category has it as most evident error.",
    )


def empathy_table(report: dict) -> Table:
    return build_table(
        slug="empathy",
        caption="Agreement on the 5-point understanding statement",
        keys=[GROUP, STAGE],
        measures=[
            Measure(
                "n_items_all_coherent",
                "Items all coherent",
                "empathy_items",
                lambda e: e.get("n_items_all_coherent", e.get("n_items")),
                "count",
            ),
            *kappa_size_measures(),
            *kappa_measures(explained_as="empathy_"),
            Measure(
                "merged_fleiss_kappa",
                "Fleiss κ, 3-point [95% CI]",
                "empathy_merged_fleiss_kappa",
                at("merged", "fleiss_kappa"),
                ci=at("merged", "fleiss_kappa_ci"),
                banded=True,
            ),
            Measure(
                "merged_randolph_kappa",
                "Randolph κ, 3-point [95% CI]",
                "empathy_merged_randolph_kappa",
                at("merged", "randolph_kappa"),
                ci=at("merged", "randolph_kappa_ci"),
                banded=True,
            ),
            Measure(
                "merged_krippendorff_alpha",
                "α, 3-point [95% CI]",
                "empathy_merged_alpha",
                at("merged", "krippendorff_alpha"),
                ci=at("merged", "krippendorff_alpha_ci"),
            ),
        ],
        entries=(
            ((group, stage), cell.get("empathy") or {})
            for group, stage, cell in cells_in_order(report)
        ),
        note="The 3-point columns merge the scale to disagree / neutral / agree; they use "
        "the same items and raters as the 5-point ones.",
    )


def category_set_table(report: dict) -> Table:
    def alpha(metric: str, label: str, key: str) -> Measure:
        return Measure(
            f"{metric}_alpha",
            label,
            key,
            at("category_sets", metric, "krippendorff_alpha"),
            ci=at("category_sets", metric, "krippendorff_alpha_ci"),
        )

    return build_table(
        slug="category-sets",
        caption="Agreement on the set of error categories",
        keys=[GROUP, STAGE],
        measures=[
            Measure(
                "n_items_all_incoherent",
                "Items all incoherent",
                "n_items_all_incoherent",
                at("category_sets", "n_items_all_incoherent"),
                "count",
            ),
            Measure(
                "n_judgements",
                "Judgements with a set",
                "set_judgements",
                at("category_sets", "n_judgements"),
                "count",
            ),
            Measure("n_sets", "Distinct sets", "n_sets", at("category_sets", "n_sets"), "count"),
            Measure("n_items", "Items", "set_items", at("category_sets", "n_items"), "count"),
            alpha("masi", "α, MASI [95% CI]", "masi_alpha"),
            alpha("jaccard", "α, Jaccard [95% CI]", "jaccard_alpha"),
        ],
        entries=(((group, stage), cell) for group, stage, cell in cells_in_order(report)),
        note="Over the items every annotator judged incoherent, each annotator's answer is "
        "the set of categories they ticked; an answer with none ticked drops out.",
    )


def holds_in_cells(report: dict, key: str) -> bool:
    """Whether the report's group × stage cells have ``key`` (a report stored before the
    key was added has none: its table would show only dashes)."""
    return any(key in cell for _, _, cell in cells_in_order(report))


DAY = Key("Day (UTC)", ("day",))


def agreement_over_time_table(report: dict) -> Table:
    return build_table(
        slug="agreement-over-time",
        caption="Agreement over time",
        keys=[GROUP, STAGE, DAY],
        measures=[
            Measure(
                "n_judgements",
                "Judgements so far",
                "judgements_so_far",
                at("n_judgements"),
                "count",
            ),
            *kappa_size_measures(),
            Measure("fleiss_kappa", "Fleiss κ", "fleiss_kappa", at("fleiss_kappa"), banded=True),
            Measure(
                "randolph_kappa", "Randolph κ", "randolph_kappa", at("randolph_kappa"), banded=True
            ),
        ],
        entries=(
            ((group, stage, entry["day"]), entry)
            for group, stage, cell in cells_in_order(report)
            for entry in cell.get("agreement_over_time") or ()
        ),
        note="On coherent / incoherent, over the judgements submitted up to the end of each "
        "day; each day's kappas use the items at least two annotators had judged by then.",
        empty="No submission times: the study was imported from a published file, or "
        "nothing is analysed yet.",
    )
