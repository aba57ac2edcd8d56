"""How the API reads request bodies: JSON only, within the bounds every door shares (SEMANTICS §7.3).

A body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused (413) without being read past the limit;
the JSON itself is read by ``engine.documents``: at most 64 levels deep, finite numbers, no NUL characters
(PostgreSQL's JSON and text types refuse them), with the line and column of what is wrong.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from pools.engine.documents import load_json
from pools.engine.errors import DocumentError


def body_too_large() -> RequestDataTooBig:
    """The error for a body past ``DATA_UPLOAD_MAX_MEMORY_SIZE``, as Django itself words it."""
    return RequestDataTooBig("Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE.")


class BoundedJSONParser(JSONParser):
    """JSON bodies read with a size cap and parsed within the document bounds."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        data = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(data) > limit:
            raise body_too_large()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            raise ParseError(f"the body is not {encoding} text") from None
        try:
            return load_json(text)
        except DocumentError as exc:
            raise ParseError(str(exc)) from None
