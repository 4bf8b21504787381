"""Per-stage, per-platform returns (studies.services.crowd): the Prolific completion
URL with the stage's code, the MTurk external-submit form, the first outcome standing."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from studies.models import Annotator, CrowdEntry, Stage
from studies.services import annotators_create
from studies.services.crowd import (
    PROLIFIC_COMPLETE_URL,
    crowd_entry_close,
    crowd_return,
)


@pytest.fixture
def stages(study):
    first, second = study.stages.order_by("position")
    Stage.objects.filter(pk=first.pk).update(completion_code="FIRST1", screened_out_code="OUT1")
    Stage.objects.filter(pk=second.pk).update(completion_code="SECOND2", screened_out_code="")
    first.refresh_from_db()
    second.refresh_from_db()
    return first, second


def crowd_worker(study, platform: str, worker: str) -> Annotator:
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    annotator.platform, annotator.platform_participant_id = platform, worker
    annotator.save()
    return annotator


def test_each_stage_has_its_own_join_key_and_completion_code(study):
    first, second = study.stages.order_by("position")
    assert first.join_key != second.join_key
    assert first.completion_code != second.completion_code
    assert len(first.completion_code) == 8 and first.screened_out_code == ""


def test_prolific_gets_the_completion_url_with_the_stages_own_code(study, stages):
    first, second = stages
    worker = crowd_worker(study, "prolific", "pid1")
    for stage in stages:
        CrowdEntry.objects.create(
            annotator=worker, stage=stage, platform="prolific", session_id="s"
        )
    back = crowd_return(annotator=worker, stage=first, outcome="completed")
    assert (back.code, back.url, back.posts) == (
        "FIRST1",
        f"{PROLIFIC_COMPLETE_URL}?cc=FIRST1",
        False,
    )
    assert back.url == "https://app.prolific.com/submissions/complete?cc=FIRST1"
    later = crowd_return(annotator=worker, stage=second, outcome="completed")
    assert later.url.endswith("?cc=SECOND2") and later.stage_position == 2
    screened = crowd_return(annotator=worker, stage=first, outcome="screened_out")
    assert (screened.code, screened.url) == ("OUT1", f"{PROLIFIC_COMPLETE_URL}?cc=OUT1")
    # No screened-out code: nothing to follow; the worker is asked to return the study.
    no_code = crowd_return(annotator=worker, stage=second, outcome="screened_out")
    assert (no_code.code, no_code.url, no_code.posts) == ("", "", False)
    page = render_to_string("studies/annotate/_crowd_return.html", {"back": no_code})
    assert "go back to Prolific and return the study there" in page


@pytest.mark.parametrize(
    ("submit_to", "action"),
    [
        ("https://www.mturk.com", "https://www.mturk.com/mturk/externalSubmit"),
        ("https://workersandbox.mturk.com", "https://workersandbox.mturk.com/mturk/externalSubmit"),
    ],
)
def test_mturk_posts_the_assignment_back_where_the_hit_said(study, stages, submit_to, action):
    first, _ = stages
    worker = crowd_worker(study, "mturk", "W1")
    CrowdEntry.objects.create(
        annotator=worker,
        stage=first,
        platform="mturk",
        session_id="ASSIGN1",
        platform_study_id="HIT1",
        submit_to=submit_to,
    )
    back = crowd_return(annotator=worker, stage=first, outcome="completed")
    assert back.posts and back.url == action and back.form_origin == submit_to
    assert dict(back.fields) == {
        "assignmentId": "ASSIGN1",
        "outcome": "completed",
        "stage": "1",
        "code": "FIRST1",
    }
    assert back.platform_name == "MTurk"
    assert back.task_name == "HIT"


def test_invited_annotators_and_stages_entered_otherwise_get_no_return(study, stages):
    first, second = stages
    invited = annotators_create(group=study.groups.get(name="Expert"), count=1)[0]
    assert crowd_return(annotator=invited, stage=first, outcome="completed") is None
    worker = crowd_worker(study, "prolific", "pid2")
    CrowdEntry.objects.create(annotator=worker, stage=first, platform="prolific")
    assert crowd_return(annotator=worker, stage=second, outcome="completed") is None
    assert crowd_entry_close(annotator=worker, stage=second, outcome="completed") is None


def test_the_first_outcome_stands(study, stages):
    first, _ = stages
    worker = crowd_worker(study, "prolific", "pid3")
    entry = CrowdEntry.objects.create(annotator=worker, stage=first, platform="prolific")
    when = timezone.now() - timedelta(minutes=5)
    back = crowd_entry_close(annotator=worker, stage=first, outcome="completed", now=when)
    assert back.code == "FIRST1"
    again = crowd_entry_close(annotator=worker, stage=first, outcome="screened_out")
    assert (again.outcome, again.code) == ("completed", "FIRST1")
    entry.refresh_from_db()
    assert (entry.outcome, entry.returned_at) == ("completed", when)


def test_an_unknown_outcome_is_refused_and_writes_nothing(study, stages):
    from django.core.exceptions import ValidationError

    first, _ = stages
    worker = crowd_worker(study, "prolific", "pid4")
    entry = CrowdEntry.objects.create(annotator=worker, stage=first, platform="prolific")
    with pytest.raises(ValidationError, match="Unknown outcome"):
        crowd_entry_close(annotator=worker, stage=first, outcome="paid")
    entry.refresh_from_db()
    assert (entry.outcome, entry.returned_at) == ("", None)


@pytest.mark.parametrize(
    ("changes", "constraint"),
    [
        ({"join_key": "has space"}, "stage_join_key_format"),
        ({"completion_code": "", "screened_out_code": "X"}, "stage_completion_code_format"),
        ({"screened_out_code": "a/b"}, "stage_screened_out_code_format"),
        ({"completion_code": "SAME", "screened_out_code": "SAME"}, "stage_codes_differ"),
    ],
)
def test_the_database_refuses_malformed_stage_codes(study, changes, constraint):
    stage = study.stages.first()
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        Stage.objects.filter(pk=stage.pk).update(**changes)


def test_the_database_refuses_a_shared_join_key_and_a_non_mturk_submit_target(study):
    first, second = study.stages.order_by("position")
    with pytest.raises(IntegrityError), transaction.atomic():
        Stage.objects.filter(pk=second.pk).update(join_key=first.join_key)
    worker = crowd_worker(study, "prolific", "pid5")
    with pytest.raises(IntegrityError, match="crowd_entry_submit_to_mturk"), transaction.atomic():
        CrowdEntry.objects.create(
            annotator=worker, stage=first, platform="prolific", submit_to="https://www.mturk.com"
        )


def test_personal_fields_are_declared_for_the_purge():
    for model in (Annotator, CrowdEntry):
        for name in model.PERSONAL_FIELDS:
            field = model._meta.get_field(name)
            # A column that must stay filled (the unique invitation token) is overwritten
            # with a marker by the purge instead of emptied (studies.personal_data).
            assert field.blank or field.unique, (model, name)
    assert "platform_participant_id" in Annotator.PERSONAL_FIELDS
    assert set(CrowdEntry.PERSONAL_FIELDS) == {"session_id", "platform_study_id"}
