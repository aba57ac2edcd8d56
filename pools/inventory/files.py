"""Which files an inventory may be read from, and reading them within bounds (SEMANTICS §7.3).

A ``file`` backend's ``source`` (and a ``simulated`` backend's blueprint) names a file on the server, so
whoever may write a backend could otherwise make the console read ``/etc/shadow`` (and learn from the
answer whether it exists) or ``/dev/zero`` (and fill its memory). Sources must therefore resolve, symlinks
followed, below ``GPUPOOL_INVENTORY_DIR`` (where the demo writes its backends' blueprints too). That is
checked when a backend is written and again when the file is read; a file outside, missing or unreadable gets
the same answer. Only regular files of at most ``MAX_INVENTORY_BYTES`` are read. A ``kubernetes`` backend's
``kubeconfig`` is confined the same way, below ``GPUPOOL_KUBECONFIG_DIR`` (SEMANTICS §7.4).
"""

from __future__ import annotations

import os
import stat

from django.conf import settings

from .records import InventoryError

MAX_INVENTORY_BYTES = 256 * 1024**2


class FileTooLarge(ValueError):
    """A file is larger than the caller reads."""


def inventory_dir() -> str:
    """The directory inventory files may be read from, symlinks resolved."""
    return os.path.realpath(settings.GPUPOOL_INVENTORY_DIR)


def node_labels_path(backend: str) -> str:
    """Where the node labels written to simulated backend ``backend`` are kept (``node_labels``): below the
    inventory directory, beside the blueprints."""
    return os.path.join(inventory_dir(), "node-labels", f"{backend}.json")


def kubeconfig_dir() -> str:
    """The directory a ``kubernetes`` backend's kubeconfig may be read from (``GPUPOOL_KUBECONFIG_DIR``): the
    console never reads another cluster's credentials because a backend's document names their file."""
    return os.path.realpath(settings.GPUPOOL_KUBECONFIG_DIR)


def _allowed_location(path: str, directory: str | None = None) -> str | None:
    """``path`` with symlinks resolved, if that lies below ``directory`` (the inventory directory); else None."""
    try:
        real = os.path.realpath(path)
    except ValueError:  # a NUL character: no file has that name
        return None
    directory = directory or inventory_dir()
    return real if os.path.commonpath([real, directory]) == directory and real != directory else None


def _place_message() -> str:
    return f"must be a file under the inventory directory {inventory_dir()}"


def inventory_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be an inventory source, or None. Does not look at the file: it may come later."""
    return None if _allowed_location(path) else _place_message()


def kubeconfig_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a backend's kubeconfig, or None (the file itself is read when the backend is)."""
    if _allowed_location(path, kubeconfig_dir()):
        return None
    return f"must be a file under the kubeconfig directory {kubeconfig_dir()}"


def confined_kubeconfig(path: str) -> str:
    """``path`` resolved, if it lies below the kubeconfig directory; raises ``InventoryError`` otherwise."""
    real = _allowed_location(path, kubeconfig_dir())
    if real is None:
        raise InventoryError(f"cannot read the kubeconfig {path}: it {kubeconfig_path_problem(path)}")
    return real


def read_bounded_text(path: str, *, limit: int) -> str:
    """The UTF-8 text of the regular file at ``path``, refused past ``limit`` bytes.

    Raises ``FileTooLarge``, ``UnicodeDecodeError``, or ``OSError`` (missing, unreadable, not a regular file).
    """
    # Non-blocking, so that opening a FIFO returns at once (and is then refused as not a regular file).
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path} is not a regular file")
        if status.st_size > limit:
            raise FileTooLarge(f"{path} is larger than {limit // 1024**2} MiB")
        data = handle.read(limit + 1)  # the file may have grown since it was measured
    if len(data) > limit:
        raise FileTooLarge(f"{path} is larger than {limit // 1024**2} MiB")
    return data.decode("utf-8")


def read_inventory_text(path: str) -> str:
    """The text of an inventory file, read only below an inventory directory; raises ``InventoryError``."""
    unreadable = InventoryError(
        f"cannot read the inventory file {path}: it {_place_message()}, readable by the console"
    )
    real = _allowed_location(path) if path else None
    if real is None:
        raise unreadable
    try:
        return read_bounded_text(real, limit=MAX_INVENTORY_BYTES)
    except FileTooLarge as exc:
        raise InventoryError(f"the inventory file {exc}") from None
    except UnicodeDecodeError:
        raise InventoryError(f"the inventory file {path} is not UTF-8 text") from None
    except OSError:
        raise unreadable from None
