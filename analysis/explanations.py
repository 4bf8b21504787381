"""One-line explanations of every number the dashboard shows.

The tables put them in ``title`` attributes (shown on hover) and the page's glossary
lists them, so a statistic is explained the same way everywhere. ``UNDEFINED`` says
why a value can be missing (``null`` in the report, a dash on the page).
"""

from __future__ import annotations

from studies.protocol import EMPATHY_SCALE

from .metrics.agreement import DISPLAY_DIGITS, LANDIS_KOCH_BANDS, MIN_MAJORITY_RATERS
from .metrics.protocol.systems import SIGNIFICANCE

_SCALE_ENDS = (
    f"1 {EMPATHY_SCALE[min(EMPATHY_SCALE)]} … {max(EMPATHY_SCALE)} "
    f"{EMPATHY_SCALE[max(EMPATHY_SCALE)]}"
)


def _band_text() -> str:
    """The Landis & Koch bands in words, with their half-open convention."""
    zero = f"{0:.{DISPLAY_DIGITS}f}"
    parts, lower = [f"below {zero} poor"], None
    for upper, name in LANDIS_KOCH_BANDS:
        end = f"{upper:.{DISPLAY_DIGITS}f}"
        parts.append(
            f"{zero} to {end} {name}" if lower is None else f"above {lower} to {end} {name}"
        )
        lower = end
    return (
        f"Landis & Koch band of the value as shown ({DISPLAY_DIGITS} decimals): "
        + ", ".join(parts)
        + "."
    )


_BAND_TEXT = _band_text()

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
    "per item), so at most the items judged. An item another number of annotators "
    "judged, or one an annotator left an answer out of (no most evident error, no "
    "rating of the statement), is left out.",
    "ci": "95% confidence interval from resampling items (bootstrap).",
    "band": _BAND_TEXT,
    # majority agreement
    "majority_agreement": "Majority agreement ratio: items a majority of their annotators "
    "gave this label ÷ items at least one annotator gave it, over the items with at least "
    f"{MIN_MAJORITY_RATERS} annotators (a majority of one is no agreement).",
    "n_items_flagged": f"Items with at least {MIN_MAJORITY_RATERS} annotators that at least "
    "one annotator gave this label (the ratio's denominator).",
    # most evident error
    "mee_raw": "Agreement on the most evident error, over the items every annotator "
    "judged incoherent.",
    "mee_consensus_adjusted": "As raw, but an annotator's most evident error is replaced "
    "by a category all annotators of the item selected, where one exists.",
    "mee_hallucinatory_merged": "As raw, with the categories of the study's merge counted "
    "as one (by default dialogue-contradicting, off-topic and on-topic-but-unverifiable "
    "merged into hallucinatory).",
    "mee_hallucinatory_merged_consensus_adjusted": "Merged as the study's merge says, and "
    "consensus-adjusted.",
    "n_items_all_incoherent": "Items every annotator judged incoherent (the items the "
    "most-evident-error agreement is computed on).",
    # sets of categories
    "set_judgements": "Judgements of those items with at least one category ticked: each "
    "is the set of categories its annotator ticked (one with a description only drops out).",
    "n_sets": "Different sets of categories among those judgements.",
    "set_items": "Items with at least two sets: the items alpha used.",
    "masi_alpha": "Krippendorff's alpha on the sets of categories with the MASI distance: "
    "two sets are closer the more they share, and a set inside the other counts as "
    "closer than a partial overlap.",
    "jaccard_alpha": "Krippendorff's alpha on the sets of categories with the Jaccard "
    "distance: 1 − shared categories ÷ categories in either set.",
    # diversity
    "diversity_contexts": "Contexts with two candidates or more (of this source).",
    "diversity_pairs": "Ordered pairs of candidates of the same context: n candidates "
    "make n(n − 1).",
    "diversity_pairs_scored": "Pairs scored: all of them, or a seeded sample of them.",
    "self_bleu": "Self-BLEU-n: BLEU-n of each candidate against another of the same "
    "context (lower-cased words, 1- to n-grams, no smoothing), 0–100, averaged over the "
    "pairs; the higher, the more alike the candidates (the less diverse).",
    "mean_cosine": "Mean cosine similarity of the candidates' sentence embeddings over "
    "every pair of the same context, −1 to 1; the higher, the more alike in meaning.",
    "selection_set": "The pool: every candidate generated for the contexts; the "
    "selection: the cluster representatives it drew into the stage.",
    # labels spread to cluster members
    "spread_members": "Members of the stage's drawn clusters with this generation setting, "
    "removed duplicates included.",
    "spread_members_labelled": "Members whose cluster's representative has a majority "
    "label in this group (at least two raters and no tie).",
    "spread_coherent_rate": "Coherent rate of the members, each given its cluster "
    "representative's majority label: an estimate for every generated candidate.",
    "spread_representatives": "Representatives (the annotated candidates) with this "
    "generation setting.",
    "spread_representatives_labelled": "Representatives with a majority label in this group.",
    "representative_coherent_rate": "Coherent rate of the representatives alone, by "
    "their majority labels.",
    # over time
    "judgements_so_far": "Judgements of the group and stage submitted up to the end of "
    "this day (UTC).",
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
    "quality_batches": "Batches of the annotator that count (submitted, not rejected).",
    "median_seconds": "Median of the time the annotator spent on an item, in seconds.",
    "fast_share": "Share of the annotator's items answered faster than the threshold.",
    "attention_failed": "Batches whose attention-check item the annotator answered wrongly "
    "(rejected ones included).",
    "partial_stages": "Stages in which the crowd worker's part ended early: they submitted "
    "some batches, then no further batch could be theirs right away, so they were paid "
    "with the stage's partial-completion code instead of waiting.",
    "yes_rate": "Share of the annotator's items they judged coherent (Yes).",
    "agreement_with_group": "Share of the annotator's items on which their Yes/No equals the "
    "majority of the item's other raters of the group (items whose other raters are fewer "
    "than 2 or tie are left out).",
    "waiting_n": "Annotators who submitted work in the first stage and started the next.",
    "waiting_days": "Days between an annotator's last submission in one stage and their "
    "first batch in the next.",
    "waiting_sd": "Standard deviation (sample) of those waits, in days.",
    "questionnaire_n": "People who answered the question (for screened-out people: from the "
    "counts kept about them, never their answers).",
    "questionnaire_mean": "Mean of the 1–5 answers.",
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
    # systems
    "system_items": "Items (reflections) of the system the group judged, whatever their "
    "number of annotators.",
    "majority_coherent_rate": "Majority-vote coherent share: of the items with at least "
    f"{MIN_MAJORITY_RATERS} annotators of the group, the share on which more than half said coherent (a tie is no "
    "majority but still counts).",
    "empathy_mean": "Mean rating of the 5-point understanding statement (rated with a Yes "
    "only), over the system's judgements.",
    "n_empathy": "Ratings of the understanding statement.",
    "empathy_share": "Share of the statement's ratings at this point of the 5-point scale "
    f"({_SCALE_ENDS}).",
    "cohens_h": "Cohen's h between the coherent shares of A and B: 2·asin√share(A) − "
    "2·asin√share(B). Positive when A is more coherent; about 0.2 is small, 0.5 medium, "
    "0.8 large.",
    "system_chi2_p": "p-value of a chi-squared test (with Yates' correction) on the "
    "system × coherent/incoherent table of judgement counts.",
    "p_holm": "The chi-squared p-value adjusted with Holm's method over all the group's "
    "pairs of systems, so that testing many pairs does not produce chance findings.",
    "holm_significant": "The two systems' coherent shares differ: adjusted p below "
    f"{SIGNIFICANCE}.",
    "cohens_d_empathy": "Cohen's d on the understanding ratings: difference of the means ÷ "
    "their pooled standard deviation. Positive when A is rated higher.",
    "group_coherent_rate": "The system's coherent share in each group's judgements, named before it.",
    "groups_chi2_p": "p-value of a chi-squared test (with Yates' correction) on the group × "
    "coherent/incoherent table of the system's judgements.",
    "n_systems_common": "Systems both groups judged.",
    "kendall_tau": "Kendall's tau-b between the two groups' coherent shares over the "
    "systems both judged: 1 the same ranking, 0 unrelated, −1 reversed.",
    "mean_abs_delta_h": "Mean over every pair of common systems of |h by one group − h by "
    "the other|: how differently the groups see the gaps between systems (0 identical).",
    "mean_abs_h": "The group's mean |Cohen's h| over every pair of the common systems: how "
    "far apart it sees the systems (0: all alike).",
    "mean_abs_delta_d_empathy": "The same for Cohen's d on the understanding ratings, over "
    "the pairs whose d is defined for both groups.",
    "setting_items": "Items of the group in this stage whose reflection has this value.",
    "setting_not_set": "The reflections' generation metadata gives the setting no value "
    "(null), as nucleus p has none under greedy decoding.",
    "majority_mee_share": "Of the items whose majority said incoherent, the share whose "
    "most evident error (named by more than half of their incoherent annotators) is this "
    "one; no majority when no error was.",
    "evaluator_systems": "Systems with automatic scores on items the group judged.",
    "evaluator_system_spearman": "Spearman correlation between the systems' mean "
    "automatic score and their coherent share: does the metric rank the systems as the "
    "group does?",
    # Likert ratings
    "likert_n_ratings": "Ratings of the dimension given to the system's candidates (\"cannot "
    'judge" answers left out).',
    "likert_cannot_judge": 'Answers "cannot judge" instead of a rating: counted here, left '
    "out of every other number.",
    "likert_items": "Candidates of the system the group rated on the dimension.",
    "likert_mean": "Mean rating over the individual ratings (points 1 … n, or 0–100 on a "
    "slider); the interval resamples items.",
    "likert_sd": "Standard deviation of the individual ratings (n − 1).",
    "likert_median": "Median of the individual ratings.",
    "likert_alpha": "Krippendorff's alpha of the group's ratings on the dimension, every "
    "system of the stage together: ordinal on points, interval on a slider (1 perfect "
    "agreement, 0 chance).",
    "likert_cohens_d": "Cohen's d between the two systems' item means (an item's mean of "
    "its ratings): difference of the means ÷ pooled standard deviation. Positive when A is "
    "rated higher.",
    "likert_mann_whitney_p": "p-value of the two-sided Mann–Whitney U test on the item means.",
    "likert_holm_significant": "The two systems' ratings differ: Holm-adjusted p below "
    f"{SIGNIFICANCE}.",
    "likert_spearman": "Spearman correlation between the two groups' item means over the "
    "items both rated.",
    "likert_items_both": "Items of the system both groups rated.",
    "likert_evaluator_spearman": "Spearman correlation between the automatic evaluator's "
    "scores and the group's item means on the dimension.",
    "likert_evaluator_pearson": "Pearson correlation between the automatic evaluator's "
    "scores and the group's item means on the dimension.",
    "likert_evaluator_items": "Items with both an automatic score and the group's ratings "
    "on the dimension.",
    "likert_kendall_tau": "Kendall's tau-b between the two groups' orderings of the stage's "
    "systems by the mean of their item means: 1 the same ranking, 0 unrelated, −1 reversed.",
    # pairwise preference and ranking
    "pairwise_wins": "Answers in which A (the first system of the pair, by name) was preferred.",
    "pairwise_losses": "Answers in which B was preferred.",
    "pairwise_ties": "Answers that found the two equally good.",
    "pairwise_win_rate": "A's share of the answers that preferred one of the two (ties left out).",
    "pairwise_cohens_h": "Cohen's h between the two systems' win rates, 2·asin(√p) − "
    "2·asin(√(1 − p)): 0.2 small, 0.5 medium, 0.8 large; positive when A wins more.",
    "pairwise_binomial_p": "p-value of the two-sided binomial test of A's wins against an even "
    "split (ties left out).",
    "pairwise_holm_significant": "The pair's wins differ from an even split: Holm-adjusted p "
    f"below {SIGNIFICANCE}.",
    "pairwise_strength": "Bradley–Terry strength (log scale, mean 0), fitted on the wins "
    "(ties left out): the higher, the more often the system is preferred; a small ridge is "
    "added when a system never wins or never loses.",
    "pairwise_n_answers": "Pairwise answers that count (the attention pair left out).",
    # trends
    "trend_values": "Distinct numeric values of the setting among the items.",
    "trend_slope": "Change in the log-odds of a coherent answer per unit of the setting "
    "(logistic regression, standard errors clustered by item), with its 95% interval.",
    "trend_odds_ratio": "How the odds of a coherent answer multiply per unit of the setting.",
    "trend_spearman": "Spearman's rank correlation between the setting's values and their "
    "coherent shares.",
    # order effects
    "order_chi2_p": "Chi-squared test of the position an item was seen at × its label: "
    "a small p says the answers depend on the position.",
    "order_human_before": "The human reflection's coherent share when the annotator met it "
    "before any synthetic candidate of the batch.",
    "order_human_after": "The same when they met it after a synthetic candidate.",
    "n_human_before": "Judgements of the human reflection met before any synthetic candidate.",
    "n_human_after": "Judgements of the human reflection met after a synthetic candidate.",
    "trend_position_slope": "The position's own change in log-odds per place later in the "
    "batch, in a regression on the setting and the position together.",
    # pay
    "pay_batches": "Submitted batches of the group in the stage: the ones paid.",
    "pay_hours": "Their working time, from each batch's claim to its submission.",
    "pay_total": "What the batches cost: the pay × batches, or × hours for pay per hour.",
    "pay_per_judgement": "The cost ÷ the judgements analysed (the cost is every submitted "
    "batch's, so leaving sources out raises it).",
    "pay_hourly": "The median hourly rate earned over the batches (pay per batch ÷ its "
    "working time).",
    "pay_hourly_q1": "The lower quartile of the hourly rate earned.",
    "pay_hourly_q3": "The upper quartile of the hourly rate earned.",
    "pay_minimum": "The least hourly rate set with the pay.",
    "pay_below_minimum": "The share of batches that earned less an hour than that.",
    # workload
    "workload_annotators": "Annotators of the group with judgements in the stage.",
    "workload_batches": "Batches judged in the stage (one per context).",
    "workload_assignments": "Batches done: each annotator's of each batch.",
    "workload_batches_per_annotator": "Batches each annotator did in the stage.",
    "workload_raters_per_reflection": "The group's raters of each reflection in the stage.",
    "workload_synthetic_per_batch": "Synthetic reflections judged in each batch.",
    "workload_human": "Human reflections judged.",
    "workload_synthetic": "Synthetic reflections judged.",
    "workload_seconds_item": "The median time on one item, over the items with a recorded time.",
    "workload_seconds_batch": "The median time from a batch's claim to its submission.",
    # gated stages
    "gated_items": "Items of the deciding stage the gate decides (attention checks left out).",
    "gated_passed": "Items the rule let into the gated stage.",
    "gated_not_passed": "Items decided and kept out of the gated stage.",
    "gated_undecided": "Items whose deciding ratings are not all in yet.",
    "gated_flagged": "Decisions resting on a batch rejected since they were made: they stand.",
    "gated_judgements_saved": "Judgements the gated groups did not have to give: the items "
    "not passed × the gated stage's k × its groups.",
    "gated_strength_items": "Items of the gated stage with this deciding majority that the "
    "group answered.",
    "gated_strength_answers": "The group's answers to the coherence question on those items.",
    "gated_yes_rate": "The share of those answers that said Yes.",
    "gated_item_answers": "The gated group's answers to the coherence question on this item.",
    "gated_item_yes": "How many of those answers said Yes.",
    "gated_agreement": "The share of items, among those both groups have a majority on, "
    "where the gated group's majority equals the deciding group's.",
    "agreement_items": "Items both groups have a majority on.",
    "pairwise_n_pairs": "Distinct pairs of candidates answered.",
    "pairwise_fleiss": "Fleiss' kappa on which candidate of a pair won (or a tie), the pairs "
    "rated by the most common number of annotators.",
    "pairwise_randolph": "Randolph's free-marginal kappa on which candidate won, over the "
    "possible answers (two, or three with ties).",
    "pairwise_alpha": "Krippendorff's alpha (nominal) on which candidate won.",
    "pairwise_share_a": "Share of the decisive choices that went to the candidate shown on "
    "the left: 0.5 is no position bias.",
    "pairwise_position_p": "p-value of the binomial test of the left candidate's share "
    "against 0.5.",
    "pairwise_mean_abs_h": "Mean of |Cohen's h| over the group's pairs of systems: how "
    "strongly the group separates the systems.",
    "pairwise_kendall_tau": "Kendall's tau-b between the two groups' Bradley–Terry strengths: "
    "1 the same order of the systems, −1 reversed.",
    "ranking_blocks": "Rankings (an annotator's ranking of one context) holding the system.",
    "ranking_mean_rank": "Mean over the rankings of the system's rank (1 the best; ties as "
    "mid-ranks, several candidates of the system as their mean).",
    "ranking_n_rankings": "Rankings that count (an annotator's ranking of one context).",
    "ranking_n_contexts": "Contexts ranked.",
    "ranking_mean_w": "Kendall's W (tie-corrected) among the annotators of a context, "
    "averaged over the contexts: 1 complete agreement, 0 none.",
    "ranking_share_significant": "Share of the contexts whose W's chi-squared test has p < 0.05.",
    "ranking_friedman": "Friedman's chi-squared across the systems, over the rankings that "
    "rank every system (needs three systems).",
    # label distribution
    "label_share": "Share of judgements: a coherent judgement counts 1 for coherent, an "
    "incoherent one is split equally among the error categories it selected.",
    "not_offered": "Not offered: this stage did not offer the error category (its No "
    "offered other categories, or asked for a description instead), so nobody could "
    "choose it there; a share or an agreement would be misread as the error not seen.",
    # free-text descriptions
    "descriptions_n": "Answers No that came with a description in the annotator's own words.",
    "descriptions_n_incoherent": "Answers No (the judgements that could carry a description).",
    "descriptions_coverage": "Share of the No answers that carry a description.",
    "descriptions_n_coded": "Descriptions the study's primary coder has coded.",
    "descriptions_n_uninformative": "Coded descriptions the primary coder set aside as "
    "saying nothing specific (they carry no code).",
    "code_share": "Share of the primary coder's informative codings that carry this code; "
    "a description may carry several codes, so the shares can sum above 1.",
    "coder_kappa": "Cohen's kappa between the primary and the second coder on whether a "
    "description carries this code, over the descriptions both coded: agreement beyond "
    "what each coder's own rate of using the code gives by chance.",
    "n_both_coded": "Descriptions both the primary and the second coder coded.",
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
    "majority_agreement": "undefined: no annotator gave this label on an item with at least "
    f"{MIN_MAJORITY_RATERS} annotators",
    "correlation": "undefined: fewer than two common items, or one group gave every item "
    "the same score",
    "p_value": "undefined: the test needs more data (or some variation)",
    "rate": "undefined: no judgements",
    "recurring_identical_rate": "undefined: the annotator met no human reflection twice",
    "nonrecurring_rate": "undefined: no human reflection judged in this stage only",
    "majority_coherent_rate": f"undefined: no item has {MIN_MAJORITY_RATERS} or more "
    "annotators of the group",
    "empathy_mean": "undefined: no rating of the statement",
    "cohens_d_empathy": "undefined: a system has fewer than two ratings, or every rating is "
    "the same",
    "kendall_tau": "undefined: fewer than three common systems, or a group gave every "
    "system the same share",
    "mean_abs_delta_h": "undefined: fewer than two common systems",
    "majority_mee_share": "undefined: no item's majority said incoherent",
    "mean_abs_delta_d_empathy": "undefined: no pair of common systems with Cohen's d "
    "defined for both groups",
    "median_seconds": "undefined: no time recorded for the annotator's items",
    "fast_share": "undefined: no time recorded for the annotator's items",
    "yes_rate": "undefined: no counted judgements",
    "agreement_with_group": "undefined: no item with a majority among 2 or more other raters",
    "waiting_days": "undefined: no annotator went on to the next stage",
    "waiting_sd": "undefined: fewer than two annotators went on to the next stage",
    "questionnaire_mean": "undefined: not a 1–5 question, or nobody answered it",
    "label_share": "undefined: no judgements, or the stage asks for a description instead "
    "of error categories",
    "descriptions_coverage": "undefined: no No answers",
    "code_share": "undefined: no description coded informatively by the primary coder",
    "coder_kappa": "undefined: no second coder, no description both coded, or a coder "
    "never or always used the code",
    "likert_mean": 'undefined: no ratings (only "cannot judge")',
    "likert_sd": "undefined: fewer than two ratings",
    "likert_cohens_d": "undefined: a system has fewer than two items, or every item mean is "
    "the same",
    "likert_kendall_tau": "undefined: fewer than two common systems, or a group gave every "
    "system the same mean",
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
    "masi_alpha": "krippendorff_alpha",
    "jaccard_alpha": "krippendorff_alpha",
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
    "system_chi2_p": "p_value",
    "groups_chi2_p": "p_value",
    "p_holm": "p_value",
    "group_coherent_rate": "rate",
    "empathy_share": "empathy_mean",
    "likert_median": "likert_mean",
    "likert_alpha": "krippendorff_alpha",
    "likert_mann_whitney_p": "p_value",
    "likert_spearman": "correlation",
    "likert_evaluator_spearman": "correlation",
    "likert_evaluator_pearson": "correlation",
    "evaluator_system_spearman": "correlation",
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
    "recurring_identical_rate", "nonrecurring_rate", "label_share", "majority_coherent_rate",
    "cohens_h", "p_holm", "cohens_d_empathy", "kendall_tau", "mean_abs_delta_h",
    "majority_mee_share", "not_offered", "evaluator_system_spearman", "descriptions_coverage",
    "code_share", "coder_kappa", "batches_filled",
]  # fmt: skip

GLOSSARY_TERMS = {
    "n_judgements": "Judgements",
    "n_items": "Items judged",
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
    "majority_coherent_rate": "Majority coherent",
    "cohens_h": "Cohen's h",
    "p_holm": "Holm p (✱)",
    "cohens_d_empathy": "Cohen's d, empathy",
    "kendall_tau": "Kendall τ-b",
    "mean_abs_delta_h": "Mean |Δh|",
    "majority_mee_share": "Majority most evident error",
    "not_offered": "Not offered",
    "evaluator_system_spearman": "Automatic evaluator per system",
    "descriptions_coverage": "Description coverage",
    "code_share": "Code share",
    "coder_kappa": "Coder agreement (Cohen's κ)",
    "batches_filled": "Batches filled",
}


def glossary() -> list[tuple[str, str]]:
    """(term, explanation) pairs for the page's "About these numbers" list."""
    return [(GLOSSARY_TERMS[key], EXPLANATIONS[key]) for key in GLOSSARY_ORDER]
