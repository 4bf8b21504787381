"""Measures specific to the reflection-coherence protocol.

Agreement summaries with bootstrap intervals, most-evident-error (MEE)
agreement with consensus adjustment and category merging, agreement on the whole
set of ticked categories (:mod:`.category_sets`), agreement day by day
(:mod:`.over_time`), empathy agreement,
between-group agreement, cross-stage shift on human reflections, human vs
synthetic, per-annotator consistency, the item-level table (:mod:`.items`, the one
home of the majority rule), and the system-level analysis built on it
(:mod:`.systems`, :mod:`.generation`, :mod:`.evaluators`), and the free-text
descriptions with their coding (:mod:`.descriptions`); and the Likert instrument's
ratings on named dimensions (:mod:`.likert`), pairwise preferences (:mod:`.pairwise`)
and rankings (:mod:`.ranking`). Built on
:mod:`analysis.metrics.agreement`, :mod:`analysis.metrics.association` and
:mod:`analysis.metrics.bootstrap`; no Django.

Judgements come in long form, one row per (item, rater), with a boolean
``coherent`` column, one boolean column per error category (named by its
slug) and an ``mee`` column holding the most evident error's slug (missing
when the rater gave none).
"""

from .annotators import annotator_consistency, annotator_consistency_pooled
from .category_sets import category_set_agreement
from .descriptions import binary_kappa, description_summary
from .empathy import EMPATHY_MERGED, EMPATHY_MERGED_ORDER, empathy_agreement
from .errors import all_incoherent, mee_agreement, mee_labels
from .evaluators import evaluators_by_source, evaluators_systems
from .generation import (
    crossed_entries,
    crossed_values,
    generation_settings,
    generation_values,
    item_label_sums,
)
from .groups import between_group_agreement, majority_labels
from .items import item_table, majority_label
from .likert import (
    item_means,
    likert_alpha,
    likert_cell,
    likert_groups_compared,
    likert_system_pairs,
)
from .order import order_effects, with_positions
from .over_time import agreement_over_time
from .pay import pay_summary
from .quality import annotator_quality, waiting_periods
from .questionnaires import questionnaire_summary, screened_out_summary
from .shifts import coherent_rate_test, cross_stage_shift, recurrence_free
from .spread import label_spread
from .summary import agreement_summary
from .systems import (
    cohens_d,
    cohens_h,
    group_comparison,
    holm,
    system_entries,
    system_pairs,
    system_stats,
)
from .trends import setting_trends
from .workload import workload

__all__ = [
    "EMPATHY_MERGED",
    "EMPATHY_MERGED_ORDER",
    "agreement_over_time",
    "agreement_summary",
    "all_incoherent",
    "annotator_consistency",
    "annotator_consistency_pooled",
    "annotator_quality",
    "between_group_agreement",
    "binary_kappa",
    "category_set_agreement",
    "cohens_d",
    "cohens_h",
    "coherent_rate_test",
    "cross_stage_shift",
    "crossed_entries",
    "crossed_values",
    "description_summary",
    "empathy_agreement",
    "evaluators_by_source",
    "evaluators_systems",
    "generation_settings",
    "generation_values",
    "group_comparison",
    "holm",
    "item_label_sums",
    "item_means",
    "item_table",
    "label_spread",
    "likert_alpha",
    "likert_cell",
    "likert_groups_compared",
    "likert_system_pairs",
    "majority_label",
    "majority_labels",
    "mee_agreement",
    "mee_labels",
    "order_effects",
    "pay_summary",
    "questionnaire_summary",
    "recurrence_free",
    "screened_out_summary",
    "setting_trends",
    "system_entries",
    "system_pairs",
    "system_stats",
    "waiting_periods",
    "with_positions",
    "workload",
]
