"""Writes on studies (HackSoft style): every rule a write must obey lives here.

Views, the admin, management commands, the API and Celery tasks call these
functions, so the rules cannot drift apart between interfaces. Validation errors are
``django.core.exceptions.ValidationError`` with field-keyed messages.
"""

from .claims import assignment_claim, assignment_create, assignment_shuffled_order
from .demo import SimulationSummary, demo_judgements_simulate
from .judgements import (
    Answer,
    AssignmentClosed,
    EncodedAnswer,
    StaleAnswer,
    answer_encode,
    judgement_record,
    judgement_record_item,
    likert_answer_encode,
    pairwise_answer_encode,
    ranking_encode,
    ranking_record,
    study_category_bits,
)
from .lifecycle import (
    assignment_expire,
    assignment_reject,
    assignment_submit,
    assignments_expire_overdue,
)
from .notifications import unlock_notifications_send
from .privacy import study_personal_data_counts, study_purge_personal_data
from .stages import (
    NoWorkAvailable,
    StageLocked,
    wait_exemption_grant,
)
from .studies import (
    annotator_complete_tutorial,
    annotator_consent,
    annotator_decline,
    annotator_needs_consent,
    annotator_validate,
    annotators_create,
    consent_version_current,
    consent_version_sync,
    error_categories_create_defaults,
    error_category_next_bit,
    study_create,
    study_open,
)

__all__ = [
    "Answer",
    "AssignmentClosed",
    "EncodedAnswer",
    "NoWorkAvailable",
    "SimulationSummary",
    "StageLocked",
    "StaleAnswer",
    "annotator_complete_tutorial",
    "annotator_consent",
    "annotator_decline",
    "annotator_needs_consent",
    "annotator_validate",
    "annotators_create",
    "answer_encode",
    "assignment_claim",
    "assignment_create",
    "assignment_expire",
    "assignment_reject",
    "assignment_shuffled_order",
    "assignment_submit",
    "assignments_expire_overdue",
    "consent_version_current",
    "consent_version_sync",
    "demo_judgements_simulate",
    "error_categories_create_defaults",
    "error_category_next_bit",
    "judgement_record",
    "judgement_record_item",
    "likert_answer_encode",
    "pairwise_answer_encode",
    "ranking_encode",
    "ranking_record",
    "study_category_bits",
    "study_create",
    "study_open",
    "study_personal_data_counts",
    "study_purge_personal_data",
    "unlock_notifications_send",
    "wait_exemption_grant",
]
