"""Tables: one definition per list, read by its page, its htmx fragment, its CSV and JSON exports, the API's CSV and
``poolctl``'s text tables, so that they all show the same rows with the same figures.

A ``Table`` is its columns, in order. A ``Column`` says where it is shown (``PAGE``, ``CSV`` — the exports,
CSV and JSON — and ``CLI``), its key (the export's column and field), its heading (what people read on the
page and in ``poolctl``), how its value is taken from a row (a selector's dict), how that value reads as text,
as a CSV cell and, on the page, as HTML, and whether it is a number (right-aligned). Rows come from one
selector; a table never computes a figure, it only shows the row's.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from django.http import HttpResponse, JsonResponse
from django.utils.safestring import mark_safe

PAGE, CSV, CLI = "page", "csv", "cli"
EVERYWHERE = frozenset({PAGE, CSV, CLI})
EXPORTS = ("csv", "json")

# What makes a spreadsheet read a cell as a formula (or start one after a tab or a line break).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(value: Any) -> Any:
    """A CSV cell that a spreadsheet shows as text (SEMANTICS §7.4, OWASP's CSV-injection rule): ``'`` before any
    text that begins like a formula. Numbers stay numbers (``-1`` is a figure, not a formula)."""
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


def plain(value: Any) -> str:
    """A value as ``poolctl`` prints it: nothing for None, lists joined with commas, everything else as text."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


@dataclass(frozen=True)
class Column:
    """One column of a table; see the module's docstring."""

    key: str
    heading: str
    value: Callable[[Mapping], Any] | None = None
    text: Callable[[Any], str] = plain
    csv: Callable[[Any], Any] | None = None
    html: Callable[[Mapping], str] | None = None
    numeric: bool = False
    where: frozenset[str] = EVERYWHERE
    width: int = 0  # the least width of the column in a gpuctl-style text table

    def of(self, row: Mapping) -> Any:
        """The column's value in ``row``."""
        return self.value(row) if self.value is not None else row.get(self.key)

    def shown(self, row: Mapping) -> str:
        """The value as people read it (``poolctl``, and the page when the column has no ``html``)."""
        return self.text(self.of(row))

    def cell(self, row: Mapping) -> str:
        """The page's ``<td>`` for ``row`` (its ``html`` when it has one, else its text, escaped)."""
        if self.html is not None:
            return self.html(row)
        css = ' class="num"' if self.numeric else ""
        return f"<td{css}>{escape(self.shown(row))}</td>"

    def exported(self, row: Mapping) -> Any:
        """The value as a CSV cell."""
        value = self.of(row)
        return self.csv(value) if self.csv is not None else value


@dataclass(frozen=True)
class Table:
    """A list's columns, in order, and how its ``poolctl`` text reads: ``osmo`` (a header underlined with dashes,
    two spaces between columns) or ``gpuctl`` (each column at least its ``width``, no underline)."""

    name: str
    columns: tuple[Column, ...]
    empty: str = "No rows."
    style: str = "osmo"
    row_attributes: Callable[[Mapping], str] | None = None
    keys: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "keys", {column.key: column for column in self.columns})

    def where(self, door: str) -> tuple[Column, ...]:
        """The columns shown on ``door`` (``PAGE``, ``CSV``, ``CLI``), in order."""
        return tuple(column for column in self.columns if door in column.where)

    @property
    def page_columns(self) -> tuple[Column, ...]:
        return self.where(PAGE)

    def choose(self, keys: Sequence[str]) -> Table:
        """The table with only the columns ``keys`` names, in that order (a page's chosen columns)."""
        return Table(self.name, tuple(self.keys[key] for key in keys), self.empty, self.style, self.row_attributes)

    # --- the page -------------------------------------------------------------------------------------------

    def page_row(self, row: Mapping) -> str:
        """The page's ``<tr>`` for ``row``: one cell per page column (each escapes what it shows)."""
        attributes = self.row_attributes(row) if self.row_attributes is not None else ""
        cells = "".join(column.cell(row) for column in self.page_columns)
        return mark_safe(f"<tr{attributes}>{cells}</tr>\n")  # every cell escapes its text

    # --- exports --------------------------------------------------------------------------------------------

    def csv(self, rows: Iterable[Mapping], *, headings: bool = False) -> str:
        """The rows as CSV: a header of the columns' keys (or headings), every cell inert."""
        columns = self.where(CSV)
        header = [column.heading if headings else column.key for column in columns]
        return csv_text(header, ([column.exported(row) for column in columns] for row in rows))

    def records(self, rows: Iterable[Mapping]) -> list[dict]:
        """The rows as the JSON export has them: one object per row, the CSV's columns as keys, values as they are."""
        columns = self.where(CSV)
        return [{column.key: column.of(row) for column in columns} for row in rows]

    def download(self, rows: Iterable[Mapping], fmt: str, filename: str, *, headings: bool = False) -> HttpResponse:
        """A CSV or JSON download of every row (no pagination), as a page's ``?format=`` export answers."""
        if fmt == "json":
            response = JsonResponse(self.records(rows), safe=False, json_dumps_params={"indent": 2})
        else:
            text = self.csv(rows, headings=headings)
            response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
        return response

    # --- poolctl --------------------------------------------------------------------------------------------

    def text(self, rows: Sequence[Mapping]) -> str:
        """The rows as ``poolctl`` prints them (``empty`` when there is none)."""
        if not rows and self.empty:
            return self.empty
        columns = self.where(CLI)
        cells = [[column.heading for column in columns]] + [[column.shown(row) for column in columns] for row in rows]
        if self.style == "gpuctl":
            return gpuctl_layout([column.width for column in columns], cells)
        return osmo_layout(cells)


def osmo_layout(cells: list[list[str]]) -> str:
    """Columns padded to their widest cell, the header underlined with dashes, two spaces between columns."""
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def gpuctl_layout(least: Sequence[int], cells: list[list[str]]) -> str:
    """gpuctl's tables: left-aligned columns of at least their width (two spaces after the longest cell), the last
    one unpadded, no underline."""
    widths = [max(minimum, max(len(row[i]) for row in cells) + 2) for i, minimum in enumerate(least)]
    return "\n".join(
        "".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def as_json(data: Any) -> str:
    """JSON as ``poolctl --json`` prints it."""
    return json.dumps(data, indent=2, sort_keys=False, default=str)
