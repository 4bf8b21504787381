"""Database sessions: Django's ``db`` backend on ``studies.AnnotatorSession``.

The row also keeps, as a column, the annotators signed in with the session
({study slug: annotator id}, the session data's ``"annotators"``), so an annotator
page finds who is asking, with their study, in one query that also checks the
session (``studies.selectors.annotator_of_session``), without reading and decoding
the session. Other reads of the session use one prepared raw query (Django's ORM
query cost more to compile and plan than to run). Same rules (expired sessions are
not read), same writes. ``SESSION_ENGINE = "annotation_site.sessions"``.

The column is plain data, not covered by the session data's signature: rotating
``SECRET_KEY`` does not by itself sign annotators out; delete the session rows for
that (``AnnotatorSession.objects.all().delete()``). Migration 0005 moved the sessions
that existed before into this table, so deploying it signs nobody out.
"""

from django.contrib.sessions.backends import db
from django.db import connection
from django.utils import timezone

from .db import columns, model_from_row, per_backend, prepared_cursor

SESSION_ANNOTATORS = "annotators"  # {study slug: annotator id}; one browser, several studies


class SessionStore(db.SessionStore):
    @classmethod
    def get_model_class(cls):
        from studies.models import AnnotatorSession

        return AnnotatorSession

    def create_model_instance(self, data):
        session = super().create_model_instance(data)
        session.annotators = data.get(SESSION_ANNOTATORS, {})
        return session

    async def acreate_model_instance(self, data):
        session = await super().acreate_model_instance(data)
        session.annotators = data.get(SESSION_ANNOTATORS, {})
        return session

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
