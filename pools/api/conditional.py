"""ETags and ``If-Match``: no lost updates when two scripts edit the same object.

The ETag of a config object is a hash of its canonical body, so it changes exactly when the
configuration changes (not when a sync touches a backend's status fields). A ``PUT``, ``PATCH`` or
``DELETE`` that sends ``If-Match`` with an older ETag is refused with 412 and changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .errors import PreconditionFailed


def etag_of(body: Any) -> str:
    """A strong ETag (quoted) for a JSON-ready body: the same body always gives the same tag."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return '"' + hashlib.sha256(canonical.encode()).hexdigest()[:32] + '"'


def if_match_check(request, current_etag: str) -> None:
    """Raise PreconditionFailed (412) when the request's ``If-Match`` does not name ``current_etag``.

    No header means the caller takes the risk of overwriting; ``*`` matches any existing object. Weak
    tags (``W/"..."``) are compared by their value, since proxies may weaken the tags they pass on.
    """
    header = request.headers.get("If-Match")
    if header is None:
        return
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}
    if "*" in tags or current_etag in tags:
        return
    raise PreconditionFailed()


def merge_patch(target: Any, patch: Any) -> Any:
    """JSON Merge Patch (RFC 7386): objects merge key by key, ``null`` removes a key, anything else replaces.

    ``PATCH /api/pools/p/ {"platforms": {"old": null}}`` removes one platform and keeps the others.
    """
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged
