"""CSV for the listings a spreadsheet wants (usage history, resources): ``?format=csv``."""

from __future__ import annotations

import json

from rest_framework.renderers import BaseRenderer

from pools.tables import csv_text


def _flat(row: dict, prefix: str = "") -> dict:
    """Nested objects become dotted columns (``gpu.used``); lists are written as JSON text."""
    cells = {}
    for key, value in row.items():
        column = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            cells.update(_flat(value, f"{column}."))
        elif isinstance(value, (dict, list)):
            cells[column] = json.dumps(value, sort_keys=True)
        else:
            cells[column] = "" if value is None else value
    return cells


class CSVRenderer(BaseRenderer):
    """Renders a list of rows (or a paginated page) as CSV with a header line.

    The columns are the rows' keys in order of appearance, or the view's ``csv_columns`` when it sets them (the
    header is then written for no rows too).
    """

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict):
            data = data.get("results", [data])
        rows = [_flat(row) for row in data or []]
        columns: list[str] = list(getattr((renderer_context or {}).get("view"), "csv_columns", None) or [])
        if not columns:
            for row in rows:
                columns.extend(column for column in row if column not in columns)
        return csv_text(columns, ([row.get(column, "") for column in columns] for row in rows)).encode(self.charset)
