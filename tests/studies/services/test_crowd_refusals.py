"""The crowd refusals without a test of their own, and MTurk's frame token when it is
forged, made for another study or too old: each a clear page, and nothing written."""

import contextlib
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone

from studies.errors import ErrorCode
from studies.middleware import TOKEN_PARAMETER
from studies.models import Annotator, Assignment, Study
from studies.services import NoWorkAvailable, annotators_create
from tests.conftest import refusal_code
from tests.studies.services.test_crowd_joins import finish_stage, mturk, prolific, snapshot

pytestmark = pytest.mark.usefixtures("empty_cache")


def written():
    return snapshot(), Session.objects.count()


def test_a_worker_removed_by_the_research_team_is_refused(client, client_factory, crowd_study):
    client.get(prolific(crowd_study, 1, "p1", "s1"))
    Annotator.objects.update(is_active=False)
    before = written()
    response = client_factory().get(prolific(crowd_study, 1, "p1", "s1"))
    assert response.status_code == 403
    assert "ended by the research team" in response.content.decode()
    assert refusal_code(response) == ErrorCode.PARTICIPATION_ENDED
    assert written() == before


def test_a_later_stage_without_work_left_for_the_worker_is_refused(
    client, client_factory, crowd_study
):
    """Others did every batch of stage 2 their group needs: the worker is told there is
    no work for them, not that they did the stage."""
    Study.objects.filter(pk=crowd_study.pk).update(overlap_k=1)
    client.get(prolific(crowd_study, 1, "p1", "s1"))
    finish_stage(Annotator.objects.get(), when=timezone.now() - timedelta(days=4))
    for other in annotators_create(group=crowd_study.groups.get(name="Layperson"), count=3):
        for when in (timezone.now() - timedelta(days=4), timezone.now()):
            with contextlib.suppress(NoWorkAvailable):  # stage 1 was full for the third
                finish_stage(other, when=when)
    assert Assignment.objects.filter(stage__position=2, status="submitted").count() == 3
    before = written()
    response = client_factory().get(prolific(crowd_study, 2, "p1", "s2"))
    page = response.content.decode()
    assert response.status_code == 403
    assert "There is no work left for you in Stage 2" in page
    assert refusal_code(response) == ErrorCode.CROWD_NO_WORK_LEFT
    assert written() == before


@pytest.mark.parametrize("status", [Study.Status.DRAFT, Study.Status.CLOSED])
def test_a_study_that_is_not_open_refuses_crowd_workers(client, crowd_study, status):
    client.get(prolific(crowd_study, 1, "p1", "s1"))
    Study.objects.filter(pk=crowd_study.pk).update(status=status)
    before = written()
    for link in (prolific(crowd_study, 1, "p1", "s1"), prolific(crowd_study, 1, "p2")):
        response = client.get(link)
        assert response.status_code == 403
        assert "not taking part through a crowd platform right now" in response.content.decode()
        assert refusal_code(response) == ErrorCode.CROWD_CLOSED
    assert written() == before


# --- MTurk's frame token --------------------------------------------------------------


@pytest.fixture
def token(client, crowd_study):
    """A worker's frame token, from a join of a study shown in MTurk's frame."""
    Study.objects.filter(pk=crowd_study.pk).update(mturk_frame=True)
    response = client.get(mturk(crowd_study, 1, "W1", "A1"))
    return parse_qs(urlsplit(response["Location"]).query)[TOKEN_PARAMETER][0]


def refused_without_writing(client_factory, url: str):
    before = written()
    response = client_factory().get(url)
    assert response.status_code == 403
    assert "Please use your personal link" in response.content.decode()
    assert written() == before
    return response


def test_the_token_itself_carries_the_worker(client_factory, token):
    response = client_factory().get(f"/s/pilot/consent/?{TOKEN_PARAMETER}={token}")
    assert response.status_code == 200


def test_a_forged_token_is_ignored(client_factory, token):
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    refused_without_writing(client_factory, f"/s/pilot/consent/?{TOKEN_PARAMETER}={forged}")


def test_a_token_for_another_study_is_ignored(client_factory, token, crowd_study):
    Study.objects.create(slug="other", title="Other", status="open", mturk_frame=True)
    refused_without_writing(client_factory, f"/s/other/consent/?{TOKEN_PARAMETER}={token}")


def test_an_expired_token_is_ignored(client_factory, token, settings, monkeypatch):
    later = time.time() + settings.SESSION_COOKIE_AGE + 60
    monkeypatch.setattr("django.core.signing.time.time", lambda: later)
    refused_without_writing(client_factory, f"/s/pilot/consent/?{TOKEN_PARAMETER}={token}")


# --- MTurk's preview --------------------------------------------------------------------


def test_the_mturk_preview_shows_the_task_and_stores_nothing(client, crowd_study):
    from studies.models import Stage
    from studies.protocol import NO_ANSWER_FREE_TEXT

    Study.objects.filter(pk=crowd_study.pk).update(batch_time_limit=timedelta(minutes=30))
    Stage.objects.filter(study=crowd_study, position=2).update(no_answer=NO_ANSWER_FREE_TEXT)
    before = written()
    for position in (1, 2):
        key = crowd_study.stages.get(position=position).join_key
        response = client.get(
            f"/s/pilot/join/{key}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H{position}"
        )
        page = response.content.decode()
        assert response.status_code == 200
        assert crowd_study.title in page and f"Stage {position} of this study" in page
        assert "up to <strong>30 minutes</strong> per batch" in page
        assert "The pay is the one MTurk shows for this HIT" in page
        assert "Accept the task on MTurk to begin" in page
        assert "GPT" not in page  # the researchers' stage names stay hidden
        if position == 1:
            assert "you tick what is wrong from a short list" in page
        else:
            assert "you describe what is wrong in your own words" in page
    assert written() == before
