"""Celery application.

Configuration comes from Django settings under the ``CELERY_`` namespace, so the
broker URL, eager mode, time limits and the beat schedule are all set in
``settings.py``. Each app's ``tasks`` module is imported when a worker starts
(``autodiscover_tasks``); services hand work to a task by its stable name, and import
the task modules the same way (``autodiscover_tasks(force=True)``) if their process
has not yet, so no service module imports a task module.
https://docs.celeryq.dev/en/stable/django/first-steps-with-django.html
"""

import os

import celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")


class ScheduledTaskRefused(RuntimeError):
    """A task was sent with a countdown or an ETA."""


class Celery(celery.Celery):
    def send_task(self, name, *args, countdown=None, eta=None, **kwargs):
        """Every task is sent when it is due; what must wait waits in the database
        (e.g. the debounce of automatic analysis runs) and a beat job sends it.

        A worker holds a countdown/ETA message unacknowledged until it is due, and
        with the Redis transport (kombu 5.7) a broker restart while it holds one makes
        the worker exit ("Restoring 1 unacknowledged message(s)", then AttributeError
        'NoneType' object has no attribute 'hostname'): no task would run any more.
        Every ``apply_async`` (and beat) sends through here, so such a message is
        refused at the source.
        """
        if countdown is not None or eta is not None:
            raise ScheduledTaskRefused(
                f"Task {name} was sent with a countdown or ETA: send it when it is due "
                "instead (see annotation_site.celery)."
            )
        return super().send_task(name, *args, **kwargs)


app = Celery("annotation_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
