"""The search box's small fixed grammar (SEMANTICS §7.4), the same on every page, endpoint and ``poolctl`` verb.

A search is at most ``MAX_TERMS`` terms separated by white space, every one of which must match:

- a **word** matches names, label keys and label values as a plain case-insensitive substring (so a label's
  key alone finds the nodes that carry it);
- ``key=value`` matches a node carrying label ``key`` with exactly ``value`` (``key=``: with an empty value;
  spaces around the sign are ignored).

Nothing in the text is ever more than a value to compare with: no term becomes a database lookup, a regular
expression or a field name, so a search costs what a substring search costs whatever it says. A term that
reads as neither (``=x``) is a plain word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ConfigError

MAX_TEXT = 256
# ``team = a`` is ``team=a``: spaces around the sign do not make three words.
_AROUND_EQUALS = re.compile(r"\s*=\s*")
MAX_TERMS = 8
# What a label key may be (Kubernetes: an optional DNS prefix, a slash, a name of 63 characters at most).
MAX_KEY = 317


@dataclass(frozen=True)
class Term:
    """One term of a search: a ``word``, or a label ``key`` with its exact ``value``."""

    word: str = ""
    key: str = ""
    value: str = ""

    @property
    def is_label(self) -> bool:
        return bool(self.key)


def parse_search(text: str | None, *, field: str = "q") -> tuple[Term, ...]:
    """The terms of ``text`` (none for empty text). Raises ``ConfigError`` naming ``field`` past the bounds."""
    text = (text or "").strip()
    if not text:
        return ()
    if len(text) > MAX_TEXT:
        raise ConfigError(f"a search has at most {MAX_TEXT} characters", field=field)
    parts = _AROUND_EQUALS.sub("=", text).split()
    if len(parts) > MAX_TERMS:
        raise ConfigError(f"a search has at most {MAX_TERMS} terms", field=field)
    return tuple(_term(part) for part in parts)


def _term(part: str) -> Term:
    key, equals, value = part.partition("=")
    if equals and key and len(key) <= MAX_KEY:
        return Term(key=key, value=value)
    return Term(word=part)
