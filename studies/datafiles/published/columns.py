"""The published annotation format: its columns and answer literals,
shared by the exports and the import. Texts are written and read exactly;
spreadsheet safety is opt-in (:mod:`studies.datafiles.spreadsheet`)."""

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
