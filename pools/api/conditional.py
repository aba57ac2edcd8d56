"""ETags and ``If-Match``: no lost updates when two scripts edit the same object.

The ETag of a config object is a hash of its canonical body (``pools.configs.body_etag``), so it changes
exactly when the configuration changes (not when a sync touches a backend's status fields). A ``PUT``,
``PATCH`` or ``DELETE`` that sends ``If-Match`` with an older ETag is refused with 412 and changes nothing;
the services compare the versions under the config write lock, so two requests made against the same
version can never both succeed.
"""

from __future__ import annotations

from typing import Any

from pools import services
from pools.configs import body_etag


def with_etag(response, body: Any):
    """``response`` with the ETag of the canonical ``body`` it shows."""
    response["ETag"] = body_etag(body)
    return response


def if_match(request) -> services.Expected:
    """What the request's ``If-Match`` expects of the object it changes.

    No header: the object must exist, whatever its version (the caller takes the risk of overwriting);
    ``*`` likewise. Weak tags (``W/"..."``) are compared by their value, since proxies may weaken the
    tags they pass on.
    """
    header = request.headers.get("If-Match")
    if header is None:
        return services.PRESENT
    tags = frozenset(tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip())
    if "*" in tags or not tags:
        return services.PRESENT
    return services.Expected(etags=tags)
