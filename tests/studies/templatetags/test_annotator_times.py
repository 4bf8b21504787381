"""Times shown to annotators outside the home page are in their own time zone too: a
``<time data-local>`` element, and ``static/js/times.js`` on the page."""

import re
from datetime import timedelta

from django.utils import timezone

from studies.models import Annotator, Assignment, Judgement, Stage
from studies.services import assignment_claim
from studies.times import time_rounded_up
from tests.studies.services.test_crowd_joins import finish_stage, prolific, snapshot
from tests.studies.views.test_annotate import annotator, open_study, ready  # noqa: F401 (fixtures)

LOCAL_TIME = re.compile(r'<time datetime="([0-9T:Z-]+)" data-local>[^<]+ UTC</time>')


def test_the_refusal_page_shows_the_unlock_time_in_the_workers_zone(
    client, crowd_study, empty_cache
):
    client.get(prolific(crowd_study, 1, "p1", "first"))
    submitted = timezone.now() - timedelta(hours=1)
    finish_stage(Annotator.objects.get(), when=submitted)
    before = snapshot()
    response = client.get(prolific(crowd_study, 2, "p1", "second"))
    page = response.content.decode()
    assert response.status_code == 403 and "Stage 2 opens for you at" in page
    unlocks = time_rounded_up(submitted + stage_wait(crowd_study))
    assert LOCAL_TIME.search(page).group(1) == unlocks.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "js/times.js" in page
    assert snapshot() == before


def stage_wait(study):
    return Stage.objects.get(study=study, position=2).min_wait


def test_the_stage_locked_message_shows_the_unlock_time_in_the_annotators_zone(client, request):
    worker = request.getfixturevalue("ready")
    Stage.objects.filter(study=worker.study, position=2).update(min_wait=timedelta(days=3))
    now = timezone.now()
    for _ in range(2):
        a = assignment_claim(annotator=worker, now=now)
        Judgement.objects.bulk_create(
            Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=3) for rid in a.order
        )
        Assignment.objects.filter(pk=a.pk).update(status="submitted", submitted_at=now)
    page = client.post("/s/pilot/start/", follow=True).content.decode()
    message = re.search(r'<li class="message[^"]*">(.*?)</li>', page).group(1)
    assert message.startswith("Stage 2 opens for you at <time datetime=")
    assert LOCAL_TIME.search(message)
    assert "js/times.js" in page
    assert Assignment.objects.filter(annotator=worker).count() == 2
