"""Measures specific to the reflection-coherence protocol (BRIEF §5).

Agreement summaries with bootstrap intervals, most-evident-error (MEE)
agreement with consensus adjustment and category merging, empathy agreement,
between-group agreement, cross-stage shift on human reflections, human vs
synthetic, and per-annotator consistency. Built on
:mod:`analysis.metrics.agreement`, :mod:`analysis.metrics.association` and
:mod:`analysis.metrics.bootstrap`; no Django.

Judgements come in long form, one row per (item, rater), with a boolean
``coherent`` column, one boolean column per error category (named by its
slug) and an ``mee`` column holding the most evident error's slug (missing
when the rater gave none).
"""

from .annotators import annotator_consistency
from .empathy import EMPATHY_MERGED, EMPATHY_MERGED_ORDER, empathy_agreement
from .errors import mee_agreement, mee_labels
from .groups import between_group_agreement, majority_labels
from .shifts import coherent_rate_test, cross_stage_shift, recurrence_free
from .summary import agreement_summary

__all__ = [
    "EMPATHY_MERGED",
    "EMPATHY_MERGED_ORDER",
    "agreement_summary",
    "annotator_consistency",
    "between_group_agreement",
    "coherent_rate_test",
    "cross_stage_shift",
    "empathy_agreement",
    "majority_labels",
    "mee_agreement",
    "mee_labels",
    "recurrence_free",
]
