"""Database sessions (Django's ``db`` backend) read with one raw query.

Every annotator request reads its session first; Django's backend reads it with an
ORM query whose compilation costs more than the query itself. Same table, same
rules (expired sessions are not read), same writes: only the read differs.
``SESSION_ENGINE = "annotation_site.sessions"``.
"""

from django.contrib.sessions.backends import db
from django.db import connections
from django.utils import timezone


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        model = self.model
        connection = connections[model.objects.db]
        table = connection.ops.quote_name(model._meta.db_table)
        sessions = model.objects.raw(
            f"SELECT * FROM {table} WHERE session_key = %s AND expire_date > %s",
            [self.session_key, connection.ops.adapt_datetimefield_value(timezone.now())],
        )
        session = next(iter(sessions), None)
        if session is None:
            self._session_key = None
        return session
