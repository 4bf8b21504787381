"""Pure statistics of the analysis (BRIEF §5). No Django, no ORM.

* :mod:`.agreement`: Landis & Koch bands, Fleiss'/Randolph's kappa,
  Krippendorff's alpha, majority agreement ratio, coherence scores;
* :mod:`.association`: label distribution, correlations, chi-squared, Wilcoxon;
* :mod:`.bootstrap`: item-bootstrap intervals for the kappas and alpha;
* :mod:`.protocol`: the protocol's measures built on those, one module per concern
  (agreement summary, MEE, empathy, between groups, cross-stage shift,
  per-annotator consistency).

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
    majority_agreement_ratio,
    modal_rows,
    randolph_kappa,
)
from .association import (
    INCOHERENT_UNSPECIFIED,
    chi2_test,
    inter_group_correlation,
    label_distribution,
    wilcoxon_paired,
)
from .bootstrap import alpha_ci, kappa_ci
from .protocol import (
    agreement_summary,
    annotator_consistency,
    between_group_agreement,
    coherent_rate_test,
    cross_stage_shift,
    empathy_agreement,
    majority_labels,
    mee_agreement,
    mee_labels,
    recurrence_free,
)

__all__ = [
    "INCOHERENT_UNSPECIFIED",
    "agreement_summary",
    "alpha_ci",
    "alpha_from_counts",
    "annotator_consistency",
    "between_group_agreement",
    "chi2_test",
    "coherence_scores",
    "coherent_rate_test",
    "count_table",
    "cross_stage_shift",
    "empathy_agreement",
    "fleiss_kappa",
    "inter_group_correlation",
    "kappa_ci",
    "kappa_from_counts",
    "krippendorff_alpha",
    "label_distribution",
    "landis_koch_band",
    "majority_agreement_ratio",
    "majority_labels",
    "mee_agreement",
    "mee_labels",
    "modal_rows",
    "randolph_kappa",
    "recurrence_free",
    "wilcoxon_paired",
]
