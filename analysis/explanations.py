"""One-line explanations of every number the dashboard shows.

The tables put them in ``title`` attributes (shown on hover) and the page's glossary
lists them, so a statistic is explained the same way everywhere. ``UNDEFINED`` says
why a value can be missing (``null`` in the report, a dash on the page).
"""

from __future__ import annotations

EXPLANATIONS: dict[str, str] = {
    # sizes
    "n_judgements": "Judgements analysed: submitted, not rejected, attention checks and "
    "excluded sources left out.",
    "n_items": "Items (reflections of this stage) the group judged.",
    "raters_per_item": "The usual number of annotators per item; the kappas use the items "
    "with this many judgements.",
    "n_annotators": "Annotators of the group who judged items of this stage.",
    "coherent_rate": "Share of the judgements that called the reflection coherent.",
    # agreement
    "fleiss_kappa": "Fleiss' kappa on coherent/incoherent: agreement beyond what the "
    "observed label shares give by chance (1 perfect, 0 chance, below 0 worse than chance).",
    "randolph_kappa": "Randolph's free-marginal kappa: agreement beyond a chance level of "
    "1/number of labels; unlike Fleiss' kappa it does not collapse when nearly every "
    "judgement has the same label.",
    "krippendorff_alpha": "Krippendorff's alpha (nominal): agreement beyond chance; uses "
    "every item with at least two judgements.",
    "n_items_alpha": "Items Krippendorff's alpha used: every item with at least two answers.",
    "kappa_items": "Items the kappas used: those with the usual number of answers (raters "
    "per item). An annotator who left the answer out of an item (no most evident error, "
    "no rating of the statement) leaves it with fewer.",
    "ci": "95% confidence interval from resampling items (bootstrap).",
    "band": "Landis & Koch band: below 0 poor, to 0.20 slight, to 0.40 fair, to 0.60 "
    "moderate, to 0.80 substantial, above almost perfect.",
    # majority agreement
    "majority_agreement": "Majority agreement ratio: items a majority of their annotators "
    "gave this label ÷ items at least one annotator gave it.",
    "n_items_flagged": "Items at least one annotator gave this label.",
    # most evident error
    "mee_raw": "Agreement on the most evident error, over the items every annotator "
    "judged incoherent.",
    "mee_consensus_adjusted": "As raw, but an annotator's most evident error is replaced "
    "by a category all annotators of the item selected, where one exists.",
    "mee_hallucinatory_merged": "As raw, with dialogue-contradicting, off-topic and "
    "on-topic-but-unverifiable merged into hallucinatory.",
    "mee_hallucinatory_merged_consensus_adjusted": "Merged into hallucinatory and "
    "consensus-adjusted.",
    "n_items_all_incoherent": "Items every annotator judged incoherent (the items the "
    "most-evident-error agreement is computed on).",
    # empathy
    "empathy_items": "Items every annotator judged coherent (the items the 5-point "
    "statement was rated on by all).",
    "empathy_fleiss_kappa": "Fleiss' kappa on the 5-point understanding statement "
    "(points treated as unordered labels).",
    "empathy_randolph_kappa": "Randolph's free-marginal kappa on the 5-point statement.",
    "empathy_krippendorff_alpha": "Krippendorff's alpha (ordinal) on the 5-point statement.",
    "empathy_merged_fleiss_kappa": "Fleiss' kappa on the statement with the scale merged "
    "to disagree / neutral / agree.",
    "empathy_merged_randolph_kappa": "Randolph's free-marginal kappa on the statement with "
    "the scale merged to disagree / neutral / agree.",
    "empathy_merged_alpha": "Krippendorff's alpha (ordinal) with the scale merged to "
    "disagree / neutral / agree.",
    # between groups
    "inter_group_items": "Items both groups judged in this stage.",
    "spearman": "Spearman rank correlation between the two groups' coherence scores "
    "(how many of a group's annotators called the item coherent).",
    "pearson": "Pearson correlation between the two groups' coherence scores.",
    "p_value": "p-value: the chance of a result at least this extreme if there were no "
    "association (or no difference).",
    "alpha_majority": "Krippendorff's alpha between the two groups' majority labels "
    "(each group as one rater).",
    "alpha_scores": "Krippendorff's alpha (ordinal) between the two groups' coherence scores.",
    # shifts
    "shift_rate": "Share of the group's judgements of human reflections that said coherent, "
    "in the first → second stage.",
    "shift_recurrence_free_rate": "The same without the judgements of a human reflection "
    "an annotator met in both stages.",
    "chi2_p": "p-value of a chi-squared test on the stage × coherent/incoherent table.",
    "wilcoxon_p": "p-value of a paired Wilcoxon signed-rank test on the human reflections' "
    "coherence scores in the two stages.",
    "shift_n_judgements": "The group's judgements of human reflections in the first → "
    "second stage (what each share is a share of).",
    "shift_recurrence_free_n_judgements": "The same judgements without those of a human "
    "reflection an annotator met in both stages.",
    "n_items_paired": "Human reflections the group judged in both stages.",
    "human_rate": "Share of coherent judgements of human reflections.",
    "synthetic_rate": "Share of coherent judgements of synthetic reflections.",
    "human_vs_synthetic_p": "p-value of a chi-squared test: human vs synthetic × "
    "coherent/incoherent.",
    # annotators
    "n_recurring": "Human reflections the annotator judged in more than one stage.",
    "recurring_identical_rate": "Share of those recurring human reflections the annotator "
    "answered the same Yes/No in every stage.",
    "nonrecurring_rate": "Share of the human reflections judged in this stage only that "
    "the annotator called coherent.",
    "n_nonrecurring": "Human reflections the annotator judged in this stage only.",
    # automatic evaluators
    "evaluator_spearman": "Spearman correlation between the automatic evaluator's scores "
    "and the group's coherence scores.",
    "evaluator_pearson": "Pearson correlation between the automatic evaluator's scores "
    "and the group's coherence scores.",
    "evaluator_items": "Items with both an automatic score and the group's judgements.",
    # label distribution
    "label_share": "Share of judgements: a coherent judgement counts 1 for coherent, an "
    "incoherent one is split equally among the error categories it selected.",
    # progress
    "progress_judgements": "Judgements of submitted, non-rejected batches (attention-check "
    "items not counted).",
    "progress_batches": "Submitted batches of the group ÷ batch slots (batches × k).",
    "batches_filled": "Batches with k submitted annotators in every group ÷ all batches "
    "of the stage.",
}

UNDEFINED: dict[str, str] = {
    "fleiss_kappa": "undefined: too few items with the same number (two or more) of "
    "judgements, or a single label throughout",
    "randolph_kappa": "undefined: too few items with the same number (two or more) of judgements",
    "krippendorff_alpha": "undefined: fewer than two items with two or more judgements, or "
    "no variation at all",
    "ci": "undefined: the statistic is undefined, or the run used no bootstrap resamples",
    "band": "undefined: the statistic is undefined",
    "majority_agreement": "undefined: no annotator gave this label",
    "correlation": "undefined: fewer than two common items, or one group gave every item "
    "the same score",
    "p_value": "undefined: the test needs more data (or some variation)",
    "rate": "undefined: no judgements",
    "recurring_identical_rate": "undefined: the annotator met no human reflection twice",
    "nonrecurring_rate": "undefined: no human reflection judged in this stage only",
    "default": "undefined: not enough data",
}

UNDEFINED_ALIASES = {
    "empathy_fleiss_kappa": "fleiss_kappa",
    "empathy_randolph_kappa": "randolph_kappa",
    "empathy_krippendorff_alpha": "krippendorff_alpha",
    "empathy_merged_fleiss_kappa": "fleiss_kappa",
    "empathy_merged_randolph_kappa": "randolph_kappa",
    "empathy_merged_alpha": "krippendorff_alpha",
    "alpha_majority": "krippendorff_alpha",
    "alpha_scores": "krippendorff_alpha",
    "mee_raw": "fleiss_kappa",
    "mee_consensus_adjusted": "fleiss_kappa",
    "mee_hallucinatory_merged": "fleiss_kappa",
    "mee_hallucinatory_merged_consensus_adjusted": "fleiss_kappa",
    "spearman": "correlation",
    "pearson": "correlation",
    "evaluator_spearman": "correlation",
    "evaluator_pearson": "correlation",
    "chi2_p": "p_value",
    "wilcoxon_p": "p_value",
    "human_vs_synthetic_p": "p_value",
    "coherent_rate": "rate",
    "shift_rate": "rate",
    "shift_recurrence_free_rate": "rate",
    "human_rate": "rate",
    "synthetic_rate": "rate",
    "label_share": "rate",
}


def explain(key: str) -> str:
    """The one-line explanation of statistic ``key`` (KeyError for an unknown key, so
    a typo in a table definition fails the tests rather than showing nothing)."""
    return EXPLANATIONS[key]


def explain_undefined(key: str) -> str:
    """Why statistic ``key`` can be undefined, starting with "undefined: "."""
    key = UNDEFINED_ALIASES.get(key, key)
    return UNDEFINED.get(key, UNDEFINED["default"])


# Shown in the page's glossary, in reading order.
GLOSSARY_ORDER = [
    "n_judgements", "n_items", "raters_per_item", "kappa_items", "coherent_rate",
    "fleiss_kappa", "randolph_kappa", "krippendorff_alpha", "n_items_alpha", "ci", "band",
    "majority_agreement", "mee_raw", "mee_consensus_adjusted", "mee_hallucinatory_merged",
    "spearman", "pearson", "alpha_majority", "alpha_scores", "chi2_p", "wilcoxon_p",
    "recurring_identical_rate", "nonrecurring_rate", "label_share", "batches_filled",
]  # fmt: skip

GLOSSARY_TERMS = {
    "n_judgements": "Judgements",
    "n_items": "Items",
    "raters_per_item": "Raters per item",
    "kappa_items": "Items for κ",
    "coherent_rate": "Coherent share",
    "fleiss_kappa": "Fleiss κ",
    "randolph_kappa": "Randolph κ",
    "krippendorff_alpha": "Krippendorff α",
    "n_items_alpha": "(n = …) after α",
    "ci": "[low, high]",
    "band": "Band",
    "majority_agreement": "Majority agreement ratio",
    "mee_raw": "Most evident error (raw)",
    "mee_consensus_adjusted": "Consensus-adjusted",
    "mee_hallucinatory_merged": "Hallucinatory merged",
    "spearman": "Spearman ρ",
    "pearson": "Pearson r",
    "alpha_majority": "α majority labels",
    "alpha_scores": "α coherence scores",
    "chi2_p": "χ² p",
    "wilcoxon_p": "Wilcoxon p",
    "recurring_identical_rate": "Same answer when recurring",
    "nonrecurring_rate": "Coherent share, non-recurring",
    "label_share": "Label distribution",
    "batches_filled": "Batches filled",
}


def glossary() -> list[tuple[str, str]]:
    """(term, explanation) pairs for the page's "About these numbers" list."""
    return [(GLOSSARY_TERMS[key], EXPLANATIONS[key]) for key in GLOSSARY_ORDER]
