"""The published annotation format: its columns and answer literals, shared by the
exports and the import (their one home is :mod:`studies.columns`, with every other
export column)."""

from ...columns import (  # noqa: F401
    ANNOTATOR_COLUMN,
    CANNOT_JUDGE_COLUMN,
    COHERENT_COLUMN,
    CONTEXT_COLUMN,
    DESCRIPTION_COLUMN,
    DIALOGUE_ID_COLUMN,
    DIMENSION_COLUMN,
    EMPATHY_COLUMN,
    GROUP_COLUMN,
    LIKERT_COLUMNS,
    LIKERT_OPTIONAL_COLUMNS,
    MOST_EVIDENT_COLUMN,
    NO,
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    PUBLISHED_OPTIONAL_COLUMNS,
    RATING_COLUMN,
    REFLECTION_COLUMN,
    SCALE_COLUMN,
    SLIDER_SCALE,
    SOURCE_COLUMN,
    STAGE_COLUMN,
    YES,
)
