"""The Celery application (broker: REDIS_URL, or eager in-process without it)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "spark_ide.settings")

app = Celery("spark_ide")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
