"""Building the hot path's statements from model metadata, and running them prepared.

``_Builder`` compiles the ORM's own conditions (``Q`` objects) and expressions with
Django's compiler, turning their values into named constants of the statement and
``Param`` into named parameters; names come from ``_meta``; results are read by name
(``select_list`` / ``model_from``)."""

import re
from dataclasses import dataclass
from datetime import datetime
from functools import wraps

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Expression, Q
from django.db.models.sql import Query

# --- prepared statements (PostgreSQL) ---------------------------------------------------
# Django's PostgreSQL backend binds parameters on the client and never prepares, so
# PostgreSQL parses and plans every statement on every request. ``prepared_cursor``
# gives an ordinary Django cursor (query logging, ``execute_wrapper``, error wrapping
# all apply) whose statements are bound on the server, prepared on a connection the
# first time they run there and reused after (psycopg keeps one per statement and
# combination of parameter types, and forgets them all after a rollback). On when
# ``DATABASES["default"]["OPTIONS"]["prepare_threshold"]`` is set (settings:
# ``DJANGO_DB_PREPARED_STATEMENTS``, default on); unset, the same cursor binds on the
# server without preparing (e.g. behind a connection pooler in transaction mode). The
# ORM's own queries are never prepared. Statements here name their columns (no ``*``):
# a prepared statement whose result columns change under it (a migration adding a
# column) would fail until its connection is replaced.


class PreparingCursor(ServerBindingCursor):
    """psycopg's server-side binding cursor, preparing every statement it runs."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


def prepared_cursor():
    """``connection.cursor()``, but its statements are prepared."""
    # What connection.cursor() does first; then its new cursor is of our class.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    factory = raw.cursor_factory
    raw.cursor_factory = PreparingCursor
    try:
        return connection.cursor()
    finally:
        raw.cursor_factory = factory


# --- building statements from metadata -------------------------------------------------


def built_once(build):
    """Caches what ``build(*args)`` returns: the statements are assembled once per
    process, not on every request (quoting names through the connection costs more than
    sending the statement)."""
    cache: dict = {}

    @wraps(build)
    def cached(*args):
        key = args
        if key not in cache:
            cache[key] = build(*args)
        return cache[key]

    return cached


class Param(Expression):
    """A named parameter of a statement: compiles to ``%(name)s``."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def as_sql(self, compiler, connection):
        return f"%({self.name})s", []


@dataclass(frozen=True)
class Statement:
    """SQL with named parameters, and the values of those it fixes itself (statuses,
    constants of the compiled conditions)."""

    sql: str
    constants: dict

    def params(self, **values) -> dict:
        return {**self.constants, **values}


_END = object()


class Builder:
    """Collects a statement's constants while its parts are compiled."""

    def __init__(self):
        self.constants: dict = {}

    def constant(self, value) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return f"%({name})s"

    def _named(self, sql: str, params) -> str:
        """``sql``'s positional ``%s`` placeholders as named constants (``%%``, a
        literal percent sign, stays)."""
        values = iter(params)
        named = re.sub(
            r"%%|%s", lambda m: m[0] if m[0] == "%%" else self.constant(next(values)), sql
        )
        if next(values, _END) is not _END:
            raise ValueError(f"more parameters than placeholders in {sql!r}")
        return named

    def condition(self, model, q: Q) -> str:
        """``q`` on ``model``'s own columns (no joins), as Django compiles it, with the
        table's name as qualifier."""
        query = Query(model)
        compiler = query.get_compiler(connection=connection)
        sql, params = query.build_where(q).as_sql(compiler, connection)
        return self._named(sql, params)

    def expression(self, model, expression) -> str:
        query = Query(model)
        compiler = query.get_compiler(connection=connection)
        sql, params = compiler.compile(expression.resolve_expression(query))
        return self._named(sql, params)

    def statement(self, sql: str) -> Statement:
        return Statement(sql, dict(self.constants))


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def table(model) -> str:
    return quote(model._meta.db_table)


def column(model, name: str) -> str:
    """``model``'s column of field ``name``, qualified by its table."""
    return f"{table(model)}.{quote(model._meta.get_field(name).column)}"


def select_list(model, prefix: str, source: str | None = None) -> str:
    """``model``'s concrete columns, from ``source`` (default: its table), each named
    ``<prefix>__<column>`` in the result for ``model_from``."""
    source = source or table(model)
    return ", ".join(
        f"{source}.{quote(f.column)} AS {quote(f'{prefix}__{f.column}')}"
        for f in model._meta.concrete_fields
    )


_CONVERTERS: dict = {}


def model_from(model, row: dict, prefix: str):
    """A ``model`` instance from the ``<prefix>__<column>`` values of ``row`` (a result
    row by column name), with the database's converters applied (as the ORM does)."""
    key = model
    if key not in _CONVERTERS:
        compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection, None)
        concrete = model._meta.concrete_fields
        cols = [f.get_col(model._meta.db_table) for f in concrete]
        _CONVERTERS[key] = (
            [f.attname for f in concrete],
            [f.column for f in concrete],
            list(compiler.get_converters(cols).items()),
        )
    names, columns, converters_at = _CONVERTERS[key]
    values = [row[f"{prefix}__{c}"] for c in columns]
    for position, (converters, expression) in converters_at:
        value = values[position]
        for converter in converters:
            value = converter(value, expression, connection)
        values[position] = value
    return model.from_db(connection.alias, names, values)


def rows_by_name(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def db_now(now: datetime):
    return connection.ops.adapt_datetimefield_value(now)
