"""A crowd worker who did some batches of a stage and can get no further batch now is
not kept waiting while the platform's clock runs: their part of the stage ends there,
paid with the stage's partial-completion code, and the next stage opens for them as
for anyone. The full export and the report's quality block show it."""

import csv
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from analysis.services import analysis_run_compute
from studies.exports import ExportOptions, export_csv_chunks
from studies.models import Annotator, Assignment, CrowdEntry, Stage, Study
from studies.services import annotators_create, assignment_claim, consent_version_current
from tests.analysis.report.test_quality import FAST
from tests.studies.questionnaire_helpers import after_stage, post_data
from tests.studies.services.test_crowd_joins import finish_stage, prolific

pytestmark = pytest.mark.usefixtures("empty_cache")


@pytest.fixture
def busy_study(loaded_study):
    """Open, two batches per annotator and stage, one annotator per batch and group
    (k = 1): three batches per stage, so two others holding one each leave none."""
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN,
        batches_per_stage=2,
        overlap_k=1,
        crowd_group=loaded_study.groups.get(name="Layperson"),
    )
    Stage.objects.filter(study=loaded_study, position=1).update(partial_completion_code="PART1")
    loaded_study.refresh_from_db()
    return loaded_study


def consented(annotator: Annotator) -> Annotator:
    annotator.consented_version = consent_version_current(study=annotator.study)
    annotator.consented_at = annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    return annotator


def others_hold_the_rest(study) -> None:
    """Two invited annotators of the same group each hold one of the two batches left."""
    for annotator in annotators_create(group=study.groups.get(name="Layperson"), count=2):
        assignment_claim(annotator=consented(annotator))


def worker_with_one_batch(client, study) -> Annotator:
    """A Prolific worker who joined stage 1 and submitted one of their two batches."""
    client.get(prolific(study, 1, "pid1", "se1"))
    worker = Annotator.objects.get(platform_participant_id="pid1")
    finish_stage(worker)
    return worker


def test_a_crowd_worker_with_no_batch_left_now_finishes_the_stage_with_the_partial_code(
    client, busy_study
):
    worker = worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/"  # ended: the page afresh
    page = client.get("/s/pilot/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "You did 1 of 2 batches in Stage 1." in text
    assert "https://app.prolific.com/submissions/complete?cc=PART1" in text
    assert "The next stage opens for you as for everyone who finished this one." in text
    assert "Please come back to this page later" not in text
    entry = CrowdEntry.objects.get(annotator=worker)
    assert entry.outcome == CrowdEntry.Outcome.PARTIAL and entry.returned_at is not None
    # Stage 1 is done for them; stage 2 waits its pause, as for anyone.
    assert "Stage 2</strong> opens for you on" in text
    # A batch coming free later does not reopen the stage, nor change the outcome.
    assert client.get("/s/pilot/").content.decode().count("cc=PART1") == 1
    assert CrowdEntry.objects.get(annotator=worker).outcome == CrowdEntry.Outcome.PARTIAL


def test_asking_for_a_batch_ends_the_part_too(client, busy_study):
    worker = worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    assert client.post("/s/pilot/start/")["Location"] == "/s/pilot/"
    assert CrowdEntry.objects.get(annotator=worker).outcome == CrowdEntry.Outcome.PARTIAL


def test_without_a_partial_code_the_worker_waits_as_before(client, busy_study):
    Stage.objects.filter(study=busy_study, position=1).update(partial_completion_code="")
    worker = worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    text = client.get("/s/pilot/").content.decode()
    assert "Please come back to this page later" in text
    assert CrowdEntry.objects.get(annotator=worker).outcome == ""


def test_invited_annotators_and_workers_without_a_batch_are_not_ended(
    client, client_factory, busy_study
):
    invited = consented(
        annotators_create(group=busy_study.groups.get(name="Layperson"), count=1)[0]
    )
    finish_stage(invited)
    # A crowd worker who joined but submitted nothing yet (nothing to pay as a part).
    newcomer = client_factory()
    newcomer.get(prolific(busy_study, 1, "pid2", "se2"))
    consented(Annotator.objects.get(platform_participant_id="pid2"))
    others_hold_the_rest(busy_study)
    client.get(f"/i/{invited.access_token}/")
    assert "Please come back to this page later" in client.get("/s/pilot/").content.decode()
    assert "Please come back to this page later" in newcomer.get("/s/pilot/").content.decode()
    assert list(CrowdEntry.objects.values_list("outcome", flat=True)) == [""]


def test_the_export_and_the_report_show_the_part_that_ended_early(client, busy_study):
    worker = worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    client.get("/s/pilot/", follow=True)
    text = "".join(export_csv_chunks(study=busy_study, options=ExportOptions(fmt="full")))
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    outcomes = {(r["annotator"], r["stage_position"], r["crowd_outcome"]) for r in rows}
    assert outcomes == {(worker.pseudonym, "1", "partial")}
    quality = analysis_run_compute(study=busy_study, parameters=FAST).result["quality"]
    assert quality["Layperson"][worker.pseudonym]["partial_stages"] == 1


def test_the_stages_questionnaire_comes_before_the_partial_code(client, busy_study):
    q = after_stage(busy_study, 1)
    worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/"  # the part ended: again
    page = client.get("/s/pilot/")
    assert page["Location"] == "/s/pilot/questionnaire/"
    assert b"PART1" not in client.get("/s/pilot/questionnaire/").content
    client.post("/s/pilot/questionnaire/", post_data(q, {1: "No", 2: "3"}))
    assert "cc=PART1" in client.get("/s/pilot/").content.decode()


def test_batches_held_past_their_deadline_are_released_before_ending_a_part(client, busy_study):
    """A claim would take a batch whose holder ran out of time: the part goes on."""
    worker = worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    past = timezone.now() - timedelta(hours=2)
    Assignment.objects.exclude(annotator=worker).update(
        assigned_at=past - timedelta(minutes=30), expires_at=past
    )
    page = client.get("/s/pilot/", follow=True).content.decode()
    assert "Start your next batch" in page and "PART1" not in page
    assert CrowdEntry.objects.get(annotator=worker).outcome == ""


def test_a_worker_whose_part_ended_is_told_so_from_another_browser(
    client, client_factory, busy_study
):
    worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    client.get("/s/pilot/", follow=True)
    other = client_factory().get(prolific(busy_study, 1, "pid1", "another-session"))
    assert other.status_code == 403
    assert "Your part of Stage 1 is finished" in other.content.decode()
