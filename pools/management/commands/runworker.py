"""``manage.py runworker``: the embedded worker of ``make run``: watches and syncs without Redis or Celery.

It runs what Celery beat and workers run in production: a watch per live backend (simulated or
kubernetes), a full sync of the other backends every ``GPUPOOL_SYNC_SECONDS``, a usage sample every
minute, a GPU utilization round every ``GPUPOOL_UTILIZATION_SECONDS`` and the hourly compaction. Ctrl-C stops it.
"""

import logging
import signal
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection

from pools import selectors, services
from pools.choices import BackendKind
from pools.inventory.records import InventoryError

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Keep every backend's inventory and the usage history up to date, in this process."

    def add_arguments(self, parser):
        parser.add_argument("--seconds", type=float, help="stop after this long (default: run until stopped)")

    def handle(self, *args, **options):
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        if options["seconds"]:
            threading.Timer(options["seconds"], stop.set).start()
        watchers: dict[int, threading.Thread] = {}
        schedule = {"sync": 0.0, "sample": 0.0, "utilization": 0.0, "compact": 0.0}
        every = {
            "sync": settings.CELERY_BEAT_SCHEDULE["sync-all-backends"]["schedule"],
            "sample": 60.0,
            "utilization": settings.GPUPOOL["UTILIZATION_SECONDS"],
            "compact": 3600.0,
        }
        self.stdout.write("Worker running: watching live backends, syncing the others, sampling usage.")
        while not stop.is_set():
            close_old_connections()
            now = time.monotonic()
            backends = list(selectors.backends_to_sync())
            for backend in (backend for backend in backends if backend.kind != BackendKind.FILE):
                thread = watchers.get(backend.pk)
                if thread is None or not thread.is_alive():
                    watchers[backend.pk] = self.start_watch(backend, stop)
            if now >= schedule["sync"]:
                schedule["sync"] = now + every["sync"]
                for backend in (backend for backend in backends if backend.kind == BackendKind.FILE):
                    self.run("sync", lambda b=backend: services.backend_sync(backend=b))
            if now >= schedule["sample"]:
                schedule["sample"] = now + every["sample"]
                self.run("usage sample", services.usage_sample_record)
            if now >= schedule["utilization"]:
                schedule["utilization"] = now + every["utilization"]
                self.run("GPU utilization", services.utilization_record_all)
            if now >= schedule["compact"]:
                schedule["compact"] = now + every["compact"]
                self.run("usage compaction", services.usage_history_compact)
                self.run("utilization compaction", services.utilization_history_compact)
            stop.wait(5)
        for thread in watchers.values():
            thread.join(timeout=10)

    def start_watch(self, backend, stop):
        def watch():
            # The verdicts follow the watch's batches on a thread of their own, as in a Celery worker's watch task;
            # it ends with this watch (a watch started again after a failure starts its own).
            try:
                with services.VerdictJudging(backend) as judging:
                    owner = services.lease_owner()
                    services.backend_watch(backend=backend, stop=stop, owner=owner, on_batch=judging.note)
            except Exception:
                logger.exception("watch of backend %s stopped", backend.name)
            finally:
                connection.close()

        thread = threading.Thread(target=watch, name=f"watch-{backend.name}", daemon=True)
        thread.start()
        return thread

    def run(self, what, function):
        try:
            function()
        except InventoryError as exc:
            logger.warning("%s: %s", what, exc)
        except Exception:
            logger.exception("%s failed", what)
