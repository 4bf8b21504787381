"""The site for ``bench.load.run --compare session-column``: annotator pages find who
is asking without the session row's ``annotators`` column.

A gunicorn app (``bench.load.without_session_column:application``), bench-only: the
session data is read and decoded by the session store (its own prepared read of the
row), then the annotator with its study, current consent version and categories is
read by id in one prepared statement, the same ``SELECT`` the column's statement uses.
So the comparison is one prepared query plus decoding the signed session data against
the one query the column allows; the column is still written either way.
"""

from annotation_site.wsgi import application as site
from studies import hot_path
from studies.hot_path.reads import active_annotators, annotator_from_row, annotator_select
from studies.hot_path.sql import Builder, built_once, column, prepared_cursor, rows_by_name
from studies.models import Annotator
from studies.sessions import SESSION_ANNOTATORS, SessionStore

__all__ = ["annotator_of_session", "application"]


@built_once
def _by_id_statement():
    b = Builder()
    return b.statement(
        f"{annotator_select()} WHERE {column(Annotator, 'id')} = %(annotator)s"
        f" AND {active_annotators(b)}"
    )


def annotator_of_session(*, session_key: str, slug: str, now) -> Annotator | None:
    # (``now`` unused: the session store checks the session's expiry itself.)
    annotator_id = SessionStore(session_key).get(SESSION_ANNOTATORS, {}).get(slug)
    if annotator_id is None:
        return None
    statement = _by_id_statement()
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, statement.params(annotator=annotator_id, slug=slug))
        rows = rows_by_name(cursor)
    return annotator_from_row(rows[0]) if rows else None


def application(environ, start_response):
    """The site, with annotator pages reading who is asking as above (set on every
    request, so importing this module changes nothing)."""
    hot_path.annotator_of_session = annotator_of_session
    return site(environ, start_response)
