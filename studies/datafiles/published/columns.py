"""The published annotation format: its columns and answer literals, shared by the
exports and the import (their one home is :mod:`studies.columns`, with every other
export column)."""

from ...columns import (  # noqa: F401
    ANNOTATOR_COLUMN,
    COHERENT_COLUMN,
    CONTEXT_COLUMN,
    DESCRIPTION_COLUMN,
    DIALOGUE_ID_COLUMN,
    EMPATHY_COLUMN,
    GROUP_COLUMN,
    MOST_EVIDENT_COLUMN,
    NO,
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    PUBLISHED_OPTIONAL_COLUMNS,
    REFLECTION_COLUMN,
    SOURCE_COLUMN,
    STAGE_COLUMN,
    YES,
)
