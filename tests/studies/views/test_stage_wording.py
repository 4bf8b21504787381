"""A stage's own wording and tutorial: each empty field is the study's
(``stage_wording``, ``stage_tutorial``); a stage with a tutorial of its own is read
before its first batch (``stage_tutorial_due``)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from studies.errors import ErrorCode
from studies.models import (
    Assignment,
    Judgement,
    Reflection,
    Stage,
    Study,
    TutorialReading,
    stage_tutorial,
    stage_wording,
)
from studies.services import (
    NoWorkAvailable,
    annotator_complete_tutorial,
    annotators_create,
    assignment_claim,
    consent_version_current,
)
from tests.studies.training_fixtures import annotator_ready_for_quiz, quiz_add
from tests.studies.views.test_annotate import item_url


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN,
        batches_per_stage=1,
        tutorial_intro="How the study works.",
        tutorial_example_notes="Notes on the study's example.",
    )
    Stage.objects.filter(study=loaded_study, position=2).update(min_wait=timedelta(0))
    loaded_study.refresh_from_db()
    return loaded_study


@pytest.fixture
def ready(client, open_study):
    """Signed in, consented, the first tutorial confirmed."""
    annotator = annotators_create(group=open_study.groups.get(name="Layperson"), count=1)[0]
    annotator.consented_version = consent_version_current(study=open_study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def stage(study, position) -> Stage:
    return study.stages.get(position=position)


def finish_stage_1(annotator) -> None:
    """One batch (m = 1) claimed, answered and submitted: stage 2 opens at once."""
    assignment = assignment_claim(annotator=annotator)
    assert assignment.stage.position == 1
    Judgement.objects.bulk_create(
        Judgement(assignment=assignment, reflection_id=rid, coherent=True, empathy=3)
        for rid in assignment.order
    )
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.SUBMITTED, submitted_at=timezone.now()
    )


def test_each_empty_field_of_a_stage_is_the_study_s(open_study):
    first, second = stage(open_study, 1), stage(open_study, 2)
    second.coherence_question = "Does it fit the conversation?"
    second.tutorial_intro = "Now tick what is wrong."
    assert stage_wording(open_study, first).question == open_study.coherence_question
    assert stage_wording(open_study, first).description_prompt == ""
    assert stage_wording(open_study, second).question == "Does it fit the conversation?"
    # The same rule on the hot path's row of a stage (a mapping of its fields).
    row = {"coherence_question": "", "description_prompt": "Say why."}
    assert stage_wording(open_study, row).question == open_study.coherence_question
    assert stage_wording(open_study, row).description_prompt == "Say why."
    tutorial = stage_tutorial(open_study, second)
    assert tutorial.intro == "Now tick what is wrong."
    assert tutorial.example_notes == "Notes on the study's example."
    assert tutorial.example_turns == open_study.tutorial_example_turns
    assert stage_tutorial(open_study, None).intro == "How the study works."
    assert not first.has_own_tutorial and second.has_own_tutorial


def test_the_item_panel_asks_the_stage_s_question_and_prompt(client, ready, open_study):
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(
        coherence_question="Does this reply fit the conversation?",
        description_prompt="Tell us what does not fit.",
        no_answer=Stage.NoAnswer.BOTH,
    )
    assignment = assignment_claim(annotator=ready)
    page = client.get(item_url(assignment, 1)).content.decode()
    assert "Does this reply fit the conversation?" in page
    assert open_study.coherence_question not in page
    # The description is optional after the categories: the page says so.
    assert "Tell us what does not fit. (optional)" in page


def test_without_wording_of_its_own_the_panel_reads_as_before(client, ready, open_study):
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(no_answer=Stage.NoAnswer.FREE_TEXT)
    assignment = assignment_claim(annotator=ready)
    page = client.get(item_url(assignment, 1)).content.decode()
    assert open_study.coherence_question in page
    assert "In your own words, what is wrong with it?" in page and "(optional)" not in page


def test_the_study_s_prompt_applies_to_stages_without_their_own(client, ready, open_study):
    Study.objects.filter(pk=open_study.pk).update(description_prompt="What went wrong?")
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(no_answer=Stage.NoAnswer.FREE_TEXT)
    assignment = assignment_claim(annotator=ready)
    page = client.get(item_url(assignment, 1)).content.decode()
    assert "What went wrong?" in page and "In your own words" not in page


def test_a_stage_with_its_own_tutorial_is_read_before_its_first_batch(client, ready, open_study):
    second = stage(open_study, 2)
    Stage.objects.filter(pk=second.pk).update(
        tutorial_intro="In this stage, tick every kind of problem you see."
    )
    finish_stage_1(ready)
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/tutorial/"
    page = client.get("/s/pilot/tutorial/").content.decode()
    assert "in Stage 2" in page and "tick every kind of problem you see" in page
    assert "How the study works." not in page  # the stage's own introduction
    assert "Notes on the study&#x27;s example." in page  # the study's, not replaced
    assert "I have read the tutorial" in page
    # Claiming first is refused and writes nothing.
    response = client.post("/s/pilot/start/", follow=True)
    assert response.redirect_chain[-1][0] == "/s/pilot/tutorial/"
    assert "Please read how Stage 2 works first." in response.content.decode()
    assert not Assignment.objects.filter(annotator=ready, stage=second).exists()
    assert client.post("/s/pilot/tutorial/")["Location"] == "/s/pilot/"
    reading = TutorialReading.objects.get(annotator=ready)
    assert reading.stage == second
    assert client.get("/s/pilot/").status_code == 200
    client.post("/s/pilot/start/")
    assert Assignment.objects.filter(annotator=ready, stage=second).exists()
    # Reopened later, the tutorial asks for nothing more.
    later = client.get("/s/pilot/tutorial/").content.decode()
    assert "Back to your batches" in later and "I have read the tutorial" not in later


def test_a_stage_tutorial_is_not_asked_while_the_stage_waits(client, ready, open_study):
    Stage.objects.filter(pk=stage(open_study, 2).pk).update(
        tutorial_intro="Stage 2's own tutorial.", min_wait=timedelta(days=3)
    )
    finish_stage_1(ready)
    response = client.get("/s/pilot/")
    assert response.status_code == 200 and "opens for you on" in response.content.decode()


def test_the_first_tutorial_of_a_stage_with_its_own_counts_for_it(client, open_study):
    """Stage 1's own tutorial is the one every newcomer confirms: it is not asked
    twice."""
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(tutorial_intro="Stage 1 works so.")
    annotator = annotators_create(group=open_study.groups.get(name="Expert"), count=1)[0]
    annotator.consented_version = consent_version_current(study=open_study)
    annotator.consented_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/tutorial/"
    page = client.get("/s/pilot/tutorial/").content.decode()
    assert "Stage 1 works so." in page and "in Stage 1" not in page
    client.post("/s/pilot/tutorial/")
    assert TutorialReading.objects.filter(annotator=annotator, stage__position=1).exists()
    assert client.get("/s/pilot/").status_code == 200


def test_the_attention_check_is_still_judged_with_the_stage_s_question(client, ready, open_study):
    """Every candidate of a batch, the attention check included, is asked the stage's
    question (the check must look like the others)."""
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(coherence_question="Fits?")
    assignment = assignment_claim(annotator=ready)
    check = next(
        n
        for n, rid in enumerate(assignment.order, start=1)
        if Reflection.objects.get(pk=rid).kind == Reflection.Kind.ATTENTION_CHECK
    )
    assert "<legend>Fits?</legend>" in client.get(item_url(assignment, check)).content.decode()


def test_the_practice_quiz_asks_as_the_first_stage_does(client, open_study):
    """The quiz comes before the first stage's batches: it words its question as that
    stage does."""
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(coherence_question="Fits?")
    quiz_add(open_study)
    annotator = annotator_ready_for_quiz(open_study)
    client.get(f"/i/{annotator.access_token}/")
    assert client.post("/s/pilot/training/").status_code == 302
    page = client.get("/s/pilot/training/1/").content.decode()
    assert "<legend>Fits?</legend>" in page


def test_the_claim_itself_refuses_a_stage_whose_tutorial_is_unread(ready, open_study):
    """Every way to a batch (a stale tab's Start, the API) meets the rule in the claim."""
    Stage.objects.filter(pk=stage(open_study, 2).pk).update(tutorial_intro="Stage 2 works so.")
    finish_stage_1(ready)
    with pytest.raises(NoWorkAvailable) as refused:
        assignment_claim(annotator=ready)
    assert refused.value.code == ErrorCode.STAGE_TUTORIAL_UNREAD
    assert str(refused.value) == "Please read how Stage 2 works first."
    assert not Assignment.objects.filter(annotator=ready, stage__position=2).exists()
    annotator_complete_tutorial(annotator=ready, stage=stage(open_study, 2))
    assert assignment_claim(annotator=ready).stage.position == 2


def test_a_tutorial_given_to_stage_1_later_is_still_read(client, open_study):
    """Confirming the study's tutorial records no reading for a stage without one of its
    own: a researcher who gives stage 1 its own tutorial later reaches everyone."""
    annotator = annotators_create(group=open_study.groups.get(name="Expert"), count=1)[0]
    annotator.consented_version = consent_version_current(study=open_study)
    annotator.consented_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    client.post("/s/pilot/tutorial/")
    assert not TutorialReading.objects.filter(annotator=annotator).exists()
    Stage.objects.filter(pk=stage(open_study, 1).pk).update(tutorial_intro="Stage 1, anew.")
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/tutorial/"
