"""The Celery app: Redis broker and results, settings under CELERY_* in console.settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("cleanline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["console"])
