"""The Celery application's own rules (annotation_site.celery, the CELERY_ settings)."""

import pytest
from kombu import Connection

from annotation_site.celery import ScheduledTaskRefused
from annotation_site.celery import app as celery_app


@pytest.fixture
def memory_broker():
    """A throwaway in-memory broker: what is published, not who consumes it."""
    with Connection("memory://") as connection:
        connection.default_channel._purge(celery_app.conf.task_default_queue)  # the process's
        yield connection


@pytest.mark.parametrize(
    "options", [{"countdown": 300}, {"eta": "2030-01-01T00:00:00+00:00"}], ids=["countdown", "eta"]
)
def test_a_task_sent_with_a_countdown_or_eta_is_refused(memory_broker, options):
    with pytest.raises(ScheduledTaskRefused, match="send it when it is due"):
        celery_app.send_task("analysis.run", args=(1,), connection=memory_broker, **options)
    assert memory_broker.default_channel._size(celery_app.conf.task_default_queue) == 0


def test_apply_async_with_a_countdown_is_refused_too(memory_broker, settings):
    from analysis.tasks import analysis_run_task

    settings.CELERY_TASK_ALWAYS_EAGER = False  # read live by Celery; undone after the test
    with pytest.raises(ScheduledTaskRefused):
        analysis_run_task.apply_async((1,), countdown=300, connection=memory_broker)
    analysis_run_task.apply_async((1,), connection=memory_broker)
    assert memory_broker.default_channel._size(celery_app.conf.task_default_queue) == 1


def test_a_task_sent_when_due_is_published(memory_broker, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # as with a broker, even on a laptop
    celery_app.send_task("analysis.run", args=(1,), connection=memory_broker)
    assert memory_broker.default_channel._size(celery_app.conf.task_default_queue) == 1
