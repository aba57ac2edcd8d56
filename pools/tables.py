"""Tables: one definition per list, read by its page, its CSV and JSON exports, the API and ``poolctl``.

This module starts with what every export shares: CSV written so that a spreadsheet never runs what a cell
holds (SEMANTICS §7.4, OWASP's CSV-injection rule).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

# What makes a spreadsheet read a cell as a formula (or start one after a tab or a line break).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(value: Any) -> Any:
    """A CSV cell that a spreadsheet shows as text: ``'`` before any text that begins like a formula.

    Numbers stay numbers (``-1`` is a figure, not a formula); only text is changed.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A header line and the rows as CSV, every cell made inert."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([inert(cell) for cell in header])
    for row in rows:
        writer.writerow([inert("" if cell is None else cell) for cell in row])
    return buffer.getvalue()
