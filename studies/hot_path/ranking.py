"""Saving a ranking stage's answer, the whole ranking at once, under the lock and the
checks of every save (:mod:`.saves`)."""

from collections.abc import Callable
from datetime import datetime

from django.db import transaction

from ..models import Assignment, Judgement
from ..models.work import FIRST_REVISION
from .saves import (
    AssignmentClosed,
    StaleAnswer,
    closed_reason,
    locked_assignment,
    start_on_first_answer,
    unique_fields,
)
from .sql import Builder, Statement, built_once, prepared_cursor, quote, table


@built_once
def _ranking_statement() -> Statement:
    """A ranking's rows in one statement: one ``Judgement`` per candidate
    (``%(reflections)s`` with ``%(ranks)s``), all at revision ``%(revision)s``; a row
    saved before is revised, keeping its creation time."""
    b = Builder()
    judgements = table(Judgement)
    names = ("assignment", "reflection", "rank", "seconds_spent", "revision", "error_flags")
    columns = [quote(Judgement._meta.get_field(n).column) for n in names]
    no_flags = b.constant(Judgement._meta.get_field("error_flags").default)
    created_at, updated_at = (
        quote(Judgement._meta.get_field(n).column) for n in ("created_at", "updated_at")
    )
    target = ", ".join(
        quote(Judgement._meta.get_field(name).column)
        for name in unique_fields(Judgement, "judgement_unique")
    )
    kept = ("rank", "seconds_spent", "revision")
    updates = ", ".join(
        f"{quote(Judgement._meta.get_field(n).column)} = EXCLUDED.{quote(Judgement._meta.get_field(n).column)}"
        for n in kept
    )
    return b.statement(
        f"INSERT INTO {judgements} ({', '.join(columns)}, {created_at}, {updated_at})"
        " SELECT %(assignment)s, r.reflection, r.rank, %(seconds)s, %(revision)s,"
        f" {no_flags}, %(now)s, %(now)s"
        " FROM unnest(CAST(%(reflections)s AS bigint[]), CAST(%(ranks)s AS int[]))"
        " AS r(reflection, rank)"
        f" ON CONFLICT ({target}) DO UPDATE SET {updates},"
        f" {updated_at} = EXCLUDED.{updated_at}"
    )


def ranking_save(
    *,
    assignment_id: int,
    annotator_id: int,
    encode: Callable[[int, list[int]], dict[int, int]],
    seconds_spent: float | None,
    now: datetime,
    expected_revision: int | None = None,
) -> tuple[Assignment, int]:
    """Save (or revise) a ranking stage's answer, the whole ranking at once: one
    ``Judgement`` per candidate of the annotator's own assignment, holding its rank,
    all at one revision (returned with the assignment). ``encode(stage_id,
    candidates)`` checks the ranks against the stage and the batch's candidates (the
    assignment's order) and returns candidate → rank. ``expected_revision``: the
    revision the page showed (0: none yet), else ``StaleAnswer``; ``seconds_spent``:
    the ranking's, each candidate holding its share. Refusals as ``answer_save``'s;
    the assignment row is locked for the save, read with its answers' revision."""
    closed = None
    with transaction.atomic():
        assignment = locked_assignment(assignment_id, annotator_id, with_revision=True)
        closed = closed_reason(assignment, now)
        if closed is None:
            ranks = encode(assignment.stage_id, list(assignment.order))
            revision = assignment.answers_revision or 0
            if expected_revision is not None and expected_revision != revision:
                raise StaleAnswer()
            statement = _ranking_statement()
            with prepared_cursor() as cursor:
                cursor.execute(
                    statement.sql,
                    statement.params(
                        assignment=assignment.pk,
                        reflections=list(assignment.order),
                        ranks=[ranks[rid] for rid in assignment.order],
                        seconds=None if seconds_spent is None else seconds_spent / len(ranks),
                        revision=revision + FIRST_REVISION,
                        now=now,
                    ),
                )
            start_on_first_answer(assignment, now)
    if closed is not None:
        raise AssignmentClosed(closed)
    return assignment, revision + FIRST_REVISION
