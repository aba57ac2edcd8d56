"""Reading the JSON and YAML documents people send, within bounds (SEMANTICS §7.3).

Whatever the door (an API body, a file given to ``poolctl``, a form field, the admin), a document is refused
with a sentence that says what, and where when the parser knows, if it
- nests deeper than ``MAX_DEPTH`` levels: Python's parsers recurse, and 10,000 levels of JSON exhaust them;
- uses a YAML alias: a 256-byte "billion laughs" expands to gigabytes, and configurations do not need them;
- holds a number that is not finite (``1e400``, ``NaN``, ``.inf``) or has more than ``MAX_DIGITS`` digits:
  no column stores it and JSON cannot carry it back out;
- holds a NUL character or an unpaired surrogate in a string, which PostgreSQL cannot store.

YAML is read as the JSON it stands for: dates stay strings, and the tags of other types (``!!binary``,
``!!set``, ``!!omap``, ``!!pairs``, ``!!timestamp``) are refused.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.resolver import Resolver

from .errors import DocumentError

try:  # libyaml reads events several times faster; the composing, where the checks are, stays in Python
    from yaml.cyaml import CParser as _EventSource
except ImportError:  # pragma: no cover -- PyYAML built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _EventSource(Reader, Scanner, Parser):
        def __init__(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


MAX_DEPTH = 64
MAX_DIGITS = 1000

# A JSON string (escapes included) or a bracket: what a linear scan needs to follow nesting outside strings.
_JSON_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - text.rfind(chr(10), 0, offset)}"


def _check_json_nesting(text: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, in one pass over the text, before any parser recurses."""
    depth = 0
    for match in _JSON_STRING_OR_BRACKET.finditer(text):
        character = text[match.start()]
        if character in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise DocumentError(f"nested deeper than {MAX_DEPTH} levels at {_position(text, match.start())}")
        elif character in "]}":
            depth -= 1


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise DocumentError(f"the number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-+")) > MAX_DIGITS:
        raise DocumentError(f"a number has more than {MAX_DIGITS} digits")
    return int(text)


def _no_constant(name: str):
    raise DocumentError(f"{name} is not a number JSON allows")


def check_values(value: Any) -> None:
    """Refuse strings PostgreSQL cannot store and numbers that are not finite, anywhere in ``value``."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            raise DocumentError("strings must not contain NUL characters (\\u0000) or unpaired surrogates")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise DocumentError(f"the number {value} is out of range")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_values(key)
            check_values(item)
    elif isinstance(value, list):
        for item in value:
            check_values(item)


def load_json(text: str) -> Any:
    """Parse JSON text within the bounds above; raises ``DocumentError`` with the line and column it knows."""
    _check_json_nesting(text)
    try:
        value = json.loads(text, parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    check_values(value)
    return value


class _BoundedComposer(Composer):
    """YAML's composer, refusing aliases and nesting deeper than MAX_DEPTH before building anything."""

    def __init__(self):
        super().__init__()
        self.depth = 0

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            mark = self.peek_event().start_mark
            raise DocumentError(f"YAML aliases are not accepted (line {mark.line + 1}, column {mark.column + 1})")
        if not self.check_event(SequenceStartEvent, MappingStartEvent):
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise DocumentError(
                f"nested deeper than {MAX_DEPTH} levels at line {mark.line + 1}, column {mark.column + 1}"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _JsonResolver(Resolver):
    """YAML 1.1's implicit types, except timestamps: ``2024-01-01`` stays the string JSON would have."""

    yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


class _JsonConstructor(SafeConstructor):
    """The safe constructor, limited to what JSON holds: finite numbers of bounded length, no other types."""

    def construct_yaml_float(self, node):
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise DocumentError(f"the number {node.value[:40]} is out of range (line {node.start_mark.line + 1})")
        return value

    def construct_yaml_int(self, node):
        if len(node.value) > MAX_DIGITS:
            raise DocumentError(f"a number has more than {MAX_DIGITS} digits (line {node.start_mark.line + 1})")
        return super().construct_yaml_int(node)

    def construct_not_json(self, node):
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        raise DocumentError(f"YAML tag {tag} is not accepted (line {node.start_mark.line + 1})")


_JsonConstructor.add_constructor("tag:yaml.org,2002:float", _JsonConstructor.construct_yaml_float)
_JsonConstructor.add_constructor("tag:yaml.org,2002:int", _JsonConstructor.construct_yaml_int)
for _not_json in ("binary", "set", "omap", "pairs", "timestamp"):
    _JsonConstructor.add_constructor(f"tag:yaml.org,2002:{_not_json}", _JsonConstructor.construct_not_json)


class _BoundedLoader(_BoundedComposer, _EventSource, _JsonConstructor, _JsonResolver):
    def __init__(self, stream):
        _EventSource.__init__(self, stream)
        _BoundedComposer.__init__(self)
        _JsonConstructor.__init__(self)
        _JsonResolver.__init__(self)


class _NoAliasDumper(yaml.SafeDumper):
    """The safe dumper, writing a part that occurs twice out twice instead of as an anchor and an alias."""

    def ignore_aliases(self, data) -> bool:
        return True


def dump_yaml(value: Any, **options) -> str:
    """YAML for people to read and edit (``yaml.safe_dump``'s options), without aliases: ``load_yaml`` reads it."""
    return yaml.dump(value, Dumper=_NoAliasDumper, **options)


def load_yaml(text: str) -> Any:
    """Parse YAML text within the bounds above; raises ``DocumentError`` with the line and column it knows."""
    loader = _BoundedLoader(text)
    try:
        value = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise DocumentError(f"invalid YAML{where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    check_values(value)
    return value
