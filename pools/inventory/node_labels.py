"""Node labels written to a simulated cluster: an overlay on its fleet's nodes, kept in a file.

A simulated backend stands for a cluster whose API server the console may write (``writable: true``): gpuctl's
verbs patch its node labels as they patch a real cluster's. Its fleet's nodes are a pure function of the seed, the
blueprint and the time, so what was written is kept apart, as an overlay: per node, the labels set (a value) or
removed (null), and how many writes changed them. The overlay lives in the inventory directory, beside the
blueprints, as ``node-labels/<backend>.json``:

- it is the simulated cluster's own state, as etcd is a real cluster's: it survives a restart of every process and
  each of them (the web server, the worker, ``poolctl``) reads it without the database, which the inventory layer
  does not use; the database records what the console saw of it, as it does for a real cluster;
- a change holds an exclusive lock (``fcntl.flock`` on ``<file>.lock``) from its read to the file's atomic
  replacement, so two processes writing at once both land, one after the other;
- a new demo starts unlabelled: installing the demo removes its backends' overlays.

A node's ``resourceVersion`` is its fleet's version plus the number of writes that changed its labels: any change,
the fleet's (a node going down) or a write, makes it larger, so a patch carrying an older one is refused
(``NodeChanged``, the API server's 409).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Mapping

from .records import InventoryError

Entry = dict  # {"labels": {key: value or None}, "writes": n}


class NodeLabelOverlay:
    """The label writes of one simulated cluster, in the file at ``path`` (missing: none yet)."""

    def __init__(self, path: str):
        self.path = path
        self._signature: tuple | None = None
        self._entries: dict[str, Entry] = {}

    def _stat(self) -> tuple | None:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return None
        return status.st_ino, status.st_mtime_ns, status.st_size

    def entries(self) -> dict[str, Entry]:
        """Node name -> its overlay entry, read again only when the file changed (one ``stat`` otherwise): the same
        object while it has not. Treat as read-only."""
        signature = self._stat()
        if signature != self._signature:
            self._entries = self._read() if signature is not None else {}
            self._signature = signature
        return self._entries

    def _read(self) -> dict[str, Entry]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                document = json.load(handle)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise InventoryError(f"cannot read the node labels written to this simulated cluster: {exc}") from None
        nodes = document.get("nodes") if isinstance(document, dict) else None
        return {str(name): entry for name, entry in (nodes or {}).items() if isinstance(entry, dict)}

    def update(self, name: str, change: Callable[[Entry | None], tuple[Entry, object]]):
        """Change node ``name``'s entry under the file's lock: ``change(current entry or None)`` returns the new
        entry and what ``update`` returns; whatever it raises leaves the file as it was."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(f"{self.path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                entries = dict(self._read())
                entry, result = change(entries.get(name))
                entries[name] = entry
                self._write({key: entries[key] for key in sorted(entries)})
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return result

    def _write(self, entries: Mapping[str, Entry]) -> None:
        directory = os.path.dirname(self.path)
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".node-labels-", suffix=".json")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump({"nodes": entries}, handle, indent=1, sort_keys=True)
                handle.write("\n")
            os.replace(temporary, self.path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise


def overlaid(node: dict, entry: Entry | None) -> dict:
    """``node`` (a Node object, left unchanged) with the labels of its overlay entry and its version moved on by
    the entry's writes; ``node`` itself when there is no entry."""
    if not entry:
        return node
    metadata = dict(node.get("metadata") or {})
    labels = dict(metadata.get("labels") or {})
    for key, value in (entry.get("labels") or {}).items():
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    metadata["labels"] = dict(sorted(labels.items()))
    version = str(metadata.get("resourceVersion") or "0")
    writes = int(entry.get("writes") or 0)
    metadata["resourceVersion"] = str(int(version) + writes) if version.isdigit() else f"{version}.{writes}"
    return {**node, "metadata": metadata}


def entry_patched(base_labels: Mapping[str, str], entry: Entry | None, patch: Mapping[str, str | None]) -> Entry:
    """The overlay entry after a merge patch of labels (``None`` removes one) on a node whose fleet gives it
    ``base_labels``: only what differs from the fleet's labels is kept; ``writes`` counts the patches that changed
    the node's labels."""
    current = dict((entry or {}).get("labels") or {})
    effective = {**base_labels}
    for key, value in current.items():
        if value is None:
            effective.pop(key, None)
        else:
            effective[key] = value
    before = dict(effective)
    for key, value in patch.items():
        if value is None:
            effective.pop(key, None)
        else:
            effective[key] = value
    kept = {key: value for key, value in effective.items() if base_labels.get(key) != value}
    kept |= {key: None for key in base_labels if key not in effective}
    writes = int((entry or {}).get("writes") or 0) + (effective != before)
    return {"labels": dict(sorted(kept.items())), "writes": writes}
