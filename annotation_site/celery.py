"""Celery application.

Configuration comes from Django settings under the ``CELERY_`` namespace, so the
broker URL, eager mode and time limits are all set in ``settings.py``.
https://docs.celeryq.dev/en/stable/django/first-steps-with-django.html
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

app = Celery("annotation_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
