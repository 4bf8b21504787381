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

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

app = Celery("annotation_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
