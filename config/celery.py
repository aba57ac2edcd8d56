"""The Celery application.

Without ``CELERY_BROKER_URL`` the settings make every task run eagerly in-process, so the embedded
default (`make run`) needs no Redis.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("gpupool")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
