"""Database sessions: Django's ``db`` backend on ``studies.AnnotatorSession``.

The row also keeps, as a column, the annotators signed in with the session
({study slug: annotator id}, the session data's ``"annotators"``), so an annotator
page finds who is asking, with their study, in one query that also checks the
session (``studies.hot_path.annotator_of_session``), without reading and decoding
the session. The store's own read of the row is the hot path's ``session_row`` (one
prepared query: the ORM's cost more to compile and plan than to run). Same rules
(expired sessions are not read), same writes. ``SESSION_ENGINE = "studies.sessions"``.

The column is plain data, not covered by the session data's signature: rotating
``SECRET_KEY`` does not by itself sign annotators out; delete the session rows for
that (``AnnotatorSession.objects.all().delete()``). Migration 0005 moved the sessions
that existed before into this table, so deploying it signs nobody out.
"""

from django.contrib.sessions.backends import db
from django.utils import timezone

from .hot_path import session_row
from .locks import sessions_locked
from .models import AnnotatorSession

SESSION_ANNOTATORS = "annotators"  # {study slug: annotator id}; one browser, several studies


class SessionStore(db.SessionStore):
    @classmethod
    def get_model_class(cls):
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
        session = session_row(session_key=self.session_key, now=timezone.now())
        if session is None:
            self._session_key = None
        return session


def sessions_sign_out_study(*, slug: str) -> int:
    """Sign every browser out of the study ``slug`` and of nothing else: its key goes
    from each session's ``annotators`` (the column and the session data); a session
    left with nothing in it is deleted, one still signed in to another study (or to the
    admin) keeps working. Returns how many sessions were signed out. Must be called
    inside a transaction; locks those session rows."""
    store = SessionStore()
    changed, emptied = [], []
    for session in sessions_locked().filter(annotators__has_key=slug):
        session.annotators = {k: v for k, v in session.annotators.items() if k != slug}
        data = session.get_decoded()
        signed_in = {k: v for k, v in data.pop(SESSION_ANNOTATORS, {}).items() if k != slug}
        if signed_in:
            data[SESSION_ANNOTATORS] = signed_in
        if not data and not session.annotators:
            emptied.append(session.pk)
        else:
            session.session_data = store.encode(data)
            changed.append(session)
    AnnotatorSession.objects.filter(pk__in=emptied).delete()
    AnnotatorSession.objects.bulk_update(changed, ["session_data", "annotators"], batch_size=500)
    return len(changed) + len(emptied)
