import pytest
from django.core.exceptions import ValidationError

from analysis.models import AnalysisRun
from analysis.services import (
    analysis_parameters_clean,
    analysis_run_enqueue,
    analysis_run_execute,
    analysis_run_progress,
    analysis_run_request_auto,
    analysis_runs_recover,
)


def test_parameters_get_defaults_and_sorted_sources():
    params = analysis_parameters_clean({"excluded_sources": ["BART", "Alpha", "BART"]})
    assert params == {
        "excluded_sources": ["Alpha", "BART"],
        "include_expired": False,
        "bootstrap_resamples": 1000,
        "seed": 0,
    }


@pytest.mark.parametrize(
    ("parameters", "field", "message"),
    [
        ({"colour": "red"}, "parameters", "Unknown parameters: colour."),
        ({"excluded_sources": "BART"}, "excluded_sources", "Give a list of source names."),
        ({"include_expired": "yes"}, "include_expired", "Must be true or false."),
        ({"bootstrap_resamples": -1}, "bootstrap_resamples", "Must be a whole number, 0 or more."),
        ({"seed": True}, "seed", "Must be a whole number, 0 or more."),
        ({"bootstrap_resamples": 10_001}, "bootstrap_resamples", "At most 10,000 resamples."),
    ],
)
def test_bad_parameters_are_rejected_with_a_message(parameters, field, message):
    with pytest.raises(ValidationError) as info:
        analysis_parameters_clean(parameters)
    assert info.value.message_dict == {field: [message]}


def test_execute_stores_an_empty_report_for_a_study_without_judgements(loaded_study):
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    run = analysis_run_execute(run_id=run.pk)
    assert run.status == AnalysisRun.Status.DONE
    assert run.result["n_judgements"] == 0
    assert run.result["groups"] == {}
    assert run.result["study"] == "pilot"


def test_execute_is_idempotent_for_a_finished_run(loaded_study):
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    first = analysis_run_execute(run_id=run.pk)
    second = analysis_run_execute(run_id=run.pk)
    assert second.finished_at == first.finished_at
    assert AnalysisRun.objects.count() == 1


def test_execute_records_the_error_of_a_failing_run(loaded_study, monkeypatch):
    def broken(**kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("analysis.services.report_build", broken)
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    run = analysis_run_execute(run_id=run.pk)
    assert run.status == AnalysisRun.Status.FAILED
    assert run.error == "ZeroDivisionError: division by zero"
    assert run.finished_at is not None


def test_execute_of_a_deleted_run_does_nothing(db):
    assert analysis_run_execute(run_id=987654) is None


# --------------------------------------------------------------------------- triggers


def _auto_runs(study):
    return AnalysisRun.objects.filter(study=study, trigger=AnalysisRun.Trigger.AUTO)


def test_submissions_ask_for_one_debounced_automatic_run(
    loaded_study, settings, django_capture_on_commit_callbacks, monkeypatch
):
    from studies.models import Assignment
    from tests.conftest import annotate_study

    settings.ANALYSIS_AUTO_RUN = True
    settings.ANALYSIS_AUTO_DELAY = 120
    sent = []
    monkeypatch.setattr(
        "analysis.tasks.analysis_run_task.apply_async",
        lambda args, countdown=None: sent.append((args, countdown)),
    )
    with django_capture_on_commit_callbacks(execute=True):
        annotate_study(loaded_study)
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 36
    (run,) = _auto_runs(loaded_study)
    assert run.status == AnalysisRun.Status.QUEUED
    assert sent == [((run.pk,), 120)]
    assert run.dispatched_at is not None

    # Once that run has started, the next submission queues a fresh one.
    AnalysisRun.objects.filter(pk=run.pk).update(status=AnalysisRun.Status.RUNNING)
    analysis_run_request_auto(study_id=loaded_study.pk)
    assert _auto_runs(loaded_study).filter(status=AnalysisRun.Status.QUEUED).count() == 1


def test_automatic_runs_are_off_when_the_setting_is(loaded_study, settings):
    settings.ANALYSIS_AUTO_RUN = False
    assert analysis_run_request_auto(study_id=loaded_study.pk) is None
    assert not AnalysisRun.objects.exists()


def test_the_database_refuses_a_second_waiting_automatic_run(loaded_study):
    from django.db import IntegrityError, transaction

    AnalysisRun.objects.create(study=loaded_study, trigger=AnalysisRun.Trigger.AUTO)
    with pytest.raises(IntegrityError), transaction.atomic():
        AnalysisRun.objects.create(study=loaded_study, trigger=AnalysisRun.Trigger.AUTO)
    # Manual runs are not debounced.
    AnalysisRun.objects.create(study=loaded_study)
    AnalysisRun.objects.create(study=loaded_study)
    assert AnalysisRun.objects.count() == 3


def test_a_run_the_queue_refused_stays_queued_and_is_sent_later(
    loaded_study, monkeypatch, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone
    from kombu.exceptions import OperationalError

    def down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("analysis.tasks.analysis_run_task.apply_async", down)
    with django_capture_on_commit_callbacks(execute=True):
        run = analysis_run_enqueue(study=loaded_study)
    run.refresh_from_db()
    assert (run.status, run.dispatched_at) == (AnalysisRun.Status.QUEUED, None)

    sent = []
    monkeypatch.setattr(
        "analysis.tasks.analysis_run_task.apply_async",
        lambda args, countdown=None: sent.append(args),
    )
    # Too recent: left alone (it may still be on its way).
    assert analysis_runs_recover()["dispatched"] == 0
    later = timezone.now() + timedelta(minutes=10)
    assert analysis_runs_recover(now=later) == {"dispatched": 1, "failed": 0}
    assert sent == [(run.pk,)]
    run.refresh_from_db()
    assert run.dispatched_at is not None
    assert analysis_runs_recover(now=later)["dispatched"] == 0  # sent once only


def test_a_run_left_running_by_a_dead_worker_is_failed_with_a_message(loaded_study, settings):
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    stuck = AnalysisRun.objects.create(
        study=loaded_study,
        status=AnalysisRun.Status.RUNNING,
        started_at=now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 120),
    )
    fresh = AnalysisRun.objects.create(
        study=loaded_study, status=AnalysisRun.Status.RUNNING, started_at=now
    )
    assert analysis_runs_recover(now=now)["failed"] == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == AnalysisRun.Status.FAILED
    assert "worker stopped" in stuck.error
    assert fresh.status == AnalysisRun.Status.RUNNING


def test_a_redelivered_run_is_computed_again_but_not_forever(loaded_study):
    run = AnalysisRun.objects.create(
        study=loaded_study,
        parameters=analysis_parameters_clean({}),
        status=AnalysisRun.Status.RUNNING,
        attempts=1,
    )
    # First redelivery after a worker died: computed again, and done.
    run = analysis_run_execute(run_id=run.pk)
    assert (run.status, run.attempts) == (AnalysisRun.Status.DONE, 2)

    dying = AnalysisRun.objects.create(
        study=loaded_study,
        parameters=analysis_parameters_clean({}),
        status=AnalysisRun.Status.RUNNING,
        attempts=2,
    )
    dying = analysis_run_execute(run_id=dying.pk)
    assert dying.status == AnalysisRun.Status.FAILED
    assert "stopped 2 times" in dying.error
    assert dying.result is None


def test_progress_is_recorded_only_while_running(loaded_study):
    from django.utils import timezone

    run = AnalysisRun.objects.create(study=loaded_study, status=AnalysisRun.Status.RUNNING)
    analysis_run_progress(run_id=run.pk, fraction=0.456)
    run.refresh_from_db()
    assert run.progress == 45
    analysis_run_progress(run_id=run.pk, fraction=1.0)
    run.refresh_from_db()
    assert run.progress == 99  # 100 is set with the result
    AnalysisRun.objects.filter(pk=run.pk).update(
        status=AnalysisRun.Status.FAILED, error="x", finished_at=timezone.now()
    )
    analysis_run_progress(run_id=run.pk, fraction=0.1)
    run.refresh_from_db()
    assert run.progress == 99
