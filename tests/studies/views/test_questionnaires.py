"""Questionnaires in the annotator's way (the test client): screening before consent
for invited and crowd annotators, the end page of a screened-out person (only counts
kept), and a stage's questionnaire before the next stage and the completion code."""

import pytest
from django.core.cache import cache

from studies.models import (
    Annotator,
    CrowdEntry,
    QuestionAnswer,
    QuestionnaireResponse,
    ScreeningTally,
    Stage,
    Study,
)
from studies.services import annotators_create
from tests.studies.questionnaire_helpers import after_stage, post_data, screening
from tests.studies.services.test_crowd_joins import finish_stage, prolific


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN,
        batches_per_stage=1,
        crowd_group=loaded_study.groups.get(name="Layperson"),
    )
    Stage.objects.filter(study=loaded_study, position=1).update(
        completion_code="DONE1", screened_out_code="OUT1"
    )
    loaded_study.refresh_from_db()
    return loaded_study


def invited(client, study, group="Layperson") -> Annotator:
    annotator = annotators_create(group=study.groups.get(name=group), count=1)[0]
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def test_an_invited_annotator_answers_the_screening_before_the_information_sheet(
    client, open_study
):
    q = screening(open_study)
    annotator = invited(client, open_study)
    for page in ("/s/pilot/", "/s/pilot/consent/", "/s/pilot/tutorial/", "/s/pilot/done/"):
        assert client.get(page)["Location"] == "/s/pilot/questionnaire/", page
    page = client.get("/s/pilot/questionnaire/")
    assert page.status_code == 200
    assert b"Is English your first language?" in page.content
    response = client.post(
        "/s/pilot/questionnaire/",
        post_data(q, {1: "Yes", 2: ["Linguistics", "Neither"], 3: "4", 4: "  I type slowly. "}),
    )
    assert response["Location"] == "/s/pilot/questionnaire/"
    assert client.get("/s/pilot/questionnaire/")["Location"] == "/s/pilot/"
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/consent/"
    stored = QuestionnaireResponse.objects.get(annotator=annotator)
    assert not stored.screened_out
    answers = sorted(
        (a.question.position, a.choice.text if a.choice else None, a.scale, a.text)
        for a in QuestionAnswer.objects.filter(response=stored)
    )
    assert answers == [
        (1, "Yes", None, ""),
        (2, "Linguistics", None, ""),
        (2, "Neither", None, ""),
        (3, None, 4, ""),
        (4, None, None, "I type slowly."),
    ]
    assert not ScreeningTally.objects.exists()


def test_an_invited_annotator_screened_out_keeps_no_answers_only_counts(client, open_study):
    q = screening(open_study)
    annotator = invited(client, open_study)
    response = client.post(
        "/s/pilot/questionnaire/", post_data(q, {1: "No", 2: ["Counselling"], 3: "2", 4: "hi"})
    )
    end = client.get(response["Location"])
    assert b"Thank you for your interest" in end.content
    assert b"We have not kept your answers" in end.content
    assert b"crowd-return" not in end.content  # invited: no platform to return to
    response = QuestionnaireResponse.objects.get(annotator=annotator)
    assert response.screened_out
    assert not QuestionAnswer.objects.exists()
    tallies = {
        (t.question.position if t.question else None, t.answer): t.count
        for t in ScreeningTally.objects.select_related("question")
    }
    ids = {c.text: c.pk for c in q.questions.get(position=1).choices.all()}
    counselling = q.questions.get(position=2).choices.get(text="Counselling").pk
    assert tallies == {
        (None, "people"): 1,
        (1, f"choice:{ids['No']}"): 1,
        (2, f"choice:{counselling}"): 1,
        (3, "scale:2"): 1,
        (4, "text"): 1,
        **{(position, "answered"): 1 for position in (1, 2, 3, 4)},
    }
    # Every page ends at the end page; consent cannot be given; declining removes nothing.
    for page in ("/s/pilot/", "/s/pilot/consent/", "/s/pilot/b/1/"):
        assert client.get(page)["Location"] == "/s/pilot/questionnaire/", page
    client.post("/s/pilot/consent/", {"agree": "on"})
    client.post("/s/pilot/consent/decline/")
    annotator.refresh_from_db()
    assert annotator.consented_at is None
    # A second screened-out person adds to the counts.
    other = invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "2"}))
    assert QuestionnaireResponse.objects.get(annotator=other).screened_out
    assert ScreeningTally.objects.get(question=None).count == 2
    assert ScreeningTally.objects.get(answer="scale:2").count == 2
    assert ScreeningTally.objects.get(answer="text").count == 1


def test_a_crowd_worker_screened_out_gets_the_stages_screened_out_return(client, open_study):
    q = screening(open_study)
    assert client.get(prolific(open_study, 1, "pid1", "se1"))["Location"] == "/s/pilot/"
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/questionnaire/"
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "1"}))
    end = client.get("/s/pilot/questionnaire/")
    assert b"https://app.prolific.com/submissions/complete?cc=OUT1" in end.content
    entry = CrowdEntry.objects.get()
    assert entry.outcome == CrowdEntry.Outcome.SCREENED_OUT
    # The record kept: a pseudonym, the platform id (so the screening cannot be retaken),
    # the entry's outcome; no answer.
    annotator = Annotator.objects.get()
    assert (annotator.pseudonym, annotator.consented_at) == ("Layperson 1", None)
    assert not QuestionAnswer.objects.exists()
    # Coming back through the link: the same end page, the same return.
    assert client.get(prolific(open_study, 1, "pid1", "se1"))["Location"] == "/s/pilot/"
    again = client.get(client.get("/s/pilot/")["Location"])
    assert b"cc=OUT1" in again.content
    assert QuestionnaireResponse.objects.count() == 1


def test_a_crowd_worker_screened_in_goes_on_to_the_information_sheet(client, open_study):
    q = screening(open_study)
    client.get(prolific(open_study, 1, "pid2", "se2"))
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "Yes", 3: "3"}))
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/consent/"
    assert CrowdEntry.objects.get().outcome == ""


def test_consented_annotators_are_not_screened_by_a_questionnaire_added_later(client, open_study):
    annotator = invited(client, open_study)
    finish_stage(annotator)
    screening(open_study)
    assert client.get("/s/pilot/").status_code == 200


def test_the_stage_questionnaire_comes_before_the_next_stage_and_the_completion_code(
    client, open_study
):
    q = after_stage(open_study, 1)
    client.get(prolific(open_study, 1, "pid3", "se3"))
    annotator = Annotator.objects.get()
    finish_stage(annotator)
    for page in ("/s/pilot/", "/s/pilot/done/"):
        assert client.get(page)["Location"] == "/s/pilot/questionnaire/", page
    assert client.post("/s/pilot/start/")["Location"] == "/s/pilot/questionnaire/"
    page = client.get("/s/pilot/questionnaire/")
    assert b"Did you remember any response candidate?" in page.content
    assert b"DONE1" not in page.content
    missing = client.post("/s/pilot/questionnaire/", post_data(q, {1: "No"}))
    assert missing.status_code == 422
    assert b"Please answer this question." in missing.content
    assert not QuestionnaireResponse.objects.exists()
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 2: "5"}))
    home = client.get("/s/pilot/")
    assert home.status_code == 200
    assert b"DONE1" in home.content  # the completion code, now
    assert QuestionAnswer.objects.filter(response__annotator=annotator).count() == 2


def test_a_stage_questionnaire_is_not_asked_before_the_stage_is_finished(client, open_study):
    after_stage(open_study, 1)
    annotator = invited(client, open_study)
    finish_stage(annotator)  # consents and finishes stage 1 (its one batch)
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/questionnaire/"
    other = invited(client, open_study, group="Expert")
    other.consented_version = annotator.consented_version
    other.consented_at = other.tutorial_completed_at = annotator.consented_at
    other.save()
    assert client.get("/s/pilot/").status_code == 200


def test_a_stale_page_and_a_second_answer_are_refused_with_nothing_written(client, open_study):
    q = screening(open_study)
    invited(client, open_study)
    stale = client.post(
        "/s/pilot/questionnaire/", {**post_data(q, {1: "Yes", 3: "3"}), "questionnaire": "0"}
    )
    assert stale.status_code == 422
    assert b"This page was out of date, so nothing was saved" in stale.content
    assert not QuestionnaireResponse.objects.exists()
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "Yes", 3: "3"}))
    assert QuestionnaireResponse.objects.count() == 1


def test_people_screened_out_are_not_counted_as_able_to_take_batches(client, open_study):
    from studies.selectors import study_progress

    q = screening(open_study)
    group = open_study.groups.get(name="Layperson")

    def capacity():
        cell = study_progress(study=open_study).cell(stage_position=1, group_id=group.pk)
        return cell.capacity_left, cell.annotators_needed

    invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "Yes", 3: "3"}))
    before = capacity()
    invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "3"}))
    # m = 1 batch each: the one screened in can take one; 3 batches × k = 3 need 9 slots.
    assert capacity() == before == (1, 8)


def test_an_mturk_worker_screened_out_posts_the_screened_out_outcome_to_mturk(client, open_study):
    from tests.studies.services.test_crowd_joins import mturk

    q = screening(open_study)
    client.get(mturk(open_study, 1, "W1", "A1"))
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "2"}))
    end = client.get("/s/pilot/questionnaire/")
    page = end.content.decode()
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in page
    assert 'name="outcome" value="screened_out"' in page
    assert 'name="code" value="OUT1"' in page
    assert "https://www.mturk.com" in end["Content-Security-Policy"]
    assert CrowdEntry.objects.get().outcome == CrowdEntry.Outcome.SCREENED_OUT


def test_a_screened_out_person_keeps_only_the_day_and_the_platform_id(client, open_study):
    from datetime import UTC

    q = screening(open_study)
    client.get(prolific(open_study, 1, "pid9", "se9"))
    Annotator.objects.update(email="someone@example.org")
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "1"}))
    annotator = Annotator.objects.get()
    assert annotator.platform_participant_id == "pid9"  # the screening cannot be retaken
    assert annotator.email == "" and annotator.platform_data == {}
    # A fresh random token, as the purge gives: the old link is gone and none is guessable.
    assert annotator.access_token.startswith("purged-") and len(annotator.access_token) > 20
    assert annotator.last_seen_at is None
    submitted = QuestionnaireResponse.objects.get().submitted_at.astimezone(UTC)
    assert (submitted.hour, submitted.minute, submitted.second, submitted.microsecond) == (
        0,
        0,
        0,
        0,
    )
    # The end page and the return still work, from the same browser.
    assert b"cc=OUT1" in client.get("/s/pilot/questionnaire/").content
    # The cleared link opens nothing.
    from django.test import Client

    assert Client().get(f"/i/{annotator.access_token}/").status_code == 404


def test_a_screened_out_worker_back_in_a_new_session_is_told_they_were_screened_out(
    client, open_study
):
    from django.test import Client

    q = screening(open_study)
    client.get(prolific(open_study, 1, "pid7", "se7"))
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "1"}))
    again = Client().get(prolific(open_study, 1, "pid7", "se8"))
    page = again.content.decode()
    assert "ended your participation" in page
    assert "You have started" not in page
    assert CrowdEntry.objects.count() == 1 and Annotator.objects.count() == 1


def test_the_annotator_admin_shows_and_filters_who_was_screened_out(client, open_study):
    from tests.factories import StaffUserFactory

    q = screening(open_study)
    kept = invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "Yes", 3: "3"}))
    out = invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 3: "3"}))
    client.force_login(StaffUserFactory())
    page = client.get("/admin/studies/annotator/?screened_out=yes").content.decode()
    assert out.pseudonym in page and kept.pseudonym not in page
    page = client.get("/admin/studies/annotator/?screened_out=no").content.decode()
    assert kept.pseudonym in page and out.pseudonym not in page
    assert "screened out" in client.get("/admin/studies/annotator/").content.decode()


@pytest.mark.parametrize("entry", ["invitation", "prolific"])
def test_screening_then_consent_tutorial_and_quiz_in_that_order(client, open_study, entry):
    """A study with a screening questionnaire and a training quiz: every page leads to
    the next step in the one order (screening, consent, tutorial, quiz, batches), and
    no page sends back to a step already taken."""
    from tests.studies.training_fixtures import RIGHT_ANSWERS, quiz_add

    q = screening(open_study)
    quiz_add(open_study)
    if entry == "invitation":
        invited(client, open_study)
    else:
        client.get(prolific(open_study, 1, "pid9", "se9"))
    pages = ("/s/pilot/", "/s/pilot/consent/", "/s/pilot/tutorial/", "/s/pilot/training/")
    for page in (*pages, "/s/pilot/training/1/", "/s/pilot/done/"):
        assert client.get(page)["Location"] == "/s/pilot/questionnaire/", page
    assert client.get("/s/pilot/questionnaire/").status_code == 200
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "Yes", 3: "3"}))
    assert QuestionnaireResponse.objects.get().screened_out is False
    assert client.get("/s/pilot/questionnaire/")["Location"] == "/s/pilot/"
    for page in ("/s/pilot/", "/s/pilot/tutorial/", "/s/pilot/training/"):
        assert client.get(page)["Location"] == "/s/pilot/consent/", page
    client.post(
        "/s/pilot/consent/", {"agree": "on", "version": open_study.consent_versions.get().pk}
    )
    for page in ("/s/pilot/", "/s/pilot/training/", "/s/pilot/b/1/"):
        assert client.get(page)["Location"] == "/s/pilot/tutorial/", page
    client.post("/s/pilot/tutorial/")
    for page in ("/s/pilot/", "/s/pilot/done/"):
        assert client.get(page)["Location"] == "/s/pilot/training/", page
    assert client.get("/s/pilot/training/").status_code == 200
    client.post("/s/pilot/training/")
    for number, answer in enumerate(RIGHT_ANSWERS, start=1):
        client.post(f"/s/pilot/training/{number}/", answer)
    assert client.get("/s/pilot/").status_code == 200
    start = client.post("/s/pilot/start/")
    assert start["Location"].startswith("/s/pilot/b/")
