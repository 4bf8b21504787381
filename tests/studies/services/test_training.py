"""The training quiz end to end through the test client: the gate on every annotator
page, feedback after each answer, the score, passing, another attempt, the end after
the last failed attempt (a thank-you page; a crowd worker's screened-out return), and
every bad input (the message, and that nothing was written)."""

import re

import pytest
from django.urls import reverse

from studies.errors import ErrorCode
from studies.models import (
    Assignment,
    CrowdEntry,
    Stage,
    Study,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
)
from studies.protocol import NO_ANSWER_BOTH, NO_ANSWER_FREE_TEXT
from studies.selectors import study_progress
from studies.selectors.training import TrainingStatus, training_outcomes, training_status
from studies.services.crowd import PROLIFIC_COMPLETE_URL
from studies.services.training import (
    TrainingRefused,
    training_outcome,
    training_score_passes,
)
from studies.views.common import TRAINING_FIRST
from tests.studies.training_fixtures import (
    RIGHT_ANSWERS,
    WRONG_ANSWER,
    annotator_ready_for_quiz,
    quiz_add,
)

HX = {"HTTP_HX_REQUEST": "true"}
QUIZ = "/s/pilot/training/"
WITHHELD = "This practice item may come back in a later attempt"
RULE = "must choose every error category the candidate certainly has and none it certainly"


def item(number: int) -> str:
    return reverse("studies:training_item", args=["pilot", number])


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN, batches_per_stage=2)
    loaded_study.refresh_from_db()
    return loaded_study


@pytest.fixture
def quiz(open_study):
    return quiz_add(open_study)


@pytest.fixture
def trainee(client, open_study, quiz):
    annotator = annotator_ready_for_quiz(open_study)
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def take_attempt(client, answers) -> None:
    """Start an attempt and answer the items in order (plain forms)."""
    assert client.post(QUIZ).status_code == 302
    for number, answer in enumerate(answers, start=1):
        response = client.post(item(number), answer)
        assert response.status_code == 302, response.content.decode()[:2000]


def counts() -> tuple[int, int, int]:
    return (
        TrainingAttempt.objects.count(),
        TrainingAnswer.objects.count(),
        Assignment.objects.count(),
    )


# --- the gate -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/s/pilot/", "/s/pilot/done/", "/s/pilot/b/1/"])
def test_every_annotator_page_leads_to_the_quiz_before_it_is_passed(client, trainee, path):
    response = client.get(path)
    assert response.status_code == 302 and response.url == QUIZ


def test_a_study_without_a_quiz_has_no_gate(client, open_study):
    annotator = annotator_ready_for_quiz(open_study)
    client.get(f"/i/{annotator.access_token}/")
    assert client.get("/s/pilot/").status_code == 200
    assert client.get(QUIZ).url == "/s/pilot/"


def test_the_tutorial_comes_before_the_quiz(client, trainee):
    trainee.tutorial_completed_at = None
    trainee.save()
    assert client.get(QUIZ).url == "/s/pilot/tutorial/"


def test_claiming_a_batch_before_passing_is_refused_and_writes_nothing(client, trainee):
    response = client.post("/s/pilot/start/", follow=True)
    assert response.redirect_chain[0] == (QUIZ, 302)
    assert TRAINING_FIRST in response.content.decode()
    assert counts() == (0, 0, 0)
    # ... and after a failed attempt with one left, still refused.
    take_attempt(client, [WRONG_ANSWER] * 5)
    before = counts()
    response = client.post("/s/pilot/start/", follow=True)
    assert TRAINING_FIRST in response.content.decode()
    assert counts() == before and before[2] == 0


# --- the flow -----------------------------------------------------------------------------


def test_the_introduction_states_the_pass_mark_and_the_attempts(client, trainee):
    page = client.get(QUIZ).content.decode()
    assert "A short practice quiz" in page
    assert "5 practice response candidates" in page
    assert "<strong>80 %</strong>" in page and "2 attempts" in page


def test_the_rule_follows_what_the_first_stage_asks_after_no(client, trainee, open_study):
    page = client.get(QUIZ).content.decode()
    assert RULE in page and "The agreement rating after Yes is not scored." in page
    assert "description" not in page
    Stage.objects.filter(study=open_study, position=1).update(
        no_answer=NO_ANSWER_FREE_TEXT, empathy_after_yes=False
    )
    page = client.get(QUIZ).content.decode()
    rule = re.search(r'<p class="training-rule">(.*?)</p>', page).group(1)
    assert rule == (
        "A Yes or No counts as right when it is the expected one. "
        "The description you write after No is not scored."
    )
    Stage.objects.filter(study=open_study, position=1).update(no_answer=NO_ANSWER_BOTH)
    page = client.get(QUIZ).content.decode()
    assert RULE in page and "The description you may add after No is not scored." in page


def test_each_item_is_the_item_panel_then_its_feedback(client, trainee, quiz):
    client.post(QUIZ)
    page = client.get(item(1)).content.decode()
    assert "Practice item 1 of 5" in page
    assert quiz[0].text in page
    assert "Is this response candidate coherent" in page
    # The first item's dialogue is an existing context of the study.
    assert quiz[0].context.turns[0]["text"] in page
    assert "Review answers" not in page  # a batch's link, not the quiz's
    response = client.post(item(1), RIGHT_ANSWERS[0])
    assert response.url == item(1)
    page = client.get(item(1)).content.decode()
    assert "Right ✓" in page
    assert "Next practice item" in page and item(2) in page
    # Five items and two attempts of five: the items come back in the second attempt,
    # so the feedback states the rule and keeps the expected answer and why back.
    assert WITHHELD in page and RULE in page
    assert quiz[0].explanation not in page and "data-expected" not in page
    # A typed dialogue for the second item.
    assert "I&#x27;ve been drinking more" in client.get(item(2)).content.decode()
    response = client.post(item(2), {"coherent": "yes", "empathy": "2"}, **HX)
    page = response.content.decode()
    assert response.status_code == 200 and 'id="item-panel"' in page
    assert "Not quite ✗" in page and "Your answer" in page and WITHHELD in page
    assert "Off-topic" not in page and quiz[1].explanation not in page
    assert "<html" not in page  # htmx: the panel only


def test_passing_unlocks_the_batches(client, trainee):
    take_attempt(client, RIGHT_ANSWERS)
    last = client.get(item(5)).content.decode()
    assert "See your score" in last
    page = client.get(QUIZ).content.decode()
    assert "You passed the practice quiz" in page
    assert "<strong>5 of 5</strong> (100 %; 80 % needed)" in page
    assert client.get("/s/pilot/").status_code == 200
    # Its button starts the first batch (no detour through the home page).
    assert '<form method="post" action="/s/pilot/start/">' in page
    assert re.search(r'<button type="submit" class="primary">Go to your first batch</button>', page)
    response = client.post("/s/pilot/start/")
    assert Assignment.objects.filter(annotator=trainee).count() == 1
    assert response.url.startswith("/s/pilot/b/")
    attempt = TrainingAttempt.objects.get(annotator=trainee)
    assert (attempt.status, attempt.n_right, attempt.n_items) == ("passed", 5, 5)
    assert training_outcome(annotator=trainee).status == TrainingStatus.PASSED


def test_failing_then_passing_on_the_second_attempt(client, trainee, quiz):
    # 3 of 5 = 60 % < 80 %
    take_attempt(client, [*RIGHT_ANSWERS[:3], WRONG_ANSWER, WRONG_ANSWER])
    page = client.get(QUIZ).content.decode()
    assert "Not passed yet" in page and "<strong>3 of 5</strong> (60 %; 80 % needed)" in page
    assert "Try again (attempt 2 of 2)" in page and "1 more attempt" in page
    # Which items were wrong, the rule, and (five items for two attempts) that they return.
    assert re.findall(r'data-wrong="(\d)"', page) == ["4", "5"]
    assert quiz[3].text in page and quiz[0].text not in page
    assert RULE in page and "may show some of the same practice items again" in page
    assert training_outcome(annotator=trainee).status == TrainingStatus.NOT_STARTED
    assert client.get("/s/pilot/").url == QUIZ
    # 4 of 5 = exactly 80 %: passed
    take_attempt(client, [*RIGHT_ANSWERS[:4], WRONG_ANSWER])
    assert "You passed the practice quiz" in client.get(QUIZ).content.decode()
    attempts = list(
        TrainingAttempt.objects.filter(annotator=trainee).values_list("number", "status", "n_right")
    )
    assert attempts == [(1, "failed", 3), (2, "passed", 4)]
    assert TrainingAnswer.objects.filter(attempt__annotator=trainee).count() == 10
    assert client.get("/s/pilot/").status_code == 200


def test_failing_twice_ends_with_a_thank_you_page(client, trainee):
    take_attempt(client, [WRONG_ANSWER] * 5)
    take_attempt(client, [*RIGHT_ANSWERS[:2], WRONG_ANSWER, WRONG_ANSWER, WRONG_ANSWER])
    response = client.get("/s/pilot/", follow=True)
    page = response.content.decode()
    assert response.redirect_chain == [(QUIZ, 302)]
    assert "Thank you for taking part" in page and "your part in the study ends here" in page
    assert "<strong>2 of 5</strong> (40 %; 80 % needed)" in page
    assert "crowd-return" not in page  # an invited annotator is not sent anywhere
    assert "Try again" not in page
    assert training_outcome(annotator=trainee).status == TrainingStatus.FAILED


@pytest.mark.parametrize("platform", ["prolific", "mturk"])
def test_a_crowd_worker_who_fails_is_returned_screened_out_with_the_stages_code(
    client, open_study, quiz, platform
):
    from studies.models import TrainingQuiz

    TrainingQuiz.objects.filter(study=open_study).update(attempts=1)
    first = open_study.stages.get(position=1)
    Stage.objects.filter(pk=first.pk).update(screened_out_code="OUT1")
    worker = annotator_ready_for_quiz(open_study)
    worker.platform, worker.platform_participant_id = platform, "W1"
    worker.save()
    CrowdEntry.objects.create(
        annotator=worker,
        stage=first,
        platform=platform,
        session_id="SESSION1",
        submit_to="https://www.mturk.com" if platform == "mturk" else "",
    )
    client.get(f"/i/{worker.access_token}/")
    take_attempt(client, [WRONG_ANSWER] * 5)
    # Recorded with the last answer, before the worker sees the result page.
    assert CrowdEntry.objects.get(annotator=worker).outcome == "screened_out"
    # One attempt allowed here: one failed attempt is the end (also as the export and
    # the progress table read it).
    assert training_outcomes(study=open_study) == {worker.pk: TrainingStatus.FAILED}
    page = client.get(QUIZ).content.decode()
    assert "Thank you for taking part" in page
    name = "Prolific" if platform == "prolific" else "MTurk"
    assert f"Please return to {name}" in page and "<code>OUT1</code>" in page
    if platform == "prolific":
        assert f'href="{PROLIFIC_COMPLETE_URL}?cc=OUT1"' in page
    else:
        assert 'action="https://www.mturk.com/mturk/externalSubmit"' in page
        assert 'name="outcome" value="screened_out"' in page
        assert 'name="assignmentId" value="SESSION1"' in page
    entry = CrowdEntry.objects.get(annotator=worker)
    assert entry.outcome == "screened_out" and entry.returned_at is not None


# --- bad input: the message, and nothing written ------------------------------------------


def test_answering_a_practice_item_twice_is_refused(client, trainee):
    client.post(QUIZ)
    client.post(item(1), RIGHT_ANSWERS[0])
    before = counts()
    response = client.post(item(1), WRONG_ANSWER)
    assert response.status_code == 409
    assert TrainingRefused.MESSAGES[ErrorCode.PRACTICE_ITEM_ANSWERED] in response.content.decode()
    assert counts() == before
    assert TrainingAnswer.objects.get().is_right  # the first answer stands


def test_practice_items_are_answered_in_order(client, trainee):
    """A later item cannot be answered, nor opened, before the earlier ones: skipping
    one would leave it out of reach (the quiz resumes after the answers given)."""
    client.post(QUIZ)
    client.post(item(1), RIGHT_ANSWERS[0])
    before = counts()
    response = client.post(item(3), RIGHT_ANSWERS[2])
    assert response.status_code == 409
    assert TrainingRefused.MESSAGES[ErrorCode.PRACTICE_ITEM_NOT_NEXT] in response.content.decode()
    assert counts() == before
    assert client.get(item(3))["Location"] == item(2)
    assert client.get(QUIZ)["Location"] == item(2)
    take_attempt_rest = [client.post(item(n), RIGHT_ANSWERS[n - 1]) for n in range(2, 6)]
    assert [r.status_code for r in take_attempt_rest] == [302] * 4
    assert TrainingAttempt.objects.get().status == TrainingAttempt.Status.PASSED


def test_items_numbered_with_gaps_are_answered_by_their_place(client, trainee, quiz):
    """Positions 10, 20, ... (as a researcher may number them) are items 1, 2, ..."""
    for item_ in quiz:
        TrainingItem.objects.filter(pk=item_.pk).update(position=item_.position * 10)
    take_attempt(client, RIGHT_ANSWERS)
    assert TrainingAttempt.objects.get().status == TrainingAttempt.Status.PASSED
    answered = TrainingAnswer.objects.order_by("item__position")
    assert [a.item.position for a in answered] == [10, 20, 30, 40, 50]


def test_answering_a_practice_item_that_does_not_exist_is_refused(client, trainee):
    client.post(QUIZ)
    for number in (6, 0):
        response = client.post(item(number), RIGHT_ANSWERS[0])
        assert response.status_code == 404
        assert "There is no such practice item." in response.content.decode()
    response = client.get(item(6))
    assert (
        response.status_code == 404
        and "There is no such practice item." in response.content.decode()
    )
    assert counts() == (1, 0, 0)


def test_answering_after_failing_is_refused(client, trainee):
    take_attempt(client, [WRONG_ANSWER] * 5)
    take_attempt(client, [WRONG_ANSWER] * 5)
    before = counts()
    message = TrainingRefused.MESSAGES[ErrorCode.QUIZ_OVER]
    response = client.post(item(1), RIGHT_ANSWERS[0])
    assert response.status_code == 409 and message in response.content.decode()
    response = client.post(item(1), RIGHT_ANSWERS[0], **HX)
    assert response.status_code == 409 and message in response.content.decode()
    # Nor can a third attempt start.
    response = client.post(QUIZ, follow=True)
    assert message in response.content.decode()
    assert counts() == before


def test_answering_before_starting_an_attempt_is_refused(client, trainee):
    response = client.post(item(1), RIGHT_ANSWERS[0])
    assert response.status_code == 409
    assert TrainingRefused.MESSAGES[ErrorCode.QUIZ_NOT_STARTED] in response.content.decode()
    assert counts() == (0, 0, 0)


def test_an_incomplete_answer_gets_the_batches_messages_and_writes_nothing(client, trainee):
    client.post(QUIZ)
    response = client.post(item(1), {"coherent": "yes"})
    assert response.status_code == 422
    assert "Choose how much you agree with the statement." in response.content.decode()
    response = client.post(item(1), {"coherent": "no"})
    assert "Choose at least one error category." in response.content.decode()
    assert counts() == (1, 0, 0)


def test_starting_a_second_attempt_during_one_is_refused(client, trainee):
    client.post(QUIZ)
    response = client.post(QUIZ, follow=True)
    # Back to the attempt in progress, told why.
    assert TrainingRefused.MESSAGES[ErrorCode.QUIZ_IN_PROGRESS] in response.content.decode()
    assert response.redirect_chain[-1][0] == item(1)
    assert TrainingAttempt.objects.count() == 1


# --- the rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_right", "n_items", "pass_mark", "passes"),
    [(4, 5, 80, True), (3, 5, 80, False), (7, 9, 78, False), (7, 9, 77, True), (0, 0, 1, False)],
)
def test_the_score_passes_at_or_above_the_pass_mark_without_rounding(
    n_right, n_items, pass_mark, passes
):
    # 7/9 = 77.8 %: below 78, at or above 77.
    assert training_score_passes(n_right=n_right, n_items=n_items, pass_mark=pass_mark) is passes


@pytest.mark.parametrize(
    ("statuses", "outcome"),
    [
        ([], TrainingStatus.NOT_STARTED),
        (["in_progress"], TrainingStatus.IN_PROGRESS),
        (["failed"], TrainingStatus.NOT_STARTED),
        (["failed", "in_progress"], TrainingStatus.IN_PROGRESS),
        (["failed", "failed"], TrainingStatus.FAILED),
        (["failed", "passed"], TrainingStatus.PASSED),
    ],
)
def test_the_outcome_of_attempts(statuses, outcome):
    assert training_status(statuses=statuses, attempts_allowed=2) == outcome


def test_the_gate_costs_no_query_of_its_own(client, trainee, django_assert_num_queries):
    """The gate reads ``training_due`` with the annotator (one query, as before)."""
    with django_assert_num_queries(1):
        assert client.get("/s/pilot/done/").url == QUIZ


def test_the_outcome_of_an_annotator_of_a_study_without_a_quiz_is_none(open_study):
    annotator = annotator_ready_for_quiz(open_study)
    assert training_outcome(annotator=annotator) is None


def test_who_failed_the_quiz_counts_as_unable_to_get_work_in_the_progress_table(
    client, trainee, open_study
):
    def layperson_cells():
        progress = study_progress(study=open_study)
        group = open_study.groups.get(name="Layperson")
        return [
            progress.cell(stage_position=s.position, group_id=group.pk)
            for s in open_study.stages.all()
        ]

    before = layperson_cells()
    assert all(c.without_work == 0 for c in before)
    take_attempt(client, [WRONG_ANSWER] * 5)
    take_attempt(client, [WRONG_ANSWER] * 5)
    after = layperson_cells()
    assert all(c.without_work == 1 for c in after)
    # Nobody is left who can take the open slots: the invitations needed grow.
    assert [c.annotators_needed for c in after] > [c.annotators_needed for c in before]
