"""Database sessions (Django's ``db`` backend) read with one prepared raw query.

Every annotator request reads its session first; Django's backend reads it with an
ORM query whose compilation and planning cost more than the query itself. Same
table, same rules (expired sessions are not read), same writes: only the read
differs. ``SESSION_ENGINE = "annotation_site.sessions"``.
"""

from django.contrib.sessions.backends import db
from django.db import connection
from django.utils import timezone

from .db import columns, model_from_row, per_backend, prepared_cursor


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        # On the default database, as every table of the site.
        with prepared_cursor() as cursor:
            cursor.execute(
                _session_sql(self.model),
                [self.session_key, connection.ops.adapt_datetimefield_value(timezone.now())],
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return model_from_row(self.model, list(row))


@per_backend
def _session_sql(model) -> str:
    table = connection.ops.quote_name(model._meta.db_table)
    return f"SELECT {columns(model)} FROM {table} WHERE session_key = %s AND expire_date > %s"
