"""What a long-running process of the console does once it has started, before it serves anything."""

import gc


def objects_settle() -> None:
    """Import the URLconf (every view, serializer and form) and move every object alive now out of the
    garbage collector's way (``gc.freeze``).

    Modules, classes, functions and settings live as long as the process: about 100,000 objects here, which
    every full collection traversed again, ~50 ms each on this project's development machine (``docs/
    performance.md``), paid by whichever request allocated the object that triggered it, and several times
    that while the CPUs are shared with busy workers. Objects created afterwards are collected as before. The
    web server's entry points (``config/wsgi.py``, ``config/asgi.py``) and Celery workers (``config/
    celery.py``) call this once they have loaded Django.
    """
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view module now, not on the first request
    gc.collect()  # what start-up left behind is freed, not frozen
    gc.freeze()
