"""Data files: the one reader, problem collector and error of every import, and the
formats built on them.

The core (imported from here):

* :mod:`.reading`: bytes, text, paths and uploads to text (UTF-8, byte-order mark
  dropped, the first bad byte named), CSV records numbered as users count rows, and
  the header check (missing, duplicated and ignored columns);
* :mod:`.strict_json`: JSON limited to what PostgreSQL stores (no NaN, Infinity,
  overflowing numbers or nesting too deep to parse);
* :mod:`.text`: what PostgreSQL can store as text (NUL, unpaired surrogates, lengths);
* :mod:`.problems`: the problem collector (capped, in row order) and
  :class:`DataFileError`, which the commands, the admin and the API report one way;
* :mod:`.spreadsheet` and :mod:`.xlsx`: spreadsheet safety for the exports (the
  opt-in apostrophe of the spreadsheet-safe CSV, and the Excel workbook).

The formats: :mod:`.materials` (contexts and reflections, JSON or CSV),
:mod:`.published` (published annotations, CSV) and, in the analysis app because its
rows are analysis data, ``analysis.importers`` (automatic scores, CSV). Each holds only
what is particular to it (its columns, its rows, the write) and uses the core for the
rest. The interfaces share :mod:`.commands` (the import commands' base) and
:mod:`.admin` (the admin upload view).
"""

from ..text import storable_problem
from .problems import MAX_REPORTED_PROBLEMS, DataFileError, Problem, Problems
from .reading import CsvRecords, Header, header_check, open_text, read_text
from .spreadsheet import cell_escape, cell_unescape
from .strict_json import InvalidJSON, json_loads_strict, json_value_problem
from .turns import parse_turns, parse_turns_cell

__all__ = [
    "MAX_REPORTED_PROBLEMS",
    "CsvRecords",
    "DataFileError",
    "Header",
    "InvalidJSON",
    "Problem",
    "Problems",
    "cell_escape",
    "cell_unescape",
    "header_check",
    "json_loads_strict",
    "json_value_problem",
    "open_text",
    "parse_turns",
    "parse_turns_cell",
    "read_text",
    "storable_problem",
]
