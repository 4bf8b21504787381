"""Spreadsheet safety, for the files meant to be opened in a spreadsheet.

A CSV file is an interchange format: the exports write every text exactly as stored,
and the import keeps every text exactly as written, so that pandas, R or a diff
against the original release read the same texts. Spreadsheets are the exception:
they run a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or tab / carriage
return) as a formula (formula injection). For them there are two opt-in answers:

* the Excel download (:mod:`.xlsx`), whose text cells are text, so nothing runs;
* the *spreadsheet-safe* CSV: :func:`cell_escape` prefixes such a cell with an
  apostrophe, which spreadsheets hide and treat as "text". So that the escaping can
  always be undone, a cell that starts with apostrophes followed by one of those
  characters gets one more. :func:`cell_unescape` (``import_annotations
  --spreadsheet-safe``) removes exactly one apostrophe from such a cell, so a file
  exported that way (or by earlier versions, which always escaped) reads back to the
  exact texts.
"""

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_MAY_NEED_ESCAPING = frozenset((*FORMULA_TRIGGERS, "'"))


def _looks_like_formula(value: str) -> bool:
    """Starts with a formula trigger, after any number of apostrophes."""
    stripped = value.lstrip("'")
    return bool(stripped) and stripped[0] in FORMULA_TRIGGERS


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


def cell_exact(value: str) -> str:
    """The faithful choice: the cell as it is (the counterpart of the two above)."""
    return value
