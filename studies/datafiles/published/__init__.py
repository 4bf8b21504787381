"""The published annotation format and its import into a new, closed study.

The format is a flat CSV, one row per (reflection, annotator), with the columns of
``PUBLISHED_COLUMNS``; ``annotator_group``, ``most_evident_error`` and ``empathy`` are
optional (``PUBLISHED_OPTIONAL_COLUMNS``) and let a richer export round-trip. Any other
column (a pandas index, notes) is ignored and reported. An export of the same format
imports the constants below.

``annotations_import`` rebuilds a study from such a file: stages in order of first
appearance (no waiting period), one context per dialogue id, one reflection per
(dialogue, source, text), one batch per (stage, dialogue) holding the reflections
judged there (the human one first), one submitted assignment per (annotator, stage,
dialogue) and one judgement per row. The study's k and m are the largest numbers of
annotators per batch and group and of batches per annotator and stage in the file, so
the database's slot rules hold. An assignment is recurring when its annotator judged
the dialogue's human reflection in an earlier stage (the analysis's recurrence-free view).

Rules (docs/analysts/imports.md, "Importing published annotations", says the same):

* Cells are read without their surrounding whitespace, except ``reflection`` and the
  turn texts of ``dialogue_context``, which are kept exactly. ``Yes`` and ``No`` are
  case-sensitive, as the format writes them. Blank rows are skipped (but counted).
* Texts are kept exactly as written, so a file with exactly the exported columns,
  imported and exported again, gives back the same rows cell for cell. With
  ``spreadsheet_safe`` (a file exported for spreadsheets, or by versions that always
  escaped), a cell starting with an apostrophe before a formula trigger loses exactly
  that apostrophe (``studies.datafiles.spreadsheet``).
* ``annotator`` must be ``<prefix> <number>`` (``Expert 4``; the number without
  leading zeros), also when ``annotator_group`` names the group: the pseudonym is
  stored exactly and its number becomes the annotator number. Without that column the
  group is the prefix; with it (an empty cell also means the prefix), all annotators
  of a group must share one prefix and two groups cannot share one, since a group
  names its annotators "<prefix> <number>".
* ``dialogue_context`` must be given on at least one row of each dialogue, and every
  row that gives it must give the same turns; the published one-key shape and the
  ``{"role", "text"}`` shape are both accepted (``studies.datafiles.parse_turns``).
* A No row may select no category (published data can lack it). Without a
  ``most_evident_error`` cell, a single selected category is the most evident error,
  and several leave it empty. ``empathy`` is 1-5 (``4.0`` as pandas writes it is
  accepted), only on Yes rows.
* Imported annotators get access tokens like any annotator but are inactive (their
  links do not open: they are records of published work, not invitations) and have no
  consent record (the data was collected elsewhere; no database rule needs one).
  Assignments are stamped with the import time; their reflection order follows the
  same seeded recipe as ``assignment_shuffled_order``, since the shown order is not
  in the file.

All-or-nothing like every data file (``studies.datafiles``): every problem is
collected with its row (the header is row 1) and column, and only a clean file is
written, in one transaction, with bulk inserts.

Modules: :mod:`.columns` (the format's columns, shared with the export),
:mod:`.parsing` (the rows), :mod:`.importing` (the plan and the write).
"""

from .columns import (
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    PUBLISHED_OPTIONAL_COLUMNS,
)
from .importing import AnnotationsImportError, AnnotationsImportSummary, annotations_import

__all__ = [
    "PUBLISHED_CATEGORY_COLUMNS",
    "PUBLISHED_COLUMNS",
    "PUBLISHED_OPTIONAL_COLUMNS",
    "AnnotationsImportError",
    "AnnotationsImportSummary",
    "annotations_import",
]
