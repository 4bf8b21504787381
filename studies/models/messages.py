"""The messages forms (the admin) show when a check constraint refuses a value; the
database raises the same constraint by name for raw writes."""

from django.db import models

from ..limits import CAP_MESSAGES
from ..protocol import HUMAN_SOURCE
from .categories import ErrorCategory
from .coding import Code
from .drafts import DRAFT_MAX_CHARS, ItemDraft
from .gates import StageGate
from .likert import LikertDimension, LikertRating
from .materials import DialogueContext, Reflection
from .pay import StagePay
from .people import Annotator, CrowdEntry, WaitExemption
from .questionnaires import MESSAGES as QUESTIONNAIRE_MESSAGES
from .questionnaires import Choice, Question, QuestionAnswer, Questionnaire, ScreeningTally
from .roles import StudyRole, StudyRoleEvent
from .stages import Stage, StageGroupWait
from .study import LANGUAGES_MESSAGE, AnnotatorGroup, ConsentVersion, Study
from .work import Assignment, Judgement

# Category and code slugs become column names and report keys alike.
SLUG_MESSAGE = "Use lower-case letters, digits and underscores, starting with a letter."

CHECK_MESSAGES = {
    "study_role_valid": "A role is owner, collaborator, analyst, coder or viewer.",
    "study_role_event_role_valid": "A role is owner, collaborator, analyst, coder or viewer.",
    "study_role_event_previous_role_valid": (
        "A role is owner, collaborator, analyst, coder or viewer."
    ),
    "study_role_event_changes": "A role change must change the role.",
    "study_slug_format": "Use lower-case letters, digits, hyphens and underscores only.",
    "study_status_valid": "Status must be draft, open or closed.",
    "study_overlap_k_positive": "At least one annotator per batch and group is needed.",
    "study_batches_per_stage_positive": "Each annotator needs at least one batch per stage.",
    "study_time_limit_positive": "The time allowed per batch must be longer than zero.",
    "study_attention_policy_valid": "Choose what a failed attention check does.",
    "study_purged_stays_closed": "The personal data of this study's annotators was deleted: "
    "it stays closed.",
    "consent_version_positive": "Consent versions are numbered from 1.",
    "stage_position_positive": "Stage positions start at 1.",
    "stage_name_not_empty": "A stage needs a name.",
    "stage_min_wait_not_negative": "The minimum wait cannot be negative (0 is allowed).",
    "stage_overlap_k_positive": "At least one annotator per batch and group is needed "
    "(empty: the study's k).",
    "stage_batches_per_stage_positive": "Each annotator needs at least one batch in the "
    "stage (empty: the study's m).",
    "stage_group_wait_not_negative": "The minimum wait cannot be negative (0 is allowed).",
    "stage_pay_positive": "Pay more than 0.",
    "stage_pay_currency_code": "Give the currency as its three-letter ISO 4217 code in "
    'capitals, e.g. "GBP".',
    "stage_pay_minimum_not_negative": "The least hourly rate cannot be negative.",
    "gate_rule_valid": "Choose one of the gate rules.",
    "gate_category_for_its_rule": "The rule on an error category needs the category; the "
    "other rules take none.",
    "gate_dimension_for_its_rule": "The Likert rule needs the dimension; the other rules "
    "take none.",
    "gate_threshold_for_its_rule": "The coherence score and Likert rules need s or x; the "
    "other rules take none.",
    "gate_second_group_for_its_rule": "The rule comparing groups needs a second group, "
    "other than the deciding one; the other rules take none.",
    "gate_min_votes_for_a_majority": "At least n raters applies to the majority rules only, "
    "and is 1 or more.",
    "gate_min_passed_positive": "A batch needs at least one item.",
    "gate_source_not_itself": "A stage cannot decide its own items: choose an earlier stage.",
    "stage_coding_scheme_asks_categories": "Only a stage that asks for error categories "
    "can take its categories from coding.",
    "study_coherence_question_not_empty": "The study needs a coherence question.",
    "study_data_license_valid": "Choose one of the licences offered.",
    "study_data_languages_format": LANGUAGES_MESSAGE,
    "stage_no_answer_valid": 'After "No" a stage asks for error categories, a description, '
    "or both.",
    "stage_join_key_format": "Use 1 to 64 letters, digits, hyphens and underscores.",
    "stage_completion_code_format": "Use 1 to 64 letters, digits, hyphens and underscores.",
    "stage_screened_out_code_format": "Use 1 to 64 letters, digits, hyphens and underscores, "
    "or leave it empty.",
    "stage_platform_task_ids_format": "Use platform ids of letters, digits, hyphens and "
    "underscores, separated by commas (no spaces), or leave it empty.",
    "stage_codes_differ": "The completion, partial-completion and screened-out codes of a "
    "stage must differ from each other.",
    "stage_partial_completion_code_format": "Use 1 to 64 letters, digits, hyphens and "
    "underscores, or leave it empty.",
    "group_name_not_empty": "A group needs a name.",
    "group_prefix_format": "The pseudonym prefix must not start or end with a space or a digit "
    '(annotators are named "<prefix> <number>").',
    "category_slug_format": SLUG_MESSAGE,
    "category_slug_not_an_export_column": "This slug is already the name of an export column "
    "(e.g. error_description, empathy, annotator); please choose another.",
    "category_bit_range": "A category's storage bit must be between 0 and 30.",
    "code_slug_format": SLUG_MESSAGE,
    "context_external_id_not_empty": "A context needs its dialogue id.",
    "reflection_text_not_empty": "A reflection needs text.",
    "reflection_source_not_empty": "A reflection needs a source.",
    "reflection_kind_valid": "Kind must be human, synthetic or attention check.",
    "reflection_human_kind_matches_source": f'The human reflection has the source "{HUMAN_SOURCE}", '
    "and only it does.",
    "annotator_number_positive": "Annotator numbers start at 1.",
    "draft_number_from_1": "Items are numbered from 1.",
    "draft_fields_capped": f"A draft holds at most {DRAFT_MAX_CHARS:,} characters.",
    "annotator_platform_valid": "Unknown crowd platform.",
    "annotator_platform_id_with_platform": "A platform participant id needs its platform, and "
    "the other way round.",
    "annotator_consent_version_and_time": "Consent needs both the version and the time.",
    "crowd_entry_platform_valid": "Unknown crowd platform.",
    "crowd_entry_outcome_valid": "Unknown outcome.",
    "crowd_entry_outcome_with_time": "An outcome needs the time the worker was sent back.",
    "crowd_entry_submit_to_mturk": "Only an MTurk entry posts back, to MTurk or its sandbox.",
    "assignment_slots_positive": "Slots are numbered from 1.",
    "assignment_status_valid": "Unknown assignment status.",
    "assignment_expires_after_assigned": "The deadline must come after the assignment.",
    "assignment_submitted_has_time": "A submitted assignment needs its submission time.",
    "assignment_open_not_closed": "An open assignment cannot have a submission, expiry or "
    "rejection time.",
    "assignment_expired_has_time": "An expired assignment needs its expiry time.",
    "assignment_rejected_has_reason": "A rejection needs a reason and a time.",
    "assignment_started_after_assigned": "Work cannot start before the batch was assigned.",
    "assignment_submitted_after_assigned": "A batch cannot be submitted before it was assigned.",
    "judgement_categories_only_when_incoherent": "Error categories can only be chosen when the "
    "answer is No.",
    "judgement_mee_only_when_incoherent": "A most evident error can only be chosen when the "
    "answer is No.",
    "judgement_mee_among_selected": "The most evident error must be one of the chosen categories.",
    "judgement_empathy_only_when_coherent": "The 1–5 rating is only given when the answer is Yes.",
    "judgement_seconds_not_negative": "Time spent cannot be negative.",
    "judgement_description_only_when_incoherent": "A description of what is wrong can only be "
    "given when the answer is No.",
    "judgement_description_trimmed": "A description is stored without leading or trailing spaces.",
    "judgement_other_instrument_without_coherence_fields": "An answer without Yes or No has "
    "no error categories, most evident error, rating or description.",
    "stage_instrument_valid": "Choose the coherence protocol, Likert ratings, pairwise "
    "preference or ranking.",
    "stage_pairs_per_context_positive": "A pairwise stage has at least one pair per context "
    "(empty: every pair).",
    "judgement_pair_answer": "A pairwise answer is A, B or Tie for a pair of candidates, and "
    "has no Yes/No or rank; other answers have no pairwise choice, side or reason.",
    "judgement_pair_of_two": "A pair compares two different candidates.",
    "judgement_rank_positive_without_coherence": "A rank is 1 or more, on an answer without "
    "Yes or No.",
    "judgement_reason_trimmed": "A reason is stored without leading or trailing spaces.",
    "likert_dimension_position_positive": "Dimension positions start at 1.",
    "likert_dimension_name_format": SLUG_MESSAGE,
    "likert_dimension_statement_not_empty": "A dimension needs a statement to rate.",
    "likert_dimension_points_range": "A dimension has 2 to 11 points, or none for a slider.",
    "likert_dimension_label_per_point": "Give one label per point (a slider: its two ends).",
    "likert_dimension_attention_pass_in_scale": "The attention check's passing ratings lie "
    "within the scale, the first not above the last.",
    "likert_dimension_attention_pass_only_for_the_check": "Only the attention check's "
    "dimension has passing ratings.",
    "likert_rating_value_or_cannot_judge": 'A rating is a value or "cannot judge", not both.',
    **QUESTIONNAIRE_MESSAGES,
    **CAP_MESSAGES,
}

for _model in (
    Study,
    ConsentVersion,
    Stage,
    StageGroupWait,
    StagePay,
    StageGate,
    AnnotatorGroup,
    ErrorCategory,
    Code,
    DialogueContext,
    Reflection,
    Annotator,
    CrowdEntry,
    WaitExemption,
    Assignment,
    Judgement,
    ItemDraft,
    Questionnaire,
    Question,
    Choice,
    QuestionAnswer,
    ScreeningTally,
    StudyRole,
    StudyRoleEvent,
    LikertDimension,
    LikertRating,
):
    for _constraint in _model._meta.constraints:
        if isinstance(_constraint, models.CheckConstraint):
            _constraint.violation_error_message = CHECK_MESSAGES[_constraint.name]
