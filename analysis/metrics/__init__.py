"""Pure statistics of the analysis. No Django, no ORM.

* :mod:`.agreement`: Landis & Koch bands, Fleiss'/Randolph's kappa,
  Krippendorff's alpha, majority agreement ratio, coherence scores;
* :mod:`.association`: label distribution, correlations, chi-squared, Wilcoxon;
* :mod:`.bootstrap`: item-bootstrap intervals for the kappas and alpha;
* :mod:`.protocol`: the protocol's measures built on those, one module per concern
  (agreement summary, MEE, empathy, between groups, cross-stage shift,
  per-annotator consistency, annotator quality and waiting periods, the item-level table: coherence score, majority
  label and majority MEE per stage, item and group; systems and their pairs,
  group comparisons, generation settings, automatic evaluators per source and
  per system; free-text descriptions, their codes and the coders' agreement).

Undefined values are ``None``, never NaN: the JSON report must stay valid.
"""

from .agreement import (
    alpha_from_counts,
    coherence_scores,
    count_table,
    fleiss_kappa,
    kappa_from_counts,
    krippendorff_alpha,
    landis_koch_band,
    majority_agreement_counts,
    majority_agreement_ratio,
    modal_rows,
    randolph_kappa,
)
from .association import (
    INCOHERENT_UNSPECIFIED,
    chi2_test,
    inter_group_correlation,
    label_distribution,
    label_weights,
    wilcoxon_paired,
)
from .bootstrap import alpha_ci, kappa_ci, rate_ci
from .protocol import (
    agreement_summary,
    annotator_consistency,
    annotator_quality,
    between_group_agreement,
    binary_kappa,
    cohens_d,
    cohens_h,
    coherent_rate_test,
    cross_stage_shift,
    description_summary,
    empathy_agreement,
    evaluators_by_source,
    evaluators_systems,
    generation_settings,
    generation_values,
    group_comparison,
    holm,
    item_label_sums,
    item_table,
    majority_label,
    majority_labels,
    mee_agreement,
    mee_labels,
    recurrence_free,
    system_entries,
    system_pairs,
    system_stats,
    waiting_periods,
)

__all__ = [
    "INCOHERENT_UNSPECIFIED",
    "agreement_summary",
    "alpha_ci",
    "alpha_from_counts",
    "annotator_consistency",
    "annotator_quality",
    "between_group_agreement",
    "binary_kappa",
    "chi2_test",
    "cohens_d",
    "cohens_h",
    "coherence_scores",
    "coherent_rate_test",
    "count_table",
    "cross_stage_shift",
    "description_summary",
    "empathy_agreement",
    "evaluators_by_source",
    "evaluators_systems",
    "fleiss_kappa",
    "generation_settings",
    "generation_values",
    "group_comparison",
    "holm",
    "inter_group_correlation",
    "item_label_sums",
    "item_table",
    "kappa_ci",
    "kappa_from_counts",
    "krippendorff_alpha",
    "label_distribution",
    "label_weights",
    "landis_koch_band",
    "majority_agreement_counts",
    "majority_agreement_ratio",
    "majority_label",
    "majority_labels",
    "mee_agreement",
    "mee_labels",
    "modal_rows",
    "randolph_kappa",
    "rate_ci",
    "recurrence_free",
    "system_entries",
    "system_pairs",
    "system_stats",
    "waiting_periods",
    "wilcoxon_paired",
]
