"""The test process's Celery app, put back as configured."""

from __future__ import annotations


def forget_broker_connections(app) -> None:
    """Drop the connections ``app`` keeps to its broker and result store, so that the next task opens them
    afresh from the app's configuration."""
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None
    app._local.__dict__.pop("backend", None)
