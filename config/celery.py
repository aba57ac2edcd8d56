"""The Celery application.

Without ``CELERY_BROKER_URL`` the settings make every task run eagerly in-process, so the embedded
default (`make run`) needs no Redis.
"""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("gpupool")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def lower_the_workers_priority(**_) -> None:
    """Give the worker (and the pool processes it forks, which inherit it) ``GPUPOOL["WORKER_NICE"]``.

    Syncs and watches are background work: on a machine shared with the web server, four clusters streaming
    a thousand events a second would otherwise take the CPU a page needs (``docs/operations.md``).
    """
    from django.conf import settings

    os.nice(settings.GPUPOOL["WORKER_NICE"])


@worker_init.connect
def settle_the_workers_objects(**_) -> None:
    """What the worker has loaded stays out of the garbage collector's full collections, in the pool processes
    it forks too (``config.startup.objects_settle``)."""
    from config.startup import objects_settle

    objects_settle()
