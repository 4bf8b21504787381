"""Who is asking (the session and its annotator) and what an item's panel shows."""

from dataclasses import fields
from datetime import datetime

from django.db.models import Q

from ..models import (
    WORDING_FIELDS,
    Annotator,
    AnnotatorSession,
    ConsentVersion,
    ErrorCategory,
    ItemDraft,
    Judgement,
    LikertDimension,
    LikertRating,
    Reflection,
    Stage,
    StageWording,
    Study,
    TrainingAttempt,
    TrainingItem,
    stage_offered_categories,
    stage_wording,
)
from ..protocol import AnswerSettings
from .sql import (
    Builder,
    Param,
    Statement,
    built_once,
    column,
    db_now,
    model_from,
    prepared_cursor,
    quote,
    rows_by_name,
    select_list,
    table,
)

# --- who is asking ----------------------------------------------------------------------


@built_once
def _session_statement() -> Statement:
    b = Builder()
    live = b.condition(
        AnnotatorSession, AnnotatorSession.live_q(session_key=Param("key"), now=Param("now"))
    )
    return b.statement(
        f"SELECT {select_list(AnnotatorSession, 'x')} FROM {table(AnnotatorSession)} WHERE {live}"
    )


def session_row(*, session_key: str, now: datetime) -> AnnotatorSession | None:
    """The live session row of ``session_key`` (the session store's read)."""
    statement = _session_statement()
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, statement.params(key=session_key, now=db_now(now)))
        rows = rows_by_name(cursor)
    return model_from(AnnotatorSession, rows[0], "x") if rows else None


def _categories_json() -> str:
    """An expression: the error categories of the annotator's study as a JSON array
    of objects."""
    same_study = f"{column(ErrorCategory, 'study')} = {column(Annotator, 'study')}"
    order = ", ".join(column(ErrorCategory, name) for name in _CATEGORY_ORDER)
    return (
        f"(SELECT json_agg({_fields_json(ErrorCategory)} ORDER BY {order})"
        f" FROM {table(ErrorCategory)} WHERE {same_study})"
    )


# A stage's answer settings are the Stage columns named like AnswerSettings' fields.
_SETTINGS_FIELDS = [f.name for f in fields(AnswerSettings)]


_STAGE_CATEGORIES = Stage.categories.through


def _stage_settings_json() -> str:
    """An expression: the answer settings of every stage of the annotator's study, as a
    JSON array of objects with the stage's ``id`` and the ids of the categories it
    chose (``categories``, null when it chose none)."""
    pairs = ", ".join(
        f"'{name}', {column(Stage, name)}" for name in ("id", *_SETTINGS_FIELDS, *WORDING_FIELDS)
    )
    chosen_ids = (
        f"(SELECT json_agg({column(_STAGE_CATEGORIES, 'errorcategory')})"
        f" FROM {table(_STAGE_CATEGORIES)}"
        f" WHERE {column(_STAGE_CATEGORIES, 'stage')} = {column(Stage, 'id')})"
    )
    same_study = f"{column(Stage, 'study')} = {column(Annotator, 'study')}"
    return (
        f"(SELECT json_agg(json_build_object({pairs}, 'categories', {chosen_ids},"
        f" 'dimensions', {_dimensions_json()}))"
        f" FROM {table(Stage)} WHERE {same_study})"
    )


def _fields_json(model) -> str:
    """A JSON object of a ``model`` row's columns, for ``model_from``: the columns'
    names as keys (identifiers of ours, safe as SQL literals); a JSON column as its
    text, which the field's converter reads as it reads the column."""
    return "json_build_object({})".format(
        ", ".join(
            f"'{f.column}', {column(model, f.name)}"
            + ("::text" if f.get_internal_type() == "JSONField" else "")
            for f in model._meta.concrete_fields
        )
    )


def _dimensions_json() -> str:
    """An expression: the Likert dimensions of a stage (in ``_stage_settings_json``), as
    a JSON array in their order (null: none)."""
    return (
        f"(SELECT json_agg({_fields_json(LikertDimension)}"
        f" ORDER BY {column(LikertDimension, 'position')}) FROM {table(LikertDimension)}"
        f" WHERE {column(LikertDimension, 'stage')} = {column(Stage, 'id')})"
    )


def _stage_settings_from(value) -> dict[int, AnswerSettings]:
    by_stage = {}
    for row in value or ():
        by_stage[row["id"]] = AnswerSettings(**{name: row[name] for name in _SETTINGS_FIELDS})
    return by_stage


def _stage_wording_from(value, study: Study) -> dict[int, StageWording]:
    return {row["id"]: stage_wording(study, row) for row in value or ()}


def _stage_dimensions_from(value) -> dict[int, list[LikertDimension]]:
    """Stage id → its Likert dimensions in order (none: a coherence stage)."""
    return {
        row["id"]: [
            model_from(LikertDimension, {f"d__{k}": v for k, v in d.items()}, "d")
            for d in row["dimensions"] or ()
        ]
        for row in value or ()
    }


def _stage_categories_from(value, categories: list[ErrorCategory]) -> dict:
    """Stage id → the categories it offers (``stage_offered_categories``)."""
    return {
        row["id"]: stage_offered_categories(categories, set(row["categories"] or ()))
        for row in value or ()
    }


# The categories' display order (their Meta.ordering within a study).
_CATEGORY_ORDER = [name for name in ErrorCategory._meta.ordering if name != "study"]


def _training_due() -> str:
    """An expression: whether the annotator still has the study's training quiz to pass
    (the study has practice items and no attempt of theirs passed;
    ``studies.services.training``)."""
    passed = TrainingAttempt.Status.PASSED.value  # an identifier of ours, safe as a literal
    return (
        f"(EXISTS (SELECT 1 FROM {table(TrainingItem)}"
        f" WHERE {column(TrainingItem, 'study')} = {column(Annotator, 'study')})"
        f" AND NOT EXISTS (SELECT 1 FROM {table(TrainingAttempt)}"
        f" WHERE {column(TrainingAttempt, 'annotator')} = {column(Annotator, 'id')}"
        f" AND {column(TrainingAttempt, 'status')} = '{passed}'))"
    )


def annotator_select() -> str:
    """``SELECT`` … ``FROM`` the annotator joined with its study, the id of the study's
    current consent version, its categories and whether the training quiz is still due
    (for ``annotator_from_row``); the
    caller adds its joins and a ``WHERE`` that names the annotator and the study's
    ``slug`` (the study must be the one of the URL) and keeps only active annotators
    (``active_annotators``)."""
    consent = (
        f"(SELECT {column(ConsentVersion, 'id')} FROM {table(ConsentVersion)}"
        f" WHERE {column(ConsentVersion, 'study')} = {column(Annotator, 'study')}"
        f" ORDER BY {column(ConsentVersion, 'number')} DESC LIMIT 1)"
    )
    return (
        f"SELECT {select_list(Annotator, 'a')}, {select_list(Study, 's')},"
        f" {consent} AS current_consent_id, {_categories_json()} AS categories,"
        f" {_stage_settings_json()} AS stage_settings, {_training_due()} AS training_due"
        f" FROM {table(Annotator)}"
        f" JOIN {table(Study)} ON {column(Study, 'id')} = {column(Annotator, 'study')}"
    )


def active_annotators(b: Builder) -> str:
    """The condition of ``annotator_select``: an active annotator of the study ``slug``."""
    return f"{b.condition(Study, Q(slug=Param('slug')))} AND {b.condition(Annotator, Q(is_active=True))}"


def annotator_from_row(row: dict) -> Annotator:
    annotator = model_from(Annotator, row, "a")
    annotator.study = model_from(Study, row, "s")
    annotator.current_consent_id = row["current_consent_id"]
    prefixed = [{f"c__{k}": v for k, v in c.items()} for c in row["categories"] or ()]
    annotator.study.categories_in_order = [model_from(ErrorCategory, c, "c") for c in prefixed]
    annotator.study.answer_settings_by_stage = _stage_settings_from(row["stage_settings"])
    annotator.study.wording_by_stage = _stage_wording_from(row["stage_settings"], annotator.study)
    annotator.study.dimensions_by_stage = _stage_dimensions_from(row["stage_settings"])
    annotator.study.categories_by_stage = _stage_categories_from(
        row["stage_settings"], annotator.study.categories_in_order
    )
    annotator.training_due = bool(row["training_due"])
    return annotator


@built_once
def _annotator_of_session_statement() -> Statement:
    b = Builder()
    annotators = column(AnnotatorSession, "annotators")
    signed_in = f"({annotators} ->> CAST(%(slug)s AS text))::bigint"
    live = b.condition(
        AnnotatorSession, AnnotatorSession.live_q(session_key=Param("key"), now=Param("now"))
    )
    return b.statement(
        f"{annotator_select()} JOIN {table(AnnotatorSession)} ON {column(Annotator, 'id')} = {signed_in}"
        f" WHERE {live} AND {active_annotators(b)}"
    )


def annotator_of_session(*, session_key: str, slug: str, now: datetime) -> Annotator | None:
    """The active annotator of the study ``slug`` signed in with the session
    ``session_key`` (None if the session is unknown or expired, or has nobody signed in
    to that study), with its study (``annotator.study``), the study's error categories
    in display order (``annotator.study.categories_in_order``), what each of its stages
    asks (``annotator.study.answer_settings_by_stage``: stage id → ``AnswerSettings``),
    how it words it (``annotator.study.wording_by_stage``: stage id → ``StageWording``),
    rates (``annotator.study.dimensions_by_stage``: stage id → its Likert dimensions)
    and offers (``annotator.study.categories_by_stage``: stage id → categories) and
    ``current_consent_id``, the id of the study's current consent version (None before
    there is one). One query: the session row names its signed-in annotators
    (``AnnotatorSession.annotators``), so the session data is not read."""
    statement = _annotator_of_session_statement()
    with prepared_cursor() as cursor:
        cursor.execute(
            statement.sql,
            statement.params(key=session_key, now=db_now(now), slug=slug),
        )
        rows = rows_by_name(cursor)
    return annotator_from_row(rows[0]) if rows else None


# --- the item panel ---------------------------------------------------------------------


def _ratings_json() -> str:
    """An expression: a judgement's Likert ratings (in ``_item_panel_statement``), as a
    JSON array of rating rows (null: none)."""
    return (
        f"(SELECT json_agg({_fields_json(LikertRating)}) FROM {table(LikertRating)}"
        f" WHERE {column(LikertRating, 'judgement')} = {column(Judgement, 'id')})"
    )


@built_once
def _item_panel_statement() -> Statement:
    opponent_text = (
        f"(SELECT {quote('o')}.{quote(Reflection._meta.get_field('text').column)}"
        f" FROM {table(Reflection)} AS {quote('o')}"
        f" WHERE {quote('o')}.{quote(Reflection._meta.pk.column)} = %(opponent)s)"
    )
    # (Uncorrelated: PostgreSQL runs it once for the statement, not per answer row.)
    draft = (
        f"(SELECT json_build_object('base_revision', {column(ItemDraft, 'base_revision')},"
        f" 'fields', {column(ItemDraft, 'fields')}) FROM {table(ItemDraft)}"
        f" WHERE {column(ItemDraft, 'assignment')} = %(assignment)s"
        f" AND {column(ItemDraft, 'number')} = %(number)s)"
    )
    return Statement(
        f"SELECT {column(Reflection, 'text')} AS text, {opponent_text} AS opponent_text,"
        f" {draft} AS draft,"
        f" {select_list(Judgement, 'j')}, {_ratings_json()} AS ratings"
        f" FROM {table(Reflection)} LEFT JOIN {table(Judgement)}"
        f" ON {column(Judgement, 'assignment')} = %(assignment)s"
        f" WHERE {column(Reflection, 'id')} = %(reflection)s",
        {},
    )


def item_panel_reads(
    *, assignment_id: int, reflection_id: int, opponent_id: int | None = None, number: int = 0
) -> tuple[tuple[str, str | None], dict, dict | None]:
    """What an item's panel shows besides the assignment: the response candidate's
    text (a pair's: both texts, the opponent's second, else None), every answer of
    the batch so far (``Judgement.key`` → ``Judgement``: this item's answer, and the
    count), each with its Likert ratings (``judgement.likert_ratings``, empty in other
    stages), and the draft of item ``number`` (``{"base_revision", "fields"}``, None
    without one). One query."""
    statement = _item_panel_statement()
    with prepared_cursor() as cursor:
        cursor.execute(
            statement.sql,
            {
                "assignment": assignment_id,
                "reflection": reflection_id,
                "opponent": opponent_id,
                "number": number,
            },
        )
        rows = rows_by_name(cursor)
    if not rows:
        raise Reflection.DoesNotExist("No such response candidate.")
    answers = {}
    for row in rows:
        if row["j__id"] is not None:  # the LEFT JOIN's row without any answer yet
            judgement = model_from(Judgement, row, "j")
            judgement.likert_ratings = [
                model_from(LikertRating, {f"r__{k}": v for k, v in r.items()}, "r")
                for r in row["ratings"] or ()
            ]
            answers[judgement.key] = judgement
    return (rows[0]["text"], rows[0]["opponent_text"]), answers, rows[0]["draft"]
