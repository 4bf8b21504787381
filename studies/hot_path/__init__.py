"""The annotator's hot path: the statements every annotator request runs, in one place.

Every annotator page reads its session and who is asking; the item panel reads the
candidate and the batch's answers; a save writes one answer. Compiling these as ORM
queries, and planning them, cost several times running them (bench/load/README.md),
so they are SQL built here once per process and database backend, from the models'
metadata and the querysets' own conditions: table and column names come from
``_meta``, statuses from the ``Status`` enums, and the rules (which assignment takes
answers, which session is live, which revision is current) are the ``Q`` objects the
ORM uses elsewhere (``Assignment.accepting_answers_q``, ``AnnotatorSession.live_q``),
compiled by Django's own compiler with named parameters. Results are read by name.

On PostgreSQL the statements are prepared (``prepared_cursor``) and a save is one
statement; on other databases, and to find out why a PostgreSQL save wrote nothing,
a save goes through the ORM (``_answer_save_orm``) with the same rules.
"""

from .ranking import ranking_save
from .reads import annotator_of_session, item_panel_reads, session_row
from .saves import (
    ANSWER_FIELDS,
    MAX_ITEM_NUMBER,
    STALE_MESSAGE,
    AssignmentClosed,
    EncodedAnswer,
    StaleAnswer,
    answer_save,
)
from .sql import prepared_cursor

__all__ = [
    "ANSWER_FIELDS",
    "MAX_ITEM_NUMBER",
    "STALE_MESSAGE",
    "AssignmentClosed",
    "EncodedAnswer",
    "StaleAnswer",
    "annotator_of_session",
    "answer_save",
    "item_panel_reads",
    "prepared_cursor",
    "ranking_save",
    "session_row",
]
