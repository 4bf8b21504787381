import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from analysis import services
from analysis.models import AnalysisRun
from analysis.services import (
    analysis_parameters_clean,
    analysis_run_enqueue,
    analysis_run_execute,
    analysis_run_progress,
    analysis_runs_recover,
    analysis_runs_request_auto,
)
from studies.models import Assignment, Batch, Study
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_reject,
    assignment_submit,
    judgement_record,
)

ROOT = Path(__file__).resolve().parents[2]


def test_parameters_get_defaults_and_sorted_sources():
    params = analysis_parameters_clean({"excluded_sources": ["BART", "Alpha", "BART"]})
    assert params == {
        "excluded_sources": ["Alpha", "BART"],
        "include_expired": False,
        "bootstrap_resamples": 1000,
        "seed": 0,
        "fast_seconds": 3.0,
        "agreement_floor": 0.5,
        "crossed_settings": [],
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


@pytest.fixture
def open_study(loaded_study, settings):
    """An open study with automatic runs on, asked for 120 s after the first new
    submission."""
    loaded_study.status = Study.Status.OPEN
    loaded_study.save(update_fields=["status"])
    settings.ANALYSIS_AUTO_RUN = True
    settings.ANALYSIS_AUTO_DELAY = 120
    return loaded_study


@pytest.fixture
def sent(monkeypatch):
    """What the services hand to the task queue: (args, countdown). Runs are sent when
    they are due: no countdown."""
    sent = []
    monkeypatch.setattr(
        "analysis.tasks.analysis_run_task.apply_async",
        lambda args, countdown=None, **kwargs: sent.append((args, countdown)),
    )
    return sent


def _auto_runs(study):
    return AnalysisRun.objects.filter(study=study, trigger=AnalysisRun.Trigger.AUTO)


def _soon():
    """A time just after the batches of a test are handed out (well before their
    30-minute deadline), from which the test counts its submission times."""
    return timezone.now() + timedelta(minutes=1)


def _submit_batch(study, *, at, group="Layperson") -> Assignment:
    """A new annotator answers a first-stage batch (every item coherent, so the
    attention check fails) and submits it at ``at``."""
    annotator = annotators_create(group=study.groups.get(name=group), count=1)[0]
    batch = Batch.objects.filter(stage__study=study, stage__position=1).order_by("pk").first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    for reflection_id in assignment.order:
        judgement_record(
            assignment=assignment,
            reflection=batch.reflections.get(pk=reflection_id),
            answer=Answer(coherent=True, empathy=4),
        )
    return assignment_submit(assignment=assignment, now=at)


def test_new_submissions_ask_for_one_automatic_run_once_the_debounce_has_passed(
    open_study, sent, django_capture_on_commit_callbacks
):
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    _submit_batch(open_study, at=t0 + timedelta(seconds=60))

    # The first submission is not yet ANALYSIS_AUTO_DELAY old: later ones join.
    assert analysis_runs_request_auto(now=t0 + timedelta(seconds=119)) == []
    assert not AnalysisRun.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        asked = analysis_runs_request_auto(now=t0 + timedelta(seconds=120))
    (run,) = _auto_runs(open_study)
    assert asked == [run.pk]
    assert (run.status, run.data_through) == (AnalysisRun.Status.QUEUED, t0 + timedelta(seconds=60))
    assert run.parameters == analysis_parameters_clean(None)
    assert sent == [((run.pk,), None)]
    assert run.dispatched_at is not None

    # Nothing new since: the next tick, or the same one redelivered, asks for nothing.
    with django_capture_on_commit_callbacks(execute=True):
        assert analysis_runs_request_auto(now=t0 + timedelta(seconds=120)) == []
        assert analysis_runs_request_auto(now=t0 + timedelta(hours=1)) == []
    assert _auto_runs(open_study).count() == 1
    assert len(sent) == 1


def test_a_submission_newer_than_the_last_automatic_run_asks_for_the_next(open_study, sent):
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    (first_id,) = analysis_runs_request_auto(now=t0 + timedelta(seconds=120))
    AnalysisRun.objects.filter(pk=first_id).update(status=AnalysisRun.Status.RUNNING)

    _submit_batch(open_study, at=t0 + timedelta(seconds=200))
    # Debounced from the new submission, not from the last run.
    assert analysis_runs_request_auto(now=t0 + timedelta(seconds=319)) == []
    (second_id,) = analysis_runs_request_auto(now=t0 + timedelta(seconds=320))
    second = AnalysisRun.objects.get(pk=second_id)
    assert second.data_through == t0 + timedelta(seconds=200)
    assert second.status == AnalysisRun.Status.QUEUED
    assert _auto_runs(open_study).count() == 2


def test_submissions_while_an_automatic_run_waits_in_the_queue_join_it(open_study, sent):
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    (waiting_id,) = analysis_runs_request_auto(now=t0 + timedelta(seconds=120))

    # The worker is busy: the run still waits when more batches come in.
    _submit_batch(open_study, at=t0 + timedelta(seconds=200))
    assert analysis_runs_request_auto(now=t0 + timedelta(seconds=600)) == []
    (waiting,) = _auto_runs(open_study)
    assert waiting.pk == waiting_id
    assert waiting.data_through == t0 + timedelta(seconds=200)  # it reads them when it starts

    # Once it has run, that data counts as covered.
    analysis_run_execute(run_id=waiting_id)
    assert analysis_runs_request_auto(now=t0 + timedelta(hours=1)) == []
    assert _auto_runs(open_study).count() == 1


def test_a_rejected_submission_asks_for_a_run_but_a_batch_rejected_on_submission_does_not(
    open_study, sent
):
    t0 = _soon()
    Study.objects.filter(pk=open_study.pk).update(
        attention_failure_policy=Study.AttentionPolicy.REJECT
    )
    failed = _submit_batch(open_study, at=t0)
    assert failed.status == Assignment.Status.REJECTED  # never counted: nothing changed
    assert analysis_runs_request_auto(now=t0 + timedelta(hours=1)) == []

    Study.objects.filter(pk=open_study.pk).update(
        attention_failure_policy=Study.AttentionPolicy.RECORD
    )
    counted = _submit_batch(open_study, at=t0 + timedelta(seconds=10))
    (first_id,) = analysis_runs_request_auto(now=t0 + timedelta(seconds=130))
    AnalysisRun.objects.filter(pk=first_id).update(status=AnalysisRun.Status.RUNNING)

    assignment_reject(assignment=counted, reason="Spam.", now=t0 + timedelta(seconds=500))
    (second_id,) = analysis_runs_request_auto(now=t0 + timedelta(seconds=620))
    assert AnalysisRun.objects.get(pk=second_id).data_through == t0 + timedelta(seconds=500)


@pytest.mark.parametrize(
    ("status", "asks"), [(Study.Status.DRAFT, False), (Study.Status.CLOSED, True)]
)
def test_a_closed_study_still_gets_its_run_a_draft_is_not_looked_at(open_study, sent, status, asks):
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    Study.objects.filter(pk=open_study.pk).update(status=status)
    assert bool(analysis_runs_request_auto(now=t0 + timedelta(hours=1))) is asks


def test_automatic_runs_are_off_when_the_setting_is(open_study, settings, sent):
    settings.ANALYSIS_AUTO_RUN = False
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    assert analysis_runs_request_auto(now=t0 + timedelta(hours=1)) == []
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


def test_the_database_refuses_two_automatic_runs_for_the_same_data(loaded_study):
    from django.db import IntegrityError, transaction

    through = timezone.now()
    AnalysisRun.objects.create(
        study=loaded_study,
        trigger=AnalysisRun.Trigger.AUTO,
        status=AnalysisRun.Status.RUNNING,
        data_through=through,
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        AnalysisRun.objects.create(
            study=loaded_study, trigger=AnalysisRun.Trigger.AUTO, data_through=through
        )
    assert AnalysisRun.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_jobs_at_once_ask_for_one_run(open_study, sent):
    """Two beats (or a redelivered job) read the same state before either writes."""
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    both_read = threading.Barrier(2, timeout=30)
    waited = threading.local()
    absorb = services._auto_run_absorb

    def absorb_once_both_have_read(**kwargs):
        if not getattr(waited, "done", False):
            waited.done = True
            both_read.wait()  # each has read the data and found no waiting run
        return absorb(**kwargs)

    results, errors = [], []

    def job():
        try:
            results.append(analysis_runs_request_auto(now=t0 + timedelta(seconds=120)))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    with mock.patch.object(services, "_auto_run_absorb", absorb_once_both_have_read):
        threads = [threading.Thread(target=job) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert errors == []
    assert sorted(len(asked) for asked in results) == [0, 1]
    (run,) = _auto_runs(open_study)
    assert run.data_through == t0
    assert len(sent) == 1


def test_services_find_the_tasks_by_name_without_importing_them():
    """``analysis.services`` calls its tasks by name; in a process that never imported
    ``analysis.tasks`` (a web request) the name still resolves."""
    code = (
        "import sys, django; django.setup()\n"
        "from analysis import services\n"
        "assert 'analysis.tasks' not in sys.modules\n"
        "task = services._task(services.RUN_TASK)\n"
        "import analysis.tasks\n"
        "assert task is analysis.tasks.analysis_run_task._get_current_object()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


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
        lambda args, countdown=None, **kwargs: sent.append(args),
    )
    # Too recent: left alone (it may still be on its way).
    assert analysis_runs_recover()["dispatched"] == 0
    later = timezone.now() + timedelta(minutes=10)
    assert analysis_runs_recover(now=later) == {"dispatched": 1, "failed": 0}
    assert sent == [(run.pk,)]
    run.refresh_from_db()
    assert run.dispatched_at is not None
    assert analysis_runs_recover(now=later)["dispatched"] == 0  # sent once only


@pytest.fixture
def messages(monkeypatch):
    """The task ids of the messages the services send (the queue takes them all)."""
    task_ids = []
    monkeypatch.setattr(
        "analysis.tasks.analysis_run_task.apply_async",
        lambda args, task_id, **kwargs: task_ids.append(task_id),
    )
    return task_ids


def test_a_message_of_a_running_run_with_another_id_does_nothing(
    loaded_study, messages, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = analysis_run_enqueue(study=loaded_study)
    run.refresh_from_db()
    later = run.dispatched_at + timedelta(seconds=settings.ANALYSIS_DISPATCH_TIMEOUT + 1)
    assert analysis_runs_recover(now=later)["dispatched"] == 1
    first, second = messages
    # A worker took the second message and is computing the run.
    started = timezone.now()
    AnalysisRun.objects.filter(pk=run.pk).update(
        status=AnalysisRun.Status.RUNNING, task_id=second, attempts=1, started_at=started
    )
    run = analysis_run_execute(run_id=run.pk, task_id=first)
    assert (run.status, run.attempts, run.task_id, run.started_at) == (
        AnalysisRun.Status.RUNNING,
        1,
        second,
        started,
    )


def test_a_run_sent_and_lost_is_sent_again_then_failed_with_a_message(
    loaded_study, messages, settings, django_capture_on_commit_callbacks
):
    settings.ANALYSIS_DISPATCH_TIMEOUT = 600
    with django_capture_on_commit_callbacks(execute=True):
        run = analysis_run_enqueue(study=loaded_study)
    run.refresh_from_db()
    assert (run.dispatches, run.task_id) == (1, messages[0])
    sent_at = run.dispatched_at

    # Not started, but within the timeout: it may simply wait behind other work.
    assert analysis_runs_recover(now=sent_at + timedelta(seconds=599)) == {
        "dispatched": 0,
        "failed": 0,
    }
    assert len(messages) == 1
    # Past it, the message was lost (the broker restarted without its data): sent
    # again, with a new id, until MAX_DISPATCHES sends in all.
    later = sent_at
    for sends in range(2, services.MAX_DISPATCHES + 1):
        later = AnalysisRun.objects.get(pk=run.pk).dispatched_at + timedelta(seconds=601)
        assert analysis_runs_recover(now=later) == {"dispatched": 1, "failed": 0}
        run.refresh_from_db()
        assert (run.status, run.dispatches, run.task_id) == ("queued", sends, messages[-1])
    assert len(set(messages)) == services.MAX_DISPATCHES

    later = run.dispatched_at + timedelta(seconds=601)
    assert analysis_runs_recover(now=later) == {"dispatched": 0, "failed": 1}
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.FAILED
    assert run.error == (
        f"Sent to the task queue {services.MAX_DISPATCHES} times, and no worker started it "
        "(are the Celery workers running?). Start the analysis again."
    )
    assert run.finished_at == later and run.result is None
    assert len(messages) == services.MAX_DISPATCHES


def test_a_run_sent_twice_is_computed_once_whichever_message_comes(
    loaded_study, messages, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = analysis_run_enqueue(study=loaded_study)
    run.refresh_from_db()
    later = run.dispatched_at + timedelta(seconds=settings.ANALYSIS_DISPATCH_TIMEOUT + 1)
    assert analysis_runs_recover(now=later)["dispatched"] == 1
    first, second = messages

    # The first message was only late (waiting behind other work): it claims the run.
    run = analysis_run_execute(run_id=run.pk, task_id=first)
    assert (run.status, run.attempts, run.task_id) == (AnalysisRun.Status.DONE, 1, first)
    # The second, or either delivered again: the run is done, left alone.
    for task_id in (second, first):
        again = analysis_run_execute(run_id=run.pk, task_id=task_id)
        assert (again.status, again.attempts, again.finished_at) == (
            AnalysisRun.Status.DONE,
            1,
            run.finished_at,
        )


def test_a_run_started_meanwhile_is_not_sent_again(loaded_study, messages):
    run = AnalysisRun.objects.create(study=loaded_study, status=AnalysisRun.Status.RUNNING)
    assert services.analysis_run_dispatch(run_id=run.pk) is False
    assert messages == []
    run.refresh_from_db()
    assert (run.task_id, run.dispatches, run.dispatched_at) == ("", 0, None)


def test_a_lost_automatic_run_does_not_hold_up_the_next_one(
    open_study, messages, settings, django_capture_on_commit_callbacks
):
    """The debounce adds new submissions to the automatic run still waiting; a lost
    one is sent again, and failed in the end, so later submissions get their run."""
    settings.ANALYSIS_DISPATCH_TIMEOUT = 60  # all within the batches' time limit
    t0 = _soon()
    _submit_batch(open_study, at=t0)
    with django_capture_on_commit_callbacks(execute=True):
        (lost_id,) = analysis_runs_request_auto(now=t0 + timedelta(seconds=120))
    _submit_batch(open_study, at=t0 + timedelta(seconds=200))
    assert analysis_runs_request_auto(now=t0 + timedelta(seconds=400)) == []  # joins it

    for _ in range(services.MAX_DISPATCHES):
        lost = AnalysisRun.objects.get(pk=lost_id)
        later = lost.dispatched_at + timedelta(seconds=settings.ANALYSIS_DISPATCH_TIMEOUT + 1)
        analysis_runs_recover(now=later)
    assert AnalysisRun.objects.get(pk=lost_id).status == AnalysisRun.Status.FAILED

    submitted = t0 + timedelta(seconds=300)
    assert submitted > later
    _submit_batch(open_study, at=submitted)
    (next_id,) = analysis_runs_request_auto(now=submitted + timedelta(seconds=120))
    assert next_id != lost_id
    assert AnalysisRun.objects.get(pk=next_id).data_through == submitted


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
