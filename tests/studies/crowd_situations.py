"""Crowd workers in the situations a join link refuses, for the refusal pages' tests
(the test client and the browser): each helper brings a worker there through the
pages and returns the link they come back with."""

from datetime import timedelta

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from studies.models import Annotator, Stage
from studies.services import consent_version_current
from tests.studies.questionnaire_helpers import post_data, screening
from tests.studies.services.test_crowd_joins import finish_stage, prolific
from tests.studies.training_fixtures import WRONG_ANSWER, quiz_add


def early_for_stage_2(study) -> str:
    """Finished stage 1 a day ago; stage 2's pause is longer."""
    Client().get(prolific(study, 1, "early", "early-1"))
    finish_stage(
        Annotator.objects.get(platform_participant_id="early"),
        when=timezone.now() - timedelta(days=1),
    )
    return prolific(study, 2, "early", "early-2")


def screened_out(study) -> str:
    """A screening answer ended their participation; back in a new session."""
    Stage.objects.filter(study=study, position=1).update(screened_out_code="OUT1")
    q = screening(study)
    client = Client()
    client.get(prolific(study, 1, "screened", "screened-1"))
    client.post(f"/s/{study.slug}/questionnaire/", post_data(q, {1: "No", 3: "1"}))
    return prolific(study, 1, "screened", "screened-2")


def failed_quiz(study) -> str:
    """Failed the practice quiz's one attempt; back in a new session."""
    Stage.objects.filter(study=study, position=1).update(screened_out_code="OUT1")
    items = quiz_add(study, attempts=1)
    client = Client()
    client.get(prolific(study, 1, "quizzed", "quizzed-1"))
    worker = Annotator.objects.get(platform_participant_id="quizzed")
    worker.consented_version = consent_version_current(study=study)
    worker.consented_at = worker.tutorial_completed_at = timezone.now()
    worker.save()
    assert client.post(f"/s/{study.slug}/training/").status_code == 302
    for number in range(1, len(items) + 1):
        url = reverse("studies:training_item", args=[study.slug, number])
        assert client.post(url, WRONG_ANSWER).status_code == 302
    return prolific(study, 1, "quizzed", "quizzed-2")
