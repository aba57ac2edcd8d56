"""Writing many inventory rows at once: COPY on PostgreSQL, the ORM's bulk upsert elsewhere.

A first sync of a large cluster writes hundreds of thousands of pod rows. On PostgreSQL they are
streamed with COPY into a temporary table and merged with one ``INSERT ... ON CONFLICT DO UPDATE``,
several times faster than Django's multi-row INSERTs; other databases use ``bulk_create``.
"""

from __future__ import annotations

import json

from django.db import connection, models, transaction
from django.utils import timezone


def upsert_rows(model: type[models.Model], rows: list[dict], *, unique_fields: list[str], update_fields: list[str]):
    """Insert ``rows`` (field name -> value, foreign keys as ``<name>_id``) or update those that exist."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        # The staging table lives until the transaction ends, so there must be one (a savepoint inside a caller's).
        with transaction.atomic():
            _copy_upsert(model, rows, unique_fields, update_fields)
    else:
        model.objects.bulk_create(
            [model(**row) for row in rows],
            batch_size=1000,
            update_conflicts=True,
            unique_fields=unique_fields,
            update_fields=update_fields,
        )


def _copy_upsert(model, rows, unique_fields, update_fields):
    now = timezone.now()
    # Every column but the primary key: new rows need the model's defaults for what ``rows`` leaves out.
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    defaults = {
        f.attname: now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default()
        for f in fields
    }
    names = [f.attname for f in fields]
    columns = [f.column for f in fields]
    json_columns = {f.column for f in fields if isinstance(f, models.JSONField)}
    conflict = [model._meta.get_field(name).column for name in unique_fields]
    updates = [model._meta.get_field(name).column for name in update_fields]
    quote = connection.ops.quote_name
    table, staging = model._meta.db_table, f"staging_{model._meta.db_table}"
    listed = ", ".join(quote(c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} ON COMMIT DROP AS "
            f"SELECT {listed} FROM {table} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {staging}")
        with cursor.cursor.copy(f"COPY {staging} ({listed}) FROM STDIN") as copy:
            for row in rows:
                values = [row.get(name, defaults[name]) for name in names]
                copy.write_row(
                    [json.dumps(v) if c in json_columns else v for c, v in zip(columns, values, strict=True)]
                )
        assignments = ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in updates)
        cursor.execute(
            f"INSERT INTO {table} ({listed}) SELECT {listed} FROM {staging} "
            f"ON CONFLICT ({', '.join(conflict)}) DO UPDATE SET {assignments}"
        )
