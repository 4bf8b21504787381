"""One deadline per assignment (``Assignment.deadline``): its time limit, or earlier,
while nothing is answered, ``ASSIGNMENT_UNANSWERED_RELEASE`` after the claim. The
timer, the batch page, answers (ORM and the prepared statements) and expiry use it."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from studies.models import Assignment, Judgement, Study
from tests.studies.views.test_annotate import (  # noqa: F401 (fixtures)
    HX,
    annotator,
    assignment,
    good_answer,
    item_url,
    open_study,
    ready,
)


@pytest.fixture
def claimed(db, request):
    """A claimed batch, nothing answered yet (signed in as its annotator)."""
    return request.getfixturevalue("assignment")


@pytest.fixture
def release(settings):
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 600
    return timedelta(seconds=600)


def test_an_unanswered_claim_has_the_release_as_its_deadline(claimed, release):
    assert claimed.status == Assignment.Status.ASSIGNED
    assert claimed.deadline == claimed.assigned_at + release < claimed.expires_at
    assert not claimed.is_past_deadline(claimed.assigned_at + release - timedelta(seconds=1))
    assert claimed.is_past_deadline(claimed.assigned_at + release)
    Assignment.objects.filter(pk=claimed.pk).update(status=Assignment.Status.IN_PROGRESS)
    claimed.refresh_from_db()
    assert claimed.deadline == claimed.expires_at


def test_the_querysets_agree_with_the_deadline(claimed, release):
    at = claimed.assigned_at + release
    just_before = at - timedelta(seconds=1)
    mine = Assignment.objects.filter(pk=claimed.pk)
    assert mine.filter(Assignment.accepting_answers_q(just_before)).exists()
    assert not mine.filter(Assignment.accepting_answers_q(at)).exists()
    assert mine.filter(Assignment.overdue_q(at)).exists()


def test_the_timer_shows_the_earlier_deadline(client, claimed, release):
    page = client.get(item_url(claimed, 1)).content.decode()
    deadline = (claimed.assigned_at + release).isoformat()
    assert f'data-expires="{deadline}"' in page
    assert f'data-deadline="{deadline}"' in page
    assert "js/times.js" in page


def test_the_panel_after_the_first_answer_carries_the_time_limit(client, claimed, release):
    response = client.post(item_url(claimed, 1), good_answer(claimed, 1), **HX)
    assert response.status_code == 200
    assert f'data-deadline="{claimed.expires_at.isoformat()}"' in response.content.decode()


@pytest.mark.parametrize("htmx", [False, True])
def test_a_first_answer_after_the_release_is_refused(client, claimed, release, htmx):
    Assignment.objects.filter(pk=claimed.pk).update(
        assigned_at=timezone.now() - release - timedelta(minutes=1)
    )
    response = client.post(item_url(claimed, 1), good_answer(claimed, 1), **(HX if htmx else {}))
    assert response.status_code == 409
    assert "The time for this batch ran out" in response.content.decode()
    assert not Judgement.objects.exists()


# --- what the batch page says the clock is ---------------------------------------------


def clock_notes(page: str) -> dict[str, tuple[bool, str]]:
    """The two notes under the batch bar: id → (hidden, text)."""
    notes = re.findall(r'<p class="muted clock-note" id="([a-z-]+)"( hidden)?>(.*?)</p>', page)
    return {name: (bool(hidden), text) for name, hidden, text in notes}


def test_before_the_first_answer_the_page_says_the_clock_is_the_first_answers(
    client, claimed, release
):
    Study.objects.filter(pk=claimed.stage.study_id).update(batch_time_limit=timedelta(minutes=45))
    Assignment.objects.filter(pk=claimed.pk).update(
        expires_at=claimed.assigned_at + timedelta(minutes=45)
    )
    page = client.get(item_url(claimed, 1)).content.decode()
    notes = clock_notes(page)
    hidden, text = notes["clock-first-answer"]
    assert not hidden
    assert "counts down the 10 minutes you have to save your first answer" in text
    assert "the batch goes to someone else" in text
    assert "the batch's full time limit, 45 minutes from when you started it" in text
    assert notes["clock-time-limit"][0]  # hidden
    assert "First answer due by" in page
    assert f'data-limit="{(claimed.assigned_at + timedelta(minutes=45)).isoformat()}"' in page


def test_after_the_first_answer_the_page_says_the_clock_is_the_time_limit(client, claimed, release):
    client.post(item_url(claimed, 1), good_answer(claimed, 1))
    page = client.get(item_url(claimed, 2)).content.decode()
    notes = clock_notes(page)
    assert notes["clock-first-answer"][0]  # hidden
    hidden, text = notes["clock-time-limit"]
    assert not hidden
    assert "the rest of the batch's time limit, 30 minutes from when you started it" in text
    assert "First answer due by" not in page and "Time left: until" in page


def test_a_time_limit_shorter_than_the_first_answers_has_one_clock(client, claimed, settings):
    settings.ASSIGNMENT_UNANSWERED_RELEASE = 3600
    page = client.get(item_url(claimed, 1)).content.decode()
    notes = clock_notes(page)
    assert notes["clock-first-answer"][0] and not notes["clock-time-limit"][0]
    assert "Time left: until" in page
