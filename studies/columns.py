"""Every column name of the exports, in one place: the published annotation format's
columns and answer literals (shared by the exports and the import, through
``studies.datafiles.published.columns``), the full export's own, and the names a
category slug (a column of its own) must not take. Imports nothing, so the models can
check slugs against it. Texts are written and read exactly; spreadsheet safety is
opt-in (:mod:`studies.datafiles.spreadsheet`)."""

YES = "Yes"
NO = "No"

DIALOGUE_ID_COLUMN = "annomi_dialogue_id"
STAGE_COLUMN = "stage"
CONTEXT_COLUMN = "dialogue_context"
SOURCE_COLUMN = "reflection_source"
REFLECTION_COLUMN = "reflection"
ANNOTATOR_COLUMN = "annotator"
COHERENT_COLUMN = "coherent_and_context_consistent"
# The default categories' slugs (protocol.DEFAULT_ERROR_CATEGORIES), in the published order.
PUBLISHED_CATEGORY_COLUMNS = (
    "dialogue_contradicting",
    "malformed",
    "off_topic",
    "on_topic_but_unverifiable",
    "parroting",
)
PUBLISHED_COLUMNS = (
    DIALOGUE_ID_COLUMN,
    STAGE_COLUMN,
    CONTEXT_COLUMN,
    SOURCE_COLUMN,
    REFLECTION_COLUMN,
    ANNOTATOR_COLUMN,
    COHERENT_COLUMN,
    *PUBLISHED_CATEGORY_COLUMNS,
)
GROUP_COLUMN = "annotator_group"
MOST_EVIDENT_COLUMN = "most_evident_error"
EMPATHY_COLUMN = "empathy"
# What is wrong in the annotator's own words: the last column of every export of a
# study with any description.
DESCRIPTION_COLUMN = "error_description"
PUBLISHED_OPTIONAL_COLUMNS = (GROUP_COLUMN, MOST_EVIDENT_COLUMN, EMPATHY_COLUMN, DESCRIPTION_COLUMN)
# The published Likert format: one row per (candidate, annotator, dimension). ``scale``
# is the number of points or ``slider``; ``rating`` the point (1 … n) or the slider's
# value (0 … 100), empty when ``cannot_judge`` is Yes.
DIMENSION_COLUMN = "dimension"
SCALE_COLUMN = "scale"
RATING_COLUMN = "rating"
CANNOT_JUDGE_COLUMN = "cannot_judge"
SLIDER_SCALE = "slider"
LIKERT_COLUMNS = (
    DIALOGUE_ID_COLUMN,
    STAGE_COLUMN,
    CONTEXT_COLUMN,
    SOURCE_COLUMN,
    REFLECTION_COLUMN,
    ANNOTATOR_COLUMN,
    DIMENSION_COLUMN,
    SCALE_COLUMN,
    RATING_COLUMN,
    CANNOT_JUDGE_COLUMN,
)
LIKERT_OPTIONAL_COLUMNS = (GROUP_COLUMN,)
# The published pairwise format: one row per (pair, annotator). ``a`` is the candidate
# shown on the left, ``b`` the one on the right; ``choice`` is A, B or Tie
# (``protocol.PAIR_CHOICES``) and ``reason`` the annotator's optional reason.
SOURCE_A_COLUMN, REFLECTION_A_COLUMN = "source_a", "reflection_a"
SOURCE_B_COLUMN, REFLECTION_B_COLUMN = "source_b", "reflection_b"
CHOICE_COLUMN = "choice"
REASON_COLUMN = "reason"
PAIRWISE_COLUMNS = (
    DIALOGUE_ID_COLUMN,
    STAGE_COLUMN,
    CONTEXT_COLUMN,
    ANNOTATOR_COLUMN,
    SOURCE_A_COLUMN,
    REFLECTION_A_COLUMN,
    SOURCE_B_COLUMN,
    REFLECTION_B_COLUMN,
    CHOICE_COLUMN,
    REASON_COLUMN,
)
# The published ranking format: one row per (candidate, annotator); ``rank`` is 1 for
# the best, tied candidates sharing the lowest rank of their tie (1, 2, 2, 4).
RANK_COLUMN = "rank"
RANKING_COLUMNS = (
    DIALOGUE_ID_COLUMN,
    STAGE_COLUMN,
    CONTEXT_COLUMN,
    SOURCE_COLUMN,
    REFLECTION_COLUMN,
    ANNOTATOR_COLUMN,
    RANK_COLUMN,
)
# Which gate let the item in (a gated stage's rows; ``StageGate.describe``): a column
# of any export covering a gated stage, before the description; the full export adds
# when the item's decision was made.
GATE_COLUMN = "gate"
GATE_DECIDED_COLUMN = "gate_decided_at"
# The primary coder's codes of the description: the full export's last column, in a
# study whose descriptions were coded.
PRIMARY_CODES_COLUMN = "description_codes"
# Its value for a description the primary coder set aside as saying nothing specific.
UNINFORMATIVE = "uninformative"

# The full export's columns around its category columns.
FULL_COLUMNS_HEAD = (
    "study",
    "stage",
    "stage_position",
    "batch_id",
    "annomi_dialogue_id",
    "reflection_id",
    "reflection_source",
    "reflection_kind",
    "generation",
    "reflection",
    "annotator",
    "annotator_group",
    "assignment_id",
    "assignment_status",
    "is_recurring",
    "item_position",
    "coherent_and_context_consistent",
)
FULL_COLUMNS_TAIL = (
    "most_evident_error",
    "empathy",
    "empathy_label",
    "seconds_spent",
    "judged_at",
    "revised_at",
    "assigned_at",
    "submitted_at",
    "attention_check_passed",
    # A crowd worker's outcome in the row's stage (``CrowdEntry.Outcome``: completed,
    # partial, screened_out, no_work; empty for invited annotators and work under way).
    "crowd_outcome",
)

# The full export's columns about each annotator (the analysis's quality panel:
# ``analysis.export_columns``), between FULL_COLUMNS_TAIL and the description.
ANNOTATOR_QUALITY_KEYS = (
    "n_batches",
    "median_seconds",
    "fast_share",
    "attention_failed",
    "yes_rate",
    "agreement_with_group",
    "flags",
)
ANNOTATOR_QUALITY_COLUMNS = tuple(f"annotator_{key}" for key in ANNOTATOR_QUALITY_KEYS)

#: Every export column that is not a category's: a category slug (a column of its
#: own) must not be one of them, or the columns would shift.
RESERVED_COLUMN_NAMES = frozenset(
    {
        *FULL_COLUMNS_HEAD,
        *FULL_COLUMNS_TAIL,
        *PUBLISHED_COLUMNS,
        *PUBLISHED_OPTIONAL_COLUMNS,
        PRIMARY_CODES_COLUMN,
        GATE_COLUMN,
        GATE_DECIDED_COLUMN,
        *ANNOTATOR_QUALITY_COLUMNS,
    }
    - set(PUBLISHED_CATEGORY_COLUMNS)
)

#: Names no code of a codebook may take: a code may become a category (a column), and
#: ``uninformative`` is the ``description_codes`` value of an uninformative coding.
RESERVED_CODE_SLUGS = RESERVED_COLUMN_NAMES | {UNINFORMATIVE}

#: What the typed files (JSON Lines, Parquet: ``studies.datafiles.typed``) make of a
#: column's text. A column named here is the same kind in every export that has it;
#: any other is text, kept exactly. ``boolean``: Yes / No (empty: null); ``integer``
#: and ``number``: the number written (empty: null); ``timestamp``: an ISO 8601 time
#: in UTC (empty: null). The coherence formats' category columns are booleans too,
#: whatever their slug (the exports name them): true where ticked, null where not.
INTEGER_COLUMNS = frozenset(
    {
        "stage_position",
        "batch_id",
        "reflection_id",
        "assignment_id",
        "item_position",
        EMPATHY_COLUMN,
        RATING_COLUMN,
        "annotator_n_batches",
        "annotator_attention_failed",
        RANK_COLUMN,
        "attempt",
        "attempt_right",
        "attempt_items",
        "practice_item",
        "question_position",
        "judgement_id",
    }
)
NUMBER_COLUMNS = frozenset(
    {
        "seconds_spent",
        "annotator_median_seconds",
        "annotator_fast_share",
        "annotator_yes_rate",
        "annotator_agreement_with_group",
        "attempt_score",
    }
)
BOOLEAN_COLUMNS = frozenset(
    {
        COHERENT_COLUMN,
        *PUBLISHED_CATEGORY_COLUMNS,
        "is_recurring",
        "attention_check_passed",
        CANNOT_JUDGE_COLUMN,
        "expected_coherent",
        "is_right",
        "primary",
        UNINFORMATIVE,
    }
)
TIMESTAMP_COLUMNS = frozenset(
    {
        "judged_at",
        "revised_at",
        "assigned_at",
        "submitted_at",
        GATE_DECIDED_COLUMN,
        "attempt_started_at",
        "attempt_finished_at",
        "answered_at",
    }
)
