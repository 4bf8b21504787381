"""Recording annotators' answers (BRIEF §4) with the same rules as the database."""

from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from annotation_site.db import columns, model_from_row, per_backend, prepared_cursor

from ..models import Assignment, ErrorCategory, Judgement, Reflection
from ..protocol import EMPATHY_SCALE

# --- judgements --------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """An annotator's answer for one response candidate, as submitted."""

    coherent: bool
    categories: frozenset[str] = field(default_factory=frozenset)
    most_evident: str | None = None
    empathy: int | None = None
    seconds_spent: float | None = None


@dataclass(frozen=True)
class EncodedAnswer:
    coherent: bool
    error_flags: int
    most_evident_bit: int | None
    empathy: int | None
    seconds_spent: float | None


def answer_encode(
    *, answer: Answer, categories: dict[str, int], require_complete: bool = True
) -> EncodedAnswer:
    """Check ``answer`` against the protocol (BRIEF §4) and the database rules and turn
    category slugs into the stored bit set.

    ``categories`` maps the study's category slugs to their bits. With
    ``require_complete`` (the annotation interface) a No needs at least one category,
    two or more categories need a most evident error, and a Yes needs the 5-point
    rating. Imported published data may lack those, so importers pass False; the
    consistency rules that the database enforces always apply.
    """
    errors: dict[str, str] = {}
    unknown = sorted(answer.categories - categories.keys())
    if unknown:
        errors["categories"] = f"Unknown error categories: {', '.join(unknown)}."
    if answer.coherent:
        if answer.categories:
            errors["categories"] = "Error categories can only be chosen when the answer is No."
        if answer.most_evident is not None:
            errors["most_evident"] = (
                "A most evident error can only be chosen when the answer is No."
            )
        if answer.empathy is None and require_complete:
            errors["empathy"] = "Choose how much you agree with the statement."
    else:
        if answer.empathy is not None:
            errors["empathy"] = "The agreement rating is only asked when the answer is Yes."
        if require_complete and not answer.categories:
            errors["categories"] = "Choose at least one error category."
        if answer.most_evident is not None and answer.most_evident not in answer.categories:
            errors["most_evident"] = "The most evident error must be one of the chosen categories."
        elif answer.most_evident is None and len(answer.categories) >= 2 and require_complete:
            errors["most_evident"] = "Choose the most evident error among the chosen categories."
    if answer.empathy is not None and answer.empathy not in EMPATHY_SCALE:
        errors["empathy"] = "The agreement rating must be between 1 and 5."
    if answer.seconds_spent is not None and answer.seconds_spent < 0:
        errors["seconds_spent"] = "Time spent cannot be negative."
    if errors:
        raise ValidationError(errors)

    flags = 0
    for slug in answer.categories:
        flags |= 1 << categories[slug]
    most_evident = answer.most_evident
    if most_evident is None and len(answer.categories) == 1:
        # BRIEF §5: a single chosen category is that annotator's most evident error.
        (most_evident,) = answer.categories
    return EncodedAnswer(
        coherent=answer.coherent,
        error_flags=flags,
        most_evident_bit=categories[most_evident] if most_evident is not None else None,
        empathy=answer.empathy,
        seconds_spent=answer.seconds_spent,
    )


def study_category_bits(*, study_id: int) -> dict[str, int]:
    return dict(ErrorCategory.objects.filter(study_id=study_id).values_list("slug", "bit"))


STALE_MESSAGE = (
    "This answer was changed since this page was loaded (in another tab, or by an "
    "earlier click that arrived late). The saved answer is shown: check it and save again."
)


MAX_ITEM_NUMBER = 2**31 - 1


class AssignmentClosed(ValidationError):
    """The batch can no longer take answers (submitted, expired, rejected, or past
    its deadline, in which case it has just been expired)."""


def judgement_record(
    *,
    assignment: Assignment,
    reflection: Reflection,
    answer: Answer,
    now: datetime | None = None,
    categories: dict[str, int] | None = None,
    expected_revision: int | None = None,
) -> Judgement:
    """Save (or revise) one answer of an open assignment. Idempotent: saving the same
    answer twice leaves one row.

    An assignment past its deadline is expired (and the answer refused with
    ``AssignmentClosed``). ``categories`` (slug → bit) spares a query when the caller
    has read the study's categories already. ``expected_revision`` is the revision
    the annotator's page showed (0: no answer yet); when another save came in since,
    the answer is refused (``ValidationError`` with code ``"stale"``) and nothing is
    written. Without it, the save is unconditional.
    """
    _, judgement = _judgement_save(
        assignment_id=assignment.pk,
        reflection_id=reflection.pk,
        answer=answer,
        now=now or timezone.now(),
        categories=categories,
        expected_revision=expected_revision,
    )
    return judgement


def judgement_record_item(
    *,
    annotator_id: int,
    assignment_id: int,
    number: int,
    answer: Answer,
    categories: dict[str, int],
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> tuple[Assignment, Judgement]:
    """``judgement_record`` for the annotation page: the answer to the ``number``-th
    response candidate (1-based, in the batch's shuffled order) of the annotator's own
    assignment ``assignment_id``. The assignment is read, checked and locked with one
    query; another annotator's assignment or a number outside the batch raises
    ``Assignment.DoesNotExist``. Returns the assignment as locked, and the answer.

    On PostgreSQL a save that succeeds is one statement (``_judgement_save_at_once``);
    anything else goes through ``_judgement_save``, which finds out under the lock why
    (closed, past its deadline, stale, not in the batch) and answers accordingly.
    """
    now = now or timezone.now()
    if not 1 <= number <= MAX_ITEM_NUMBER:  # (and PostgreSQL's int for the JSON index)
        raise Assignment.DoesNotExist("No such response candidate.")
    if connection.vendor == "postgresql":
        encoded = answer_encode(answer=answer, categories=categories)
        saved = _judgement_save_at_once(
            annotator_id=annotator_id,
            assignment_id=assignment_id,
            number=number,
            encoded=encoded,
            now=now,
            expected_revision=expected_revision,
        )
        if saved is not None:
            return saved
    return _judgement_save(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        number=number,
        answer=answer,
        now=now,
        categories=categories,
        expected_revision=expected_revision,
    )


@per_backend
def _save_at_once_sql(variant: str) -> str:
    """``_judgement_save_at_once``'s statement: ``variant`` "revise" (an answer shown
    as revision n > 0: ``UPDATE`` the row still at revision n), "first" (shown as no
    answer yet: insert, refuse if one exists) or "any" (no revision given: upsert)."""
    quote = connection.ops.quote_name
    assignments, judgements = quote(Assignment._meta.db_table), quote(Judgement._meta.db_table)
    if variant == "revise":
        saved = f"""
            UPDATE {judgements} SET coherent = %(coherent)s, error_flags = %(error_flags)s,
                most_evident_bit = %(most_evident_bit)s, empathy = %(empathy)s,
                seconds_spent = %(seconds_spent)s, revision = {judgements}.revision + 1,
                updated_at = %(now)s
            FROM a
            WHERE {judgements}.assignment_id = a.id
              AND {judgements}.reflection_id = a.reflection_id
              AND {judgements}.revision = %(expected)s
            RETURNING {columns(Judgement, judgements)}"""
    else:
        condition = f"WHERE {judgements}.revision = 0" if variant == "first" else ""
        saved = f"""
            INSERT INTO {judgements} (assignment_id, reflection_id, coherent, error_flags,
                most_evident_bit, empathy, seconds_spent, revision, created_at, updated_at)
            SELECT a.id, a.reflection_id, %(coherent)s, %(error_flags)s, %(most_evident_bit)s,
                   %(empathy)s, %(seconds_spent)s, 1, %(now)s, %(now)s
            FROM a WHERE a.reflection_id IS NOT NULL
            {_on_conflict_revise(judgements, condition)}"""
    return f"""
        WITH a AS (
            SELECT {columns(Assignment)},
                   ({quote("order")} ->> (%(number)s - 1))::bigint AS reflection_id
            FROM {assignments}
            WHERE id = %(assignment)s AND annotator_id = %(annotator)s
              AND status IN ('assigned', 'in_progress') AND expires_at > %(now)s
              AND %(number)s >= 1
            FOR NO KEY UPDATE
        ), saved AS ({saved}
        ), started AS (
            UPDATE {assignments} SET status = 'in_progress', started_at = %(now)s,
                updated_at = %(now)s
            WHERE id = (SELECT id FROM a WHERE status = 'assigned')
              AND EXISTS (SELECT 1 FROM saved)
            RETURNING id
        )
        SELECT a.*, saved.*, (SELECT count(*) FROM started)
        FROM a JOIN saved ON TRUE
    """


def _judgement_save_at_once(
    *,
    annotator_id: int,
    assignment_id: int,
    number: int,
    encoded: EncodedAnswer,
    now: datetime,
    expected_revision: int | None,
) -> tuple[Assignment, Judgement] | None:
    """The common case of ``judgement_record_item`` in one prepared PostgreSQL
    statement (no transaction round trips): lock the annotator's assignment if it is
    open and before its deadline (``FOR NO KEY UPDATE``: a concurrent submit or expiry
    waits, or, if it came first, this finds the row no longer open), take the
    ``number``-th reflection of its order, write the answer if the revision matches,
    and mark the assignment in progress on its first answer. Returns None when
    nothing was written, for ``_judgement_save`` to tell why.

    A first answer (expected revision 0) is inserted unless one exists; revising an
    answer shown as revision n > 0 is an ``UPDATE`` of the row still at revision n,
    so an answer that is no longer there is never re-created; with no expected
    revision, the answer is upserted."""
    variant = "revise" if expected_revision else "first" if expected_revision == 0 else "any"
    params = {
        "assignment": assignment_id,
        "annotator": annotator_id,
        "number": number,
        "now": now,
        "coherent": encoded.coherent,
        "error_flags": encoded.error_flags,
        "most_evident_bit": encoded.most_evident_bit,
        "empathy": encoded.empathy,
        "seconds_spent": encoded.seconds_spent,
    }
    if expected_revision:
        params["expected"] = expected_revision
    with prepared_cursor() as cursor:
        cursor.execute(_save_at_once_sql(variant), params)
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(Assignment._meta.concrete_fields)
    values, judgement_values, started = row[:n], row[n + 1 : -1], row[-1]
    judgement = model_from_row(Judgement, list(judgement_values))
    assignment = model_from_row(Assignment, list(values))
    if started:
        assignment.status, assignment.started_at = Assignment.Status.IN_PROGRESS, now
        assignment.updated_at = now
    judgement.assignment = assignment
    return assignment, judgement


def _judgement_save(
    *,
    assignment_id: int,
    answer: Answer,
    now: datetime,
    categories: dict[str, int] | None,
    expected_revision: int | None,
    reflection_id: int | None = None,
    number: int | None = None,
    annotator_id: int | None = None,
) -> tuple[Assignment, Judgement]:
    """Locks the assignment row for the whole save, so a concurrent submit or expiry
    cannot slip in between the status check and the write (the hot path of the
    annotation page: one locking read, one upsert)."""
    closed = None
    with transaction.atomic():
        assignment = _assignment_lock(assignment_id=assignment_id, annotator_id=annotator_id)
        if assignment is None:
            raise Assignment.DoesNotExist("No such assignment.")
        if number is not None:
            if not 1 <= number <= len(assignment.order):
                raise Assignment.DoesNotExist("No such response candidate.")
            reflection_id = assignment.order[number - 1]
        if assignment.status in Assignment.OPEN and assignment.expires_at <= now:
            # Past its deadline: expire it now (this transaction commits the expiry),
            # and refuse the answer below.
            Assignment.objects.filter(pk=assignment.pk).update(
                status=Assignment.Status.EXPIRED, expired_at=now, updated_at=now
            )
            assignment.status, assignment.expired_at = Assignment.Status.EXPIRED, now
            assignment.updated_at = now
        if assignment.status == Assignment.Status.EXPIRED:
            closed = "The time for this batch ran out; answers can no longer be changed."
        elif assignment.status not in Assignment.OPEN:
            closed = (
                f"This batch is {assignment.get_status_display().lower()}; answers can no "
                "longer be changed."
            )
        else:
            if reflection_id not in assignment.order:
                raise ValidationError(
                    {"reflection": "This response candidate is not part of this batch."}
                )
            if categories is None:
                categories = study_category_bits(study_id=assignment.stage.study_id)
            encoded = answer_encode(answer=answer, categories=categories)
            judgement = _judgement_upsert(
                assignment=assignment,
                reflection_id=reflection_id,
                encoded=encoded,
                now=now,
                expected_revision=expected_revision,
            )
            if assignment.status == Assignment.Status.ASSIGNED:
                assignment.status = Assignment.Status.IN_PROGRESS
                assignment.started_at = now
                assignment.save(update_fields=["status", "started_at", "updated_at"])
    if closed is not None:
        raise AssignmentClosed(closed, code="closed")
    return assignment, judgement


def _assignment_lock(*, assignment_id: int, annotator_id: int | None) -> Assignment | None:
    """Must be called inside a transaction; locks the assignment row (``FOR UPDATE``
    where the database has row locks). ``raw()`` because this is the hot path: the
    ORM's query compilation costs more than the query (bench/load/README.md)."""
    table = connection.ops.quote_name(Assignment._meta.db_table)
    sql, params = f"SELECT * FROM {table} WHERE id = %s", [assignment_id]
    if annotator_id is not None:
        sql, params = f"{sql} AND annotator_id = %s", [*params, annotator_id]
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    return next(iter(Assignment.objects.raw(sql, params)), None)


def _on_conflict_revise(table: str, condition: str) -> str:
    """The end of both upserts (PostgreSQL and SQLite syntax alike): an existing answer
    of (assignment, reflection) takes the new values and one more revision, keeping
    its ``created_at``, when ``condition`` (a ``WHERE`` on the stored row, or "")
    holds; every column of the row is returned, for ``model_from_row``."""
    return (
        "ON CONFLICT (assignment_id, reflection_id) DO UPDATE SET"
        " coherent = EXCLUDED.coherent, error_flags = EXCLUDED.error_flags,"
        " most_evident_bit = EXCLUDED.most_evident_bit, empathy = EXCLUDED.empathy,"
        " seconds_spent = EXCLUDED.seconds_spent,"
        f" revision = {table}.revision + 1, updated_at = EXCLUDED.updated_at"
        f" {condition} RETURNING {columns(Judgement, table)}"
    )


def _judgement_upsert(
    *,
    assignment: Assignment,
    reflection_id: int,
    encoded: EncodedAnswer,
    now: datetime,
    expected_revision: int | None,
) -> Judgement:
    """One ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` (PostgreSQL and SQLite): the
    row of (assignment, reflection) is created with revision 1 or revised with one
    more, and ``created_at`` stays the first save's. With ``expected_revision``, a row
    whose revision differs is left alone and the save is refused as stale (the
    surrounding transaction rolls back a row created against an expected revision)."""
    quote = connection.ops.quote_name
    table = quote(Judgement._meta.db_table)
    condition = f"WHERE {table}.revision = %s" if expected_revision is not None else ""
    at = connection.ops.adapt_datetimefield_value(now)
    params = [
        assignment.pk,
        reflection_id,
        encoded.coherent,
        encoded.error_flags,
        encoded.most_evident_bit,
        encoded.empathy,
        encoded.seconds_spent,
        at,
        at,
    ]
    if expected_revision is not None:
        params.append(expected_revision)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (assignment_id, reflection_id, coherent, error_flags,"
            " most_evident_bit, empathy, seconds_spent, revision, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, 1, %s, %s)"
            f" {_on_conflict_revise(table, condition)}",
            params,
        )
        row = cursor.fetchone()
    if row is None:
        raise ValidationError(STALE_MESSAGE, code="stale")
    judgement = model_from_row(Judgement, list(row))
    if expected_revision is not None and judgement.revision != expected_revision + 1:
        raise ValidationError(STALE_MESSAGE, code="stale")
    judgement.assignment = assignment
    return judgement
