"""Prepared statements for the annotator's hot path (PostgreSQL).

Django's PostgreSQL backend binds parameters on the client and never prepares, so
PostgreSQL parses and plans every statement on every request. For the few raw
statements every annotator request runs (the session, the signed-in annotator, the
save), planning cost more than executing (bench/load/README.md). ``prepared_cursor``
gives an ordinary Django cursor (query logging, ``execute_wrapper``, error wrapping
all apply) whose statements are bound on the server, prepared on a connection the
first time they run there and reused after (psycopg keeps one per statement and
combination of parameter types, and forgets them all after a rollback).

Prepared statements are on when ``DATABASES["default"]["OPTIONS"]["prepare_threshold"]``
is set (settings: ``DJANGO_DB_PREPARED_STATEMENTS``, default on); with it unset the
same cursor binds on the server without preparing (e.g. behind a connection pooler in
transaction mode). The ORM's own queries are never prepared: they keep Django's
client-side binding cursors. Statements run here must name their columns (no ``*``):
a prepared statement whose result columns change under it (a migration adding a
column) would fail until its connection is replaced.
"""

from functools import wraps

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models.sql import Query


class PreparingCursor(ServerBindingCursor):
    """psycopg's server-side binding cursor, preparing every statement it runs."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


def prepared_cursor():
    """``connection.cursor()``, but on PostgreSQL its statements are prepared."""
    if connection.vendor != "postgresql":
        return connection.cursor()
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


def per_backend(build):
    """Caches what ``build(*args)`` returns (SQL text) per database backend: the hot
    path's statements are assembled once, not on every request (quoting names through
    the connection costs more than sending the statement)."""
    cache: dict = {}

    @wraps(build)
    def cached(*args):
        key = (connection.vendor, *args)
        if key not in cache:
            cache[key] = build(*args)
        return cache[key]

    return cached


@per_backend
def columns(model, alias: str = "") -> str:
    """The model's concrete columns, quoted and in field order (what ``model_from_row``
    reads), e.g. ``a."id", a."study_id"``."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(
        prefix + connection.ops.quote_name(f.column) for f in model._meta.concrete_fields
    )


_CONVERTERS: dict = {}


def model_from_row(model, values: list):
    """A ``model`` instance from its concrete columns' raw values (in ``columns``
    order), with the database's converters applied (as ``raw()`` and the ORM do)."""
    key = (model, connection.vendor)
    if key not in _CONVERTERS:
        table = model._meta.db_table
        compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection, None)
        fields = [f.get_col(table) for f in model._meta.concrete_fields]
        names = [f.attname for f in model._meta.concrete_fields]
        _CONVERTERS[key] = (names, list(compiler.get_converters(fields).items()))
    names, converters_at = _CONVERTERS[key]
    for position, (converters, expression) in converters_at:
        value = values[position]
        for converter in converters:
            value = converter(value, expression, connection)
        values[position] = value
    return model.from_db(connection.alias, names, values)
