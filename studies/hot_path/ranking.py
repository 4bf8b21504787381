"""Saving a ranking stage's answer, the whole ranking at once, under the lock and the
checks of every save (:mod:`.saves`): one statement on PostgreSQL, the ORM path when
it wrote nothing, to find out why."""

from collections.abc import Callable, Collection, Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction

from ..locks import Aggregate, lock_record
from ..models import Assignment, Judgement
from ..models.work import FIRST_REVISION
from .saves import (
    AssignmentClosed,
    StaleAnswer,
    closed_reason,
    locked_assignment,
    locked_open_assignment,
    start_on_first_answer,
    started_on_first_answer,
    unique_fields,
)
from .sql import (
    Builder,
    Statement,
    built_once,
    column,
    model_from,
    prepared_cursor,
    quote,
    rows_by_name,
    select_list,
    table,
)

#: The highest id the statement can be asked about (PostgreSQL's bigint).
MAX_ID = 2**63 - 1

# The candidates and their ranks, as the statements read them.
_RANKED = (
    "unnest(CAST(%(reflections)s AS bigint[]), CAST(%(ranks)s AS int[])) AS r(reflection, rank)"
)


def _judgement_column(name: str) -> str:
    return quote(Judgement._meta.get_field(name).column)


def _unique_target() -> str:
    return ", ".join(
        _judgement_column(name) for name in unique_fields(Judgement, "judgement_unique")
    )


@built_once
def _ranking_at_once(variant: str, of_stages: bool) -> Statement:
    """The ranking's save in one statement (see ``ranking_save``): lock the annotator's
    assignment if it takes answers (of one of ``%(stages)s``, those whose settings
    accept the ranking, with ``of_stages``) and its candidates are those ranked
    (``%(reflections)s``, each with its rank in ``%(ranks)s``); write every
    candidate's rank, all or none; start the assignment on its first answer. Returns
    the assignment and the ranking's revision, or no row when it wrote nothing.
    ``variant``: "revise" (the page showed revision ``%(expected)s`` > 0: update the
    rows, if every candidate's is still at that revision) or "first" (the page showed
    no ranking: insert, if the assignment has no answer).

    All or none: the revision's row count is taken in the statement's snapshot and
    the insert skips conflicting rows one by one, so this rests on every writer of a
    ranking stage's answers writing a whole ranking under the assignment's lock (this
    module; the published ranking import writes whole rankings into new
    assignments): a ranking's rows are then always the order's candidates at one
    revision."""
    b = Builder()
    judgements = table(Judgement)
    order = column(Assignment, "order")
    ranked = "CAST(%(reflections)s AS bigint[])"
    locked = locked_open_assignment(
        b,
        True,
        of_stages,
        where=f"{order} @> to_jsonb({ranked}) AND jsonb_array_length({order}) = cardinality({ranked})",
    )
    assignment_column, reflection_column, revision, rank, seconds, updated_at = (
        _judgement_column(n)
        for n in ("assignment", "reflection", "revision", "rank", "seconds_spent", "updated_at")
    )
    of_a = f"{column(Judgement, 'assignment')} = (SELECT id FROM a)"
    if variant not in ("revise", "first"):
        raise ValueError(f"No such variant: {variant!r}.")
    if variant == "revise":
        # Every candidate's row is at the revision the page showed (counted in the
        # statement's snapshot; a save that committed since, while this one waited for
        # the lock, moved the rows on, which the update's own check then sees).
        held = (
            f"SELECT count(*) AS n, count(*) FILTER (WHERE {column(Judgement, 'revision')}"
            f" = %(expected)s) AS at FROM {judgements} WHERE {of_a}"
        )
        saved = (
            f"UPDATE {judgements} SET {rank} = r.rank, {seconds} = %(seconds)s,"
            f" {revision} = {column(Judgement, 'revision')} + 1, {updated_at} = %(now)s"
            f" FROM a CROSS JOIN held CROSS JOIN {_RANKED}"
            f" WHERE {column(Judgement, 'assignment')} = a.id"
            f" AND {column(Judgement, 'reflection')} = r.reflection"
            f" AND {column(Judgement, 'opponent')} IS NULL"
            f" AND {column(Judgement, 'revision')} = %(expected)s"
            f" AND held.n = cardinality({ranked}) AND held.at = held.n"
        )
        parts = f"held AS ({held}), saved AS ({saved} RETURNING {column(Judgement, 'revision')})"
    else:
        no_flags = b.constant(Judgement._meta.get_field("error_flags").default)
        created_at = _judgement_column("created_at")
        error_flags = _judgement_column("error_flags")
        saved = (
            f"INSERT INTO {judgements} ({assignment_column}, {reflection_column}, {rank},"
            f" {seconds}, {revision}, {error_flags}, {created_at}, {updated_at})"
            f" SELECT a.id, r.reflection, r.rank, %(seconds)s, {b.constant(FIRST_REVISION)},"
            f" {no_flags}, %(now)s, %(now)s FROM a CROSS JOIN {_RANKED}"
            f" WHERE NOT EXISTS (SELECT 1 FROM {judgements} WHERE {of_a})"
            f" ON CONFLICT ({_unique_target()}) DO NOTHING"
        )
        parts = f"saved AS ({saved} RETURNING {revision})"
    return b.statement(
        f"WITH a AS ({locked}), {parts}, started AS ({started_on_first_answer(b)})"
        f" SELECT {select_list(Assignment, 'a', 'a')},"
        f" (SELECT max({revision}) FROM saved) AS revision,"
        " (SELECT count(*) FROM started) AS started"
        " FROM a WHERE EXISTS (SELECT 1 FROM saved)"
    )


@built_once
def _ranking_upsert() -> Statement:
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
    target = _unique_target()
    kept = ("rank", "seconds_spent", "revision")
    updates = ", ".join(
        f"{quote(Judgement._meta.get_field(n).column)} = EXCLUDED.{quote(Judgement._meta.get_field(n).column)}"
        for n in kept
    )
    return b.statement(
        f"INSERT INTO {judgements} ({', '.join(columns)}, {created_at}, {updated_at})"
        " SELECT %(assignment)s, r.reflection, r.rank, %(seconds)s, %(revision)s,"
        f" {no_flags}, %(now)s, %(now)s"
        f" FROM {_RANKED} ON CONFLICT ({target}) DO UPDATE SET {updates},"
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
    ranked: Sequence[int] = (),
    stage_ids: Collection[int] = (),
) -> tuple[Assignment, int]:
    """Save (or revise) a ranking stage's answer, the whole ranking at once: one
    ``Judgement`` per candidate of the annotator's own assignment, holding its rank,
    all at one revision (returned with the assignment). ``encode(stage_id,
    candidates)`` checks the ranks against the stage and the batch's candidates (the
    assignment's order) and returns candidate → rank. ``expected_revision``: the
    revision the page showed (0: none yet), else ``StaleAnswer``; ``seconds_spent``:
    the ranking's, each candidate holding its share. Refusals as ``answer_save``'s.

    ``ranked``: the candidates the answer ranks, and ``stage_ids``: the stages the
    assignment may be of (the study's). With both and an expected revision, the ranking is checked against each
    stage beforehand and, on PostgreSQL, saved in one statement (``_ranking_at_once``:
    the lock, the checks, the write and the start) when the assignment's stage is one
    that accepts it and its candidates are those ranked; when that writes nothing, the
    locked path (``_ranking_save_locked``) finds out why, as ``answer_save``'s ORM path
    does."""
    if (
        ranked
        and stage_ids
        and expected_revision is not None
        and all(1 <= rid <= MAX_ID for rid in ranked)  # else not a candidate: see why
    ):
        accepting, ranks = [], None
        for stage_id in stage_ids:
            try:
                ranks = encode(stage_id, list(ranked))
            except ValidationError:
                continue  # a closed batch says so first: the locked path checks in order
            accepting.append(stage_id)
        if ranks is not None:
            saved = _ranking_save_at_once(
                assignment_id=assignment_id,
                annotator_id=annotator_id,
                ranks=ranks,
                seconds_spent=seconds_spent,
                now=now,
                expected_revision=expected_revision,
                of_stages=None if len(accepting) == len(stage_ids) else accepting,
            )
            if saved is not None:
                return saved
    return _ranking_save_locked(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        encode=encode,
        seconds_spent=seconds_spent,
        now=now,
        expected_revision=expected_revision,
    )


def _ranking_save_at_once(
    *,
    assignment_id: int,
    annotator_id: int,
    ranks: dict[int, int],
    seconds_spent: float | None,
    now: datetime,
    expected_revision: int,
    of_stages: list[int] | None,
) -> tuple[Assignment, int] | None:
    variant = "revise" if expected_revision else "first"
    statement = _ranking_at_once(variant, of_stages is not None)
    params = statement.params(
        assignment=assignment_id,
        annotator=annotator_id,
        reflections=list(ranks),
        ranks=list(ranks.values()),
        seconds=None if seconds_spent is None else seconds_spent / len(ranks),
        now=now,
    )
    if expected_revision:
        params["expected"] = expected_revision
    if of_stages is not None:
        params["stages"] = of_stages
    lock_record(Aggregate.ASSIGNMENT)
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, params)
        rows = rows_by_name(cursor)
    if not rows:
        return None
    row = rows[0]
    assignment = model_from(Assignment, row, "a")
    if row["started"]:
        assignment.status, assignment.started_at = Assignment.Status.IN_PROGRESS, now
        assignment.updated_at = now
    return assignment, row["revision"]


def _ranking_save_locked(
    *,
    assignment_id: int,
    annotator_id: int,
    encode: Callable[[int, list[int]], dict[int, int]],
    seconds_spent: float | None,
    now: datetime,
    expected_revision: int | None,
) -> tuple[Assignment, int]:
    """``ranking_save`` in a transaction: the assignment row locked and read with its
    answers' revision, checked, then every candidate's rank written in one upsert."""
    closed = None
    with transaction.atomic():
        assignment = locked_assignment(assignment_id, annotator_id, with_revision=True)
        closed = closed_reason(assignment, now)
        if closed is None:
            ranks = encode(assignment.stage_id, list(assignment.order))
            revision = assignment.answers_revision or 0
            if expected_revision is not None and expected_revision != revision:
                raise StaleAnswer()
            statement = _ranking_upsert()
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
