"""The published annotation format (BRIEF §6): its columns, answer literals and the
spreadsheet-safe cell escaping shared by the exports and the import.

Formula injection: a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or
``@`` (or tab / carriage return) as a formula. Exports therefore prefix such a cell
with an apostrophe, which spreadsheets hide and treat as "text". So that the escaping
can always be undone, a cell that starts with apostrophes followed by one of those
characters gets one more. The import removes exactly one apostrophe from such a cell,
so an exported file reads back to the exact texts. (A file from elsewhere whose text
really starts with an apostrophe followed by one of those characters loses one
apostrophe.)
"""

YES = "Yes"
NO = "No"

DIALOGUE_ID_COLUMN = "annomi_dialogue_id"
STAGE_COLUMN = "stage"
CONTEXT_COLUMN = "dialogue_context"
SOURCE_COLUMN = "reflection_source"
REFLECTION_COLUMN = "reflection"
ANNOTATOR_COLUMN = "annotator"
COHERENT_COLUMN = "coherent_and_context_consistent"
# The default categories' slugs (protocol.DEFAULT_ERROR_CATEGORIES), in BRIEF §6 order.
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
PUBLISHED_OPTIONAL_COLUMNS = (GROUP_COLUMN, MOST_EVIDENT_COLUMN, EMPATHY_COLUMN)

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _looks_like_formula(value: str) -> bool:
    """Starts with a formula trigger, after any number of apostrophes."""
    stripped = value.lstrip("'")
    return bool(stripped) and stripped[0] in FORMULA_TRIGGERS


_MAY_NEED_ESCAPING = frozenset((*FORMULA_TRIGGERS, "'"))


def cell_escape(value: str) -> str:
    """Make a text cell safe to open in a spreadsheet (see the module docstring)."""
    if value and value[0] in _MAY_NEED_ESCAPING and _looks_like_formula(value):
        return "'" + value
    return value


def cell_unescape(value: str) -> str:
    """Undo :func:`cell_escape`: exactly one apostrophe comes off a cell that starts
    with apostrophes followed by a formula trigger."""
    if value.startswith("'") and _looks_like_formula(value):
        return value[1:]
    return value
