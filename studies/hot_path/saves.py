"""Saving an answer: one statement on PostgreSQL, the ORM elsewhere and to say why."""

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, fields
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Max, OuterRef, Q, Subquery

from ..errors import ErrorCode
from ..locks import Aggregate, assignments_locked, lock_record
from ..models import Assignment, Judgement, LikertDimension, LikertRating
from ..models.work import FIRST_REVISION
from ..protocol import order_key
from .sql import (
    Builder,
    Param,
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

# --- saving an answer -------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedAnswer:
    """An answer checked against the protocol, as stored (``Judgement``'s answer
    fields: these names are the columns a save writes)."""

    coherent: bool | None
    error_flags: int
    most_evident_bit: int | None
    empathy: int | None
    seconds_spent: float | None
    error_description: str = ""
    #: A pairwise answer's A, B or Tie, and its reason (the pair and the side it was
    #: shown on come from the assignment's order).
    choice: str = ""
    reason: str = ""
    #: A Likert answer's ratings, ``(dimension name, value, cannot judge)`` each,
    #: written as ``LikertRating`` rows of the assignment's stage's dimensions.
    ratings: tuple[tuple[str, int | None, bool], ...] = ()


# The Judgement columns a save writes (the ratings go to their own table).
ANSWER_FIELDS = tuple(f.name for f in fields(EncodedAnswer) if f.name != "ratings")

STALE_MESSAGE = (
    "This answer was changed since this page was loaded (in another tab, or by an "
    "earlier click that arrived late). The saved answer is shown: check it and save again."
)
MAX_ITEM_NUMBER = 2**31 - 1  # (and PostgreSQL's int for the JSON index)


class AssignmentClosed(ValidationError):
    """The batch can no longer take answers (submitted, expired, rejected, or past
    its deadline, in which case it has just been expired)."""

    def __init__(self, message: str):
        super().__init__(message, code=ErrorCode.ASSIGNMENT_CLOSED)


class StaleAnswer(ValidationError):
    """The answer was changed since the annotator's page showed it; nothing written."""

    def __init__(self):
        super().__init__(STALE_MESSAGE, code=ErrorCode.STALE_ANSWER)


def _next_revision():
    """A save makes one more revision (the first answer is ``FIRST_REVISION``)."""
    return F("revision") + 1


def _at_revision(revision) -> Q:
    """The stored answer is the one the page showed: a save from an older page is
    refused as stale."""
    return Q(revision=revision)


def _ratings_written() -> str:
    """The part of the save that writes a Likert answer's ratings (``%(ratings)s``, a
    JSON array of {name, value, cannot_judge}) for the judgement just saved, each
    named dimension taken from the assignment's own stage; a rating saved before is
    replaced."""
    ratings, dimensions = table(LikertRating), table(LikertDimension)
    judgement, dimension, value, cannot_judge = (
        quote(LikertRating._meta.get_field(n).column)
        for n in ("judgement", "dimension", "value", "cannot_judge")
    )
    target = ", ".join(
        quote(LikertRating._meta.get_field(name).column)
        for name in unique_fields(LikertRating, "likert_rating_unique")
    )
    return (
        f"INSERT INTO {ratings} ({judgement}, {dimension}, {value}, {cannot_judge})"
        f" SELECT saved.{quote('j__' + Judgement._meta.pk.column)}, {column(LikertDimension, 'id')},"
        " r.value, r.cannot_judge FROM saved JOIN a ON TRUE"
        " CROSS JOIN jsonb_to_recordset(CAST(%(ratings)s AS jsonb))"
        " AS r(name text, value smallint, cannot_judge boolean)"
        f" JOIN {dimensions} ON {column(LikertDimension, 'stage')} = a.{quote(Assignment._meta.get_field('stage').column)}"
        f" AND {column(LikertDimension, 'name')} = r.name"
        f" ON CONFLICT ({target}) DO UPDATE SET {value} = EXCLUDED.{value},"
        f" {cannot_judge} = EXCLUDED.{cannot_judge}"
    )


def _ratings_param(encoded: EncodedAnswer) -> str:
    return json.dumps([{"name": n, "value": v, "cannot_judge": c} for n, v, c in encoded.ratings])


@built_once
def _save_statement(
    variant: str,
    by: str,
    annotators_own: bool,
    of_stages: bool,
    rated: bool = False,
    paired: bool = False,
) -> Statement:
    """The save in one PostgreSQL statement (see ``answer_save``). ``variant``:
    "revise" (the page showed revision n > 0: ``UPDATE`` the row still at revision n),
    "first" (the page showed no answer: insert unless one exists) or "any" (no revision
    given: upsert). ``by``: the item is named by its "number" in the assignment's order,
    or by its "reflection" id (which must be in the order). ``annotators_own``: the
    assignment must be the annotator's (the annotation page). ``of_stages``: the
    assignment must be of one of the stages ``%(stages)s`` (those whose answer settings
    accept the answer). ``rated``: the answer is a Likert answer, its ratings written
    in the same statement (``_ratings_written``). ``paired``: a pairwise answer, its
    item (by number) an entry ``[first, second, swapped]`` of the order, whose pair
    and side are written with it."""
    b = Builder()
    judgements = table(Judgement)
    order = column(Assignment, "order")
    opponent_column, swapped_column = (
        quote(Judgement._meta.get_field(n).column) for n in ("opponent", "shown_swapped")
    )
    pair = ""
    if paired:
        if by != "number":
            raise ValueError("A pairwise answer is saved by its number.")
        entry = f"({order} -> (%(number)s - 1))"
        reflection = f"({entry} ->> 0)::bigint"
        pair = (
            f", ({entry} ->> 1)::bigint AS opponent_id, ({entry} ->> 2)::int = 1 AS shown_swapped"
        )
    elif by == "number":
        reflection = f"({order} ->> (%(number)s - 1))::bigint"
    else:
        reflection = (
            f"CASE WHEN {order} @> jsonb_build_array(%(reflection)s::bigint)"
            " THEN %(reflection)s::bigint END"
        )
    answer_columns = [quote(Judgement._meta.get_field(n).column) for n in ANSWER_FIELDS]
    next_revision = b.expression(Judgement, _next_revision())
    revision, updated_at = (
        quote(Judgement._meta.get_field(n).column) for n in ("revision", "updated_at")
    )
    if variant == "revise":
        at_revision = b.condition(Judgement, _at_revision(Param("expected")))
        settings = ", ".join(
            f"{c} = %({n})s" for c, n in zip(answer_columns, ANSWER_FIELDS, strict=True)
        )
        saved = (
            f"UPDATE {judgements} SET {settings}, {revision} = {next_revision},"
            f" {updated_at} = %(now)s FROM a"
            f" WHERE {column(Judgement, 'assignment')} = a.id"
            f" AND {column(Judgement, 'reflection')} = a.reflection_id AND {at_revision}"
            + (f" AND {column(Judgement, 'opponent')} = a.opponent_id" if paired else "")
        )
    else:
        target = ", ".join(
            quote(Judgement._meta.get_field(name).column)
            for name in unique_fields(Judgement, "judgement_unique")
        )
        if variant == "first":
            on_conflict = f"ON CONFLICT ({target}) DO NOTHING"
        else:
            settings = ", ".join(f"{c} = EXCLUDED.{c}" for c in answer_columns)
            on_conflict = (
                f"ON CONFLICT ({target}) DO UPDATE SET {settings},"
                f" {revision} = {next_revision}, {updated_at} = EXCLUDED.{updated_at}"
            )
        inserted = [
            quote(Judgement._meta.get_field(n).column)
            for n in ("assignment", "reflection", *ANSWER_FIELDS, "revision")
        ]
        created_at = quote(Judgement._meta.get_field("created_at").column)
        values = ", ".join(f"%({n})s" for n in ANSWER_FIELDS)
        pair_columns = f", {opponent_column}, {swapped_column}" if paired else ""
        pair_values = ", a.opponent_id, a.shown_swapped" if paired else ""
        saved = (
            f"INSERT INTO {judgements} ({', '.join(inserted)}, {created_at}, {updated_at}"
            f"{pair_columns}) SELECT a.id, a.reflection_id, {values},"
            f" {b.constant(FIRST_REVISION)}, %(now)s, %(now)s{pair_values}"
            f" FROM a WHERE a.reflection_id IS NOT NULL {on_conflict}"
        )
    saved_columns = ", ".join(
        "saved." + quote(f"j__{f.column}") for f in Judgement._meta.concrete_fields
    )
    locked = locked_open_assignment(
        b, annotators_own, of_stages, also=f"{reflection} AS reflection_id{pair}"
    )
    return b.statement(
        f"WITH a AS ({locked}), saved AS ({saved} RETURNING {select_list(Judgement, 'j')}"
        + (f"), rated AS ({_ratings_written()}" if rated else "")
        + f"), started AS ({started_on_first_answer(b)})"
        f" SELECT {select_list(Assignment, 'a', 'a')},"
        f" {saved_columns},"
        f" (SELECT count(*) FROM started) AS started FROM a JOIN saved ON TRUE"
    )


def locked_open_assignment(
    b: Builder, annotators_own: bool, of_stages: bool, *, also: str = "", where: str = ""
) -> str:
    """The part of a one-statement save that locks the assignment ``%(assignment)s``
    (``FOR NO KEY UPDATE``) if it takes answers at ``%(now)s``
    (``Assignment.accepting_answers_q``); ``annotators_own``: only if it is
    ``%(annotator)s``'s; ``of_stages``: only if its stage is one of ``%(stages)s``.
    Its columns, and ``also``; ``where``: a further condition. The statement names it
    ``a``; ``started_on_first_answer`` starts it."""
    which = Q(pk=Param("assignment"))
    if annotators_own:
        which &= Q(annotator_id=Param("annotator"))
    takes_answers = b.condition(Assignment, which & Assignment.accepting_answers_q(Param("now")))
    if of_stages:
        takes_answers += f" AND {column(Assignment, 'stage')} = ANY(CAST(%(stages)s AS bigint[]))"
    if where:
        takes_answers += f" AND {where}"
    a_columns = ", ".join(quote(f.column) for f in Assignment._meta.concrete_fields)
    return (
        f"SELECT {a_columns}{', ' + also if also else ''} FROM {table(Assignment)}"
        f" WHERE {takes_answers} FOR NO KEY UPDATE"
    )


def started_on_first_answer(b: Builder) -> str:
    """The part of a one-statement save that starts the locked assignment ``a`` (the
    statement's ``locked_open_assignment``) when the save wrote something (its part
    named ``saved``) and it had no answer before (``start_on_first_answer``)."""
    assigned = b.constant(Assignment.Status.ASSIGNED)
    in_progress = b.constant(Assignment.Status.IN_PROGRESS)
    status = quote(Assignment._meta.get_field("status").column)
    return (
        f"UPDATE {table(Assignment)} SET {status} = {in_progress},"
        f" {quote(Assignment._meta.get_field('started_at').column)} = %(now)s,"
        f" {quote(Assignment._meta.get_field('updated_at').column)} = %(now)s"
        f" WHERE {column(Assignment, 'id')} = (SELECT id FROM a WHERE {status} = {assigned})"
        f" AND EXISTS (SELECT 1 FROM saved) RETURNING {column(Assignment, 'id')}"
    )


def unique_fields(model, name: str) -> tuple[str, ...]:
    (constraint,) = [c for c in model._meta.constraints if c.name == name]
    return tuple(constraint.fields)


def answer_save(
    *,
    assignment_id: int,
    encode: Callable[[int], EncodedAnswer],
    now: datetime,
    stage_ids: Collection[int] = (),
    expected_revision: int | None = None,
    annotator_id: int | None = None,
    number: int | None = None,
    reflection_id: int | None = None,
    opponent_id: int | None = None,
) -> tuple[Assignment, Judgement]:
    """Save (or revise) one answer of an open assignment: the one writer of answers
    (a ranking, saved whole, has ``ranking_save``). The item is the ``number``-th of
    the assignment's order (1-based) or the reflection ``reflection_id`` (in a
    pairwise stage, with ``opponent_id``: the pair of the two); with ``annotator_id``
    the assignment must be theirs. Returns the assignment (as locked) and the stored
    answer.

    ``expected_revision`` is the revision the annotator's page showed (0: no answer
    yet); when another save came in since, the answer is refused (``StaleAnswer``)
    and nothing is written. Without it, the save is
    unconditional. An assignment past its deadline is expired, and the answer refused
    (``AssignmentClosed``); another annotator's assignment or an item outside the batch
    raises ``Assignment.DoesNotExist`` (a reflection id outside it: ``ValidationError``).

    On PostgreSQL a save that succeeds is one statement: lock the assignment if it
    takes answers (``FOR NO KEY UPDATE``: a concurrent submit or expiry waits, or, if
    it came first, this finds the row no longer open), write the answer if the
    revision matches, and start the assignment on its first answer. When it writes
    nothing, ``_answer_save_orm`` finds out why under the same lock. That lock is the
    only one a save takes: ``ASSIGNMENT`` in ``studies.locks``'s order, the statement's
    SQL standing for ``assignments_locked(no_key=True)``.

    ``encode(stage_id)`` checks the answer against the protocol and what the
    assignment's stage asks, and returns it as stored (the same whichever stage
    accepts it); a refusal is reported after the batch is found open, so a closed
    batch is reported as closed whatever the answer. ``stage_ids``: the stages the
    assignment may be of (the study's); the statement then writes only
    if the assignment's stage is one whose settings accept the answer, so the save
    needs no read of the stage. Without them the ORM path reads it.
    """
    if number is not None and not 1 <= number <= MAX_ITEM_NUMBER:
        raise Assignment.DoesNotExist("No such response candidate.")
    save = _Save(
        assignment_id,
        annotator_id,
        number,
        reflection_id,
        encode,
        now,
        expected_revision,
        opponent_id,
    )
    if number is not None or reflection_id is not None:
        accepting, encoded = [], None
        for stage_id in stage_ids:
            try:
                encoded = encode(stage_id)
            except ValidationError:
                continue  # a closed batch says so first: the ORM path checks in order
            accepting.append(stage_id)
        if encoded is not None and encoded.choice and number is None:
            accepting = []  # a pair named by its candidates: the ORM path finds it
        if accepting:
            of_stages = None if len(accepting) == len(stage_ids) else accepting
            saved = _answer_save_at_once(save, encoded, of_stages)
            if saved is not None:
                return saved
    return _answer_save_orm(save)


@dataclass(frozen=True)
class _Save:
    """``answer_save``'s arguments."""

    assignment_id: int
    annotator_id: int | None
    number: int | None
    reflection_id: int | None
    encode: Callable[[int], EncodedAnswer]
    now: datetime
    expected_revision: int | None
    opponent_id: int | None = None


def _answer_save_at_once(
    save: _Save, encoded: EncodedAnswer, of_stages: list[int] | None
) -> tuple[Assignment, Judgement] | None:
    expected, now = save.expected_revision, save.now
    variant = "revise" if expected else "first" if expected == 0 else "any"
    by_number = save.number is not None
    statement = _save_statement(
        variant,
        "number" if by_number else "reflection",
        save.annotator_id is not None,
        of_stages is not None,
        bool(encoded.ratings),
        bool(encoded.choice),
    )
    params = statement.params(
        assignment=save.assignment_id,
        now=now,
        **{n: getattr(encoded, n) for n in ANSWER_FIELDS},
    )
    if save.annotator_id is not None:
        params["annotator"] = save.annotator_id
    if by_number:
        params["number"] = save.number
    else:
        params["reflection"] = save.reflection_id
    if expected:
        params["expected"] = expected
    if of_stages is not None:
        params["stages"] = of_stages
    if encoded.ratings:
        params["ratings"] = _ratings_param(encoded)
    lock_record(Aggregate.ASSIGNMENT)
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, params)
        rows = rows_by_name(cursor)
    if not rows:
        return None
    row = rows[0]
    judgement = model_from(Judgement, row, "j")
    assignment = model_from(Assignment, row, "a")
    if row["started"]:
        assignment.status, assignment.started_at = Assignment.Status.IN_PROGRESS, now
        assignment.updated_at = now
    judgement.assignment = assignment
    return assignment, judgement


def _answer_save_orm(save: _Save) -> tuple[Assignment, Judgement]:
    """The save through the ORM, inside a transaction that locks the assignment row for
    the whole save (where the database has row locks), so a concurrent submit or expiry
    cannot slip in between the status check and the write."""
    closed, now, number = None, save.now, save.number
    with transaction.atomic():
        assignment = locked_assignment(save.assignment_id, save.annotator_id)
        key, swapped = (save.reflection_id, save.opponent_id), False
        if number is not None:
            if not 1 <= number <= len(assignment.order):
                raise Assignment.DoesNotExist("No such response candidate.")
            key, swapped = _entry_pair(assignment.order[number - 1])
        closed = closed_reason(assignment, now)
        if closed is None:
            entries = {_entry_pair(entry)[0]: _entry_pair(entry)[1] for entry in assignment.order}
            if key not in entries:
                raise ValidationError(
                    {"reflection": "This response candidate is not part of this batch."}
                )
            swapped = entries[key]
            encoded = save.encode(assignment.stage_id)
            judgement = _judgement_write(
                assignment=assignment,
                key=key,
                shown_swapped=swapped,
                encoded=encoded,
                now=now,
                expected_revision=save.expected_revision,
            )
            if encoded.ratings:
                _ratings_write(judgement=judgement, stage_id=assignment.stage_id, encoded=encoded)
            start_on_first_answer(assignment, now)
    if closed is not None:
        raise AssignmentClosed(closed)
    return assignment, judgement


def _entry_pair(entry) -> tuple[tuple[int, int | None], bool]:
    """An order entry's answer key (``order_key``) and whether it is shown swapped."""
    swapped = bool(entry[2]) if isinstance(entry, list) else False
    return order_key(entry), swapped


def locked_assignment(
    assignment_id: int, annotator_id: int | None, *, with_revision: bool = False
) -> Assignment:
    """The assignment, its row locked for the transaction (with ``annotator_id``: only
    if it is theirs, else ``Assignment.DoesNotExist``); ``with_revision``: read with the
    highest revision of its answers (``answers_revision``, None without any)."""
    locked = assignments_locked(no_key=True).filter(pk=assignment_id)
    if annotator_id is not None:
        locked = locked.filter(annotator_id=annotator_id)
    if with_revision:
        highest = (
            Judgement.objects.filter(assignment=OuterRef("pk"))
            .order_by()
            .values("assignment")
            .annotate(highest=Max("revision"))
            .values("highest")
        )
        locked = locked.annotate(answers_revision=Subquery(highest[:1]))
    assignment = locked.first()
    if assignment is None:
        raise Assignment.DoesNotExist("No such assignment.")
    return assignment


def closed_reason(assignment: Assignment, now: datetime) -> str | None:
    """Why the locked ``assignment`` takes no answer (None: it does). One past its
    deadline is expired now (the caller's transaction commits the expiry)."""
    if assignment.is_open and assignment.is_past_deadline(now):
        Assignment.objects.filter(pk=assignment.pk).overdue(now).expire(now)
        assignment.status, assignment.expired_at = Assignment.Status.EXPIRED, now
        assignment.updated_at = now
    if assignment.status == Assignment.Status.EXPIRED:
        return "The time for this batch ran out; answers can no longer be changed."
    if not assignment.is_open:
        return (
            f"This batch is {assignment.get_status_display().lower()}; answers can no "
            "longer be changed."
        )
    return None


def start_on_first_answer(assignment: Assignment, now: datetime) -> None:
    if assignment.status == Assignment.Status.ASSIGNED:
        assignment.status = Assignment.Status.IN_PROGRESS
        assignment.started_at = now
        assignment.save(update_fields=["status", "started_at", "updated_at"])


def _judgement_write(
    *, assignment, key, shown_swapped=False, encoded, now, expected_revision
) -> Judgement:
    """Must be called inside a transaction holding the assignment's row lock. ``key``:
    ``(reflection, opponent)``."""
    reflection_id, opponent_id = key
    answer = {name: getattr(encoded, name) for name in ANSWER_FIELDS}
    stored = Judgement.objects.filter(
        assignment=assignment, reflection_id=reflection_id, opponent_id=opponent_id
    )
    judgement = stored.first()
    if judgement is None:
        if expected_revision:  # the answer the page showed is gone: never re-created
            raise StaleAnswer()
        judgement = Judgement(
            assignment=assignment,
            reflection_id=reflection_id,
            opponent_id=opponent_id,
            shown_swapped=shown_swapped,
            revision=FIRST_REVISION,
            created_at=now,
            updated_at=now,
            **answer,
        )
        judgement.save_base(raw=True, force_insert=True)  # raw: keeps the given times
        return judgement
    if expected_revision is not None:
        stored = stored.filter(_at_revision(expected_revision))
    if not stored.update(**answer, revision=_next_revision(), updated_at=now):
        raise StaleAnswer()
    for name, value in answer.items():
        setattr(judgement, name, value)
    judgement.revision += 1
    judgement.updated_at = now
    judgement.assignment = assignment
    return judgement


def _ratings_write(*, judgement: Judgement, stage_id: int, encoded: EncodedAnswer) -> None:
    """The ORM path's ``_ratings_written``: the ratings of ``judgement`` on the stage's
    dimensions, replacing any saved before."""
    dimensions = dict(LikertDimension.objects.filter(stage_id=stage_id).values_list("name", "pk"))
    LikertRating.objects.bulk_create(
        [
            LikertRating(
                judgement=judgement, dimension_id=dimensions[name], value=value, cannot_judge=cj
            )
            for name, value, cj in encoded.ratings
        ],
        update_conflicts=True,
        unique_fields=["judgement", "dimension"],
        update_fields=["value", "cannot_judge"],
    )
