"""Row locks: one helper per aggregate, taken in one order.

Every row lock the project takes on purpose is taken here (the hot path's statement,
which names its lock in its SQL, says where it sits). A transaction that locks rows
of more than one aggregate locks them in this order, skipping any it does not need,
so two transactions never wait for each other in a circle (a deadlock):

1. ``STUDY``: imports (materials, scores), computed scores, opening, consent
   versions, the codebook's categories, a coder joining, the purge, a crowd join.
2. ``STAGE``: a batch given by hand (``assignment_create``), a stage's error scheme
   marked final, a gated stage's items decided and its batches formed.
3. ``QUESTIONNAIRE``: FOR SHARE while answers are written, FOR UPDATE while the admin
   checks and changes its questions (``questionnaire_lock``).
4. ``GROUP``: numbering new annotators; a crowd join.
5. ``ANNOTATOR``: a claim, the quiz, ending a crowd worker's stage early, a screening
   answer that ends participation.
6. ``CROWD_ENTRY``: recording the outcome a crowd worker is sent back with.
7. ``ASSIGNMENT``: saving an answer (``FOR NO KEY UPDATE``, so answers, which refer to
   it, can be written meanwhile), submitting, rejecting.
8. ``BATCH``: counting a batch's free slots.
9. ``CODER``, then 10. ``DESCRIPTION_CODING``: the coding of descriptions.
11. ``ANALYSIS_RUN``: a worker claiming a run (``analysis.services``).
12. ``SESSION``: signing browsers out of a study (the purge).

Then, when the transaction commits, the stage-codes trigger (migration 0021) takes a
transaction-level advisory lock per study while it compares the codes of the study's
stages; it takes no row lock after it, so it comes last.

Why this order: outer before inner. A study's configuration (its row, stages,
questionnaires, groups) comes before the people in it, a person before their work,
the work before what is made of it afterwards (coding, analysis), and browser
sessions last. One exception follows the claim: it holds the annotator, expires
their overdue assignment (an UPDATE, which locks that row) and only then locks
candidate batches, one at a time, so assignments come before batches. Writes that
lock rows implicitly (an UPDATE locks the rows it changes) follow the same order.

Rows of one aggregate are locked in primary-key order; each helper's queryset is
ordered by ``pk`` and locks only its own table (``of=("self",)``), so a
``select_related`` never locks the joined rows: a caller that needs those locked
takes their own helper first. Must be used inside a transaction.

``locks_recorded`` lets a test see which aggregates a path locked, in order (a
context variable read per lock; nothing is kept when no test asks).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import IntEnum

from django.db import connection
from django.db.models import QuerySet

from .models import (
    Annotator,
    AnnotatorGroup,
    AnnotatorSession,
    Assignment,
    Batch,
    Coder,
    CrowdEntry,
    DescriptionCoding,
    Questionnaire,
    Stage,
    Study,
)


class Aggregate(IntEnum):
    """The aggregates in the order their rows are locked (the module docstring)."""

    STUDY = 1
    STAGE = 2
    QUESTIONNAIRE = 3
    GROUP = 4
    ANNOTATOR = 5
    CROWD_ENTRY = 6
    ASSIGNMENT = 7
    BATCH = 8
    CODER = 9
    DESCRIPTION_CODING = 10
    ANALYSIS_RUN = 11
    SESSION = 12


_recorded: ContextVar[list[Aggregate] | None] = ContextVar("locks_recorded", default=None)


@contextmanager
def locks_recorded() -> Iterator[list[Aggregate]]:
    """For tests: the aggregates locked inside the block (in this thread), in order."""
    taken: list[Aggregate] = []
    token = _recorded.set(taken)
    try:
        yield taken
    finally:
        _recorded.reset(token)


def lock_record(aggregate: Aggregate) -> None:
    """Note a lock on ``aggregate`` for ``locks_recorded`` (the helpers call it; so
    does SQL that takes its lock itself)."""
    taken = _recorded.get()
    if taken is not None:
        taken.append(aggregate)


def rows_locked(queryset: QuerySet, *, aggregate: Aggregate, **options) -> QuerySet:
    """``queryset``'s rows, locked FOR UPDATE (``options``: ``no_key``,
    ``skip_locked``, ``nowait``) in primary-key order, its own table only. The
    helpers below use it; the analysis app locks its own rows with it (this app may
    not import those models), naming the aggregate's place in the order."""
    lock_record(aggregate)
    return queryset.select_for_update(of=("self",), **options).order_by("pk")


def studies_locked() -> QuerySet[Study]:
    """Study rows: one import, computation, opening or purge of a study at a time."""
    return rows_locked(Study.objects.all(), aggregate=Aggregate.STUDY)


def stages_locked() -> QuerySet[Stage]:
    return rows_locked(Stage.objects.all(), aggregate=Aggregate.STAGE)


def questionnaire_lock(*, questionnaire: Questionnaire, share: bool) -> bool:
    """Lock ``questionnaire``'s row until the transaction ends: FOR SHARE while answers
    are written, FOR UPDATE while the admin checks and changes its questions (each
    waits for the other). False when the row is gone. SQL, as the ORM has no FOR
    SHARE."""
    lock_record(Aggregate.QUESTIONNAIRE)
    table = connection.ops.quote_name(Questionnaire._meta.db_table)
    mode = "SHARE" if share else "UPDATE"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR {mode}", [questionnaire.pk])
        return cursor.fetchone() is not None


def groups_locked() -> QuerySet[AnnotatorGroup]:
    """Group rows: new annotators of a group are numbered one call at a time."""
    return rows_locked(AnnotatorGroup.objects.all(), aggregate=Aggregate.GROUP)


def annotators_locked() -> QuerySet[Annotator]:
    """Annotator rows: one person's claims, quiz answers and stage endings (double
    clicks, two tabs) run one after the other."""
    return rows_locked(Annotator.objects.all(), aggregate=Aggregate.ANNOTATOR)


def crowd_entries_locked() -> QuerySet[CrowdEntry]:
    """Crowd entry rows: the first outcome recorded stands."""
    return rows_locked(CrowdEntry.objects.all(), aggregate=Aggregate.CROWD_ENTRY)


def assignments_locked(*, no_key: bool = False) -> QuerySet[Assignment]:
    """Assignment rows: a save, submit, expiry or rejection sees the status the others
    left. ``no_key``: FOR NO KEY UPDATE (saving an answer), which lets rows that refer
    to the assignment be written meanwhile."""
    return rows_locked(Assignment.objects.all(), aggregate=Aggregate.ASSIGNMENT, no_key=no_key)


def batches_locked(*, skip_locked: bool = False) -> QuerySet[Batch]:
    """Batch rows: a batch's free slots are counted by one claim at a time.
    ``skip_locked``: leave out the batches others hold."""
    return rows_locked(Batch.objects.all(), aggregate=Aggregate.BATCH, skip_locked=skip_locked)


def coders_locked() -> QuerySet[Coder]:
    """Coder rows: one primary coder per study."""
    return rows_locked(Coder.objects.all(), aggregate=Aggregate.CODER)


def description_codings_locked() -> QuerySet[DescriptionCoding]:
    """Coding rows: one coder's two saves of one coding run one after the other."""
    return rows_locked(DescriptionCoding.objects.all(), aggregate=Aggregate.DESCRIPTION_CODING)


def sessions_locked() -> QuerySet[AnnotatorSession]:
    """Browser session rows, while a study's sign-ins are taken out of them."""
    return rows_locked(AnnotatorSession.objects.all(), aggregate=Aggregate.SESSION)
