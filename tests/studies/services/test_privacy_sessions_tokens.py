"""The purge's two details that protect people beyond the study: a purged access token
is a fresh random value (not one derived from the row id, which could be guessed), and
a browser signed in to several studies is signed out of the purged one only."""

from datetime import timedelta

import pytest
from django.urls import reverse

from studies.models import Annotator, AnnotatorSession, Study
from studies.personal_data import PURGED_PREFIX
from studies.services import annotators_create, study_create, study_purge_personal_data
from studies.sessions import SESSION_ANNOTATORS, SessionStore

pytestmark = pytest.mark.django_db


def close(study):
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)


@pytest.fixture
def other_study(db):
    study = study_create(
        slug="other",
        title="Another study",
        stages=[("Only stage", timedelta(0))],
        groups=["Expert"],
        information_sheet="Another sheet.",
        consent_text="I agree.",
    )
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    return study


def test_purged_access_tokens_are_fresh_random_values_and_stay_unique(loaded_study, client):
    annotators = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=5)
    old = {a.pk: a.access_token for a in annotators}
    close(loaded_study)
    study_purge_personal_data(study=loaded_study)
    new = dict(Annotator.objects.filter(study=loaded_study).values_list("pk", "access_token"))
    assert len(set(new.values())) == len(new) == 5
    for pk, token in new.items():
        assert token.startswith(PURGED_PREFIX) and token != f"{PURGED_PREFIX}{pk}"
        assert len(token) >= len(PURGED_PREFIX) + 32 and token != old[pk]
        # Neither the old link nor the new token signs anyone in.
        for link_token in (old[pk], token):
            response = client.get(reverse("studies:invitation", args=[link_token]))
            assert response.status_code == 404
    assert not AnnotatorSession.objects.exists()
    # Purging again leaves purged tokens as they are (nothing personal is left).
    study_purge_personal_data(study=loaded_study)
    assert dict(Annotator.objects.filter(study=loaded_study).values_list("pk", "access_token")) == (
        new
    )


def _status(client, slug: str) -> int:
    return client.get(reverse("studies:home", args=[slug])).status_code


def test_a_browser_signed_in_to_two_studies_stays_signed_in_to_the_other(
    loaded_study, other_study, client
):
    mine = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    theirs = annotators_create(group=other_study.groups.get(), count=1)[0]
    for annotator in (mine, theirs):
        client.get(reverse("studies:invitation", args=[annotator.access_token]))
    assert _status(client, loaded_study.slug) != 403 and _status(client, other_study.slug) != 403
    (shared,) = AnnotatorSession.objects.all()
    assert shared.annotators == {"pilot": mine.pk, "other": theirs.pk}
    close(loaded_study)

    purge = study_purge_personal_data(study=loaded_study)

    assert purge.deleted["browser sessions"] == 1
    (kept,) = AnnotatorSession.objects.all()
    assert kept.session_key == shared.session_key  # the same browser session
    assert kept.annotators == {"other": theirs.pk}
    assert kept.get_decoded()[SESSION_ANNOTATORS] == {"other": theirs.pk}
    assert _status(client, loaded_study.slug) == 403  # signed out of the purged study
    assert _status(client, other_study.slug) != 403  # still signed in to the other


def test_a_session_holding_more_than_sign_ins_keeps_the_rest(loaded_study):
    """A session with only this study is deleted; one that also holds something else
    (an admin login in the same browser, say) keeps that, minus the study."""
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    only = SessionStore()
    only[SESSION_ANNOTATORS] = {"pilot": annotator.pk}
    only.create()
    mixed = SessionStore()
    mixed.update({SESSION_ANNOTATORS: {"pilot": annotator.pk}, "_auth_user_id": "7"})
    mixed.create()
    close(loaded_study)
    study_purge_personal_data(study=loaded_study)
    assert not AnnotatorSession.objects.filter(session_key=only.session_key).exists()
    kept = AnnotatorSession.objects.get(session_key=mixed.session_key)
    assert kept.annotators == {} and kept.get_decoded() == {"_auth_user_id": "7"}
    assert SessionStore(mixed.session_key).load() == {"_auth_user_id": "7"}
