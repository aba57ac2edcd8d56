"""Writing many inventory rows at once: COPY on PostgreSQL, the ORM's bulk upsert elsewhere.

A first sync of a large cluster writes hundreds of thousands of pod rows. On PostgreSQL they are
streamed with COPY into a temporary table and merged with one ``INSERT ... ON CONFLICT DO UPDATE``,
several times faster than Django's multi-row INSERTs; other databases use ``bulk_create``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import ExitStack
from decimal import Decimal
from operator import itemgetter

import msgspec
from django.db import connection, models, transaction
from django.utils import timezone

# Rows per statement where a list of keys or rows is cut into pieces (``chunks``).
CHUNK = 2000


def chunks(items: list, size: int = CHUNK):
    """``items`` in consecutive pieces of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def upsert_rows(model: type[models.Model], rows: list[dict], *, unique_fields: list[str], update_fields: list[str]):
    """Insert ``rows`` (field name -> value, foreign keys as ``<name>_id``) or update those that exist."""
    if not rows:
        return
    if connection.vendor == "postgresql" and len(rows) <= ARRAY_UPSERT_ROWS:
        _array_upsert(model, rows, unique_fields, update_fields)
    elif connection.vendor == "postgresql":
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


# Up to this many rows (a watch batch) PostgreSQL gets one INSERT of arrays: creating the staging table costs
# more than the rows themselves.
ARRAY_UPSERT_ROWS = 2000


def _array_upsert(model, rows, unique_fields, update_fields):
    """One ``INSERT ... SELECT FROM unnest(<one array per column>) ON CONFLICT DO UPDATE`` (PostgreSQL)."""
    now = timezone.now()
    fields = [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]  # as _copy_upsert
    quote = connection.ops.quote_name
    listed = ", ".join(quote(f.column) for f in fields)
    arrays, params = [], []
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            default = now
        else:
            default = f.get_default()
        values = [row.get(f.attname, default) for row in rows]
        if isinstance(f, models.JSONField):  # as text, cast by the server: psycopg would send a list as an array
            arrays.append("%s::text[]::jsonb[]")
            values = [json.dumps(value) for value in values]
        else:
            arrays.append(f"%s::{f.db_type(connection)}[]")
            if isinstance(f, models.DecimalField):  # psycopg wants one Python type per array
                values = [value if value is None or isinstance(value, Decimal) else Decimal(value) for value in values]
        params.append(values)
    conflict = ", ".join(quote(model._meta.get_field(name).column) for name in unique_fields)
    assignments = ", ".join(
        f"{quote(column)} = EXCLUDED.{quote(column)}"
        for column in (model._meta.get_field(name).column for name in update_fields)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(model._meta.db_table)} ({listed}) SELECT * FROM unnest({', '.join(arrays)}) "
            f"ON CONFLICT ({conflict}) DO UPDATE SET {assignments}",
            params,
        )


def _copy_upsert(model, rows, unique_fields, update_fields):
    now = timezone.now()
    # Every column but the primary key: new rows need the model's defaults for what ``rows`` leaves out.
    # Generated columns (``Node.labels_text``) are the database's to write: naming one in an INSERT is an error.
    fields = [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]
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


# Column types of ``rows_table``: the PostgreSQL array type and the SQLite cast of each.
_ROW_TYPES = {
    "text": ("text[]", "TEXT"),
    "decimal": ("numeric[]", "DECIMAL"),
    "bigint": ("bigint[]", "BIGINT"),
    "integer": ("integer[]", "INTEGER"),
    "boolean": ("boolean[]", "BOOLEAN"),
}


def rows_table(name: str, columns: dict[str, str], rows: list[tuple]) -> tuple[str, list]:
    """A ``WITH`` clause naming ``rows`` (at least one) as the table ``name`` (``columns``: column -> type).

    On PostgreSQL the rows travel as one array per column (``unnest``), so a statement has as many
    parameters as columns whatever the number of rows: psycopg then binds a short query, and the
    server plans one join, where a ``VALUES`` list of a thousand rows costs milliseconds to build,
    split and parse. Elsewhere it is a ``VALUES`` list with typed casts.
    """
    names = ", ".join(columns)
    if connection.vendor == "postgresql":
        arrays = ", ".join(f"%s::{_ROW_TYPES[kind][0]}" for kind in columns.values())
        return f"WITH {name} ({names}) AS (SELECT * FROM unnest({arrays}))", [list(c) for c in zip(*rows, strict=True)]
    row = "(" + ", ".join(f"CAST(%s AS {_ROW_TYPES[kind][1]})" for kind in columns.values()) + ")"
    return f"WITH {name} ({names}) AS (VALUES {', '.join([row] * len(rows))})", [v for r in rows for v in r]


def insert_rows(model: type[models.Model], rows: Iterable[dict]) -> int:
    """Insert ``rows`` (field name -> value, foreign keys as ``<name>_id``; a field left out takes its default), none
    of which exists yet: COPYed straight into the table on PostgreSQL, ``bulk_create`` elsewhere. How many."""
    if connection.vendor != "postgresql":
        return len(model.objects.bulk_create([model(**row) for row in rows], batch_size=1000))
    with RowStream(model, unique_fields=[], update_fields=[], new=True) as stream:
        for row in rows:
            stream.add(row)
        stream.end()
    return stream.count


class RowStream:
    """Rows of one model written while the caller is still making them, inside the caller's transaction.

    On PostgreSQL each row is COPYed as it comes, so the server parses, inserts and indexes one while the
    client makes the next (a sync makes them from list pages as the API server sends them). With ``new``
    (the caller knows none of the rows exists yet, as in a backend's first sync) they go straight into the
    table; otherwise into a staging table that ``merge`` folds in with one ``INSERT ... ON CONFLICT DO UPDATE``.
    From the first ``add`` until ``end`` the connection is busy with the COPY: no other query may run on it.
    Elsewhere the rows are kept, and ``merge`` writes them with ``upsert_rows``.

    Used as a context manager: leaving it with an exception abandons the COPY, and the transaction fails.
    """

    def __init__(
        self, model: type[models.Model], *, unique_fields: list[str], update_fields: list[str], new: bool = False
    ):
        self.model, self.unique_fields, self.update_fields, self.new = model, unique_fields, update_fields, new
        self.count = 0
        self._copying = postgresql = connection.vendor == "postgresql"
        self._rows: list[dict] = []
        self._stack = ExitStack()
        self._copy = None
        if postgresql:
            now = timezone.now()
            # Generated columns are the database's to write: naming one in a COPY is an error.
            fields = [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]
            self._columns = [f.column for f in fields]
            self._fields = [
                (
                    f.attname,
                    now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default(),
                    isinstance(f, models.JSONField),
                )
                for f in fields
            ]
            self._staging = f"stream_{model._meta.db_table}"
            self._values = itemgetter(*(name for name, _, _ in self._fields))
            self._json_indexes = [index for index, (_, _, json_column) in enumerate(self._fields) if json_column]

    def __enter__(self) -> RowStream:
        return self

    def __exit__(self, *exc) -> None:
        self._stack.__exit__(*exc)

    def add(self, row: dict) -> None:
        """One row (field name -> value, foreign keys as ``<name>_id``); fields it leaves out take their defaults."""
        self.count += 1
        if not self._copying:
            self._rows.append(row)
            return
        if self._copy is None:
            self._start()
        try:  # the common case: the row names every column
            values = list(self._values(row))
        except KeyError:
            values = [row.get(name, default) for name, default, _ in self._fields]
        for index in self._json_indexes:
            values[index] = _json_text(values[index])
        self._copy.write_row(values)

    def _start(self) -> None:
        quote = connection.ops.quote_name
        listed = ", ".join(quote(c) for c in self._columns)
        cursor = self._stack.enter_context(connection.cursor())
        target = quote(self.model._meta.db_table)
        if not self.new:
            target = self._staging
            cursor.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {target} ON COMMIT DROP AS "
                f"SELECT {listed} FROM {quote(self.model._meta.db_table)} WITH NO DATA"
            )
            cursor.execute(f"TRUNCATE {target}")
        self._copy = self._stack.enter_context(cursor.cursor.copy(f"COPY {target} ({listed}) FROM STDIN"))

    def end(self) -> None:
        """Finish the COPY: the connection can run queries again (the staged rows are not merged yet)."""
        self._stack.close()

    def merge(self) -> None:
        """Write the rows into the table, updating the ``update_fields`` of rows that exist (after ``end``)."""
        self.end()
        if not self._copying:
            upsert_rows(self.model, self._rows, unique_fields=self.unique_fields, update_fields=self.update_fields)
            self._rows = []
        elif self.count and not self.new:
            quote = connection.ops.quote_name
            listed = ", ".join(quote(c) for c in self._columns)
            conflict = ", ".join(quote(self.model._meta.get_field(name).column) for name in self.unique_fields)
            columns = [self.model._meta.get_field(name).column for name in self.update_fields]
            assignments = ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in columns)
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {quote(self.model._meta.db_table)} ({listed}) SELECT {listed} FROM {self._staging} "
                    f"ON CONFLICT ({conflict}) DO UPDATE SET {assignments}"
                )


_JSON = msgspec.json.Encoder()


def _json_text(value) -> str:
    """A JSON column's value as COPY text: msgspec writes it several times faster than ``json.dumps``."""
    return _JSON.encode(value).decode()
