"""The tables of people and history: users and service accounts (``poolctl user list``), and config revisions
(``poolctl config history``)."""

from __future__ import annotations

from .base import Column, Table


def _when(value: str | None) -> str:
    return (value or "never")[:19].replace("T", " ")


USERS = Table(
    "users",
    (
        Column("username", "User"),
        Column("kind", "Kind"),
        Column("roles", "Roles", text=lambda roles: ", ".join(roles) or "-"),
        Column("signs_in_with", "Signs in with"),
        Column("tokens", "Tokens", numeric=True),
        Column("last_login", "Last login (UTC)", text=_when),
    ),
    empty="No users.",
)

REVISIONS = Table(
    "revisions",
    (
        Column("config_type", "Type"),
        Column("revision", "Rev", numeric=True),
        Column("name", "Name", text=lambda name: name or "-"),
        Column("username", "User"),
        Column("created_at", "Created (UTC)", text=lambda at: at[:19].replace("T", " ")),
        Column("tags", "Tags", text=", ".join),
        Column("description", "Description"),
    ),
    empty="No revisions.",
)
