"""Versions of a config object: the ETag of its canonical body and JSON Merge Patch (RFC 7386)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def body_etag(body: Any) -> str:
    """A strong ETag (quoted) of a canonical body: it changes exactly when the configuration changes."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return '"' + hashlib.sha256(canonical.encode()).hexdigest()[:32] + '"'


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
