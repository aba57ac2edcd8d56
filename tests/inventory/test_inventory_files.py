"""SEMANTICS §7.3: inventories are read only below GPUPOOL_INVENTORY_DIR, 256 MiB at most.

Every refusal reads the same whether the file is outside, missing or unreadable, so the answers tell nothing
about the server's other files.
"""

from __future__ import annotations

import os

import pytest
from kube_objects import node, write_list

from pools import services
from pools.choices import ConfigType
from pools.engine.errors import ConfigError
from pools.inventory.files import MAX_INVENTORY_BYTES, read_inventory_text
from pools.inventory.records import InventoryError
from pools.models import Backend, ConfigRevision

OUTSIDE = ["/etc/shadow", "/etc/hostname", "/dev/zero", "/nonexistent/inventory.json", "/"]


def write_refusal(actor, source: str, kind: str = "file") -> tuple[str, str]:
    with pytest.raises(ConfigError) as raised:
        services.config_apply(changes={ConfigType.BACKEND: {"probe": {"kind": kind, "source": source}}}, actor=actor)
    (problem,) = raised.value.problems
    return problem.field, problem.message


@pytest.fixture
def escape_link(inventory_dir):
    """A symlink inside the inventory directory that leads out of it."""
    link = inventory_dir / "escape.json"
    os.symlink("/etc/hostname", link)
    return link


@pytest.mark.parametrize("kind", ["file", "simulated"])
def test_a_source_outside_the_inventory_directory_is_refused_the_same_way_whatever_it_names(
    db, actor, inventory_dir, escape_link, kind
):
    revisions = ConfigRevision.objects.count()
    answers = {write_refusal(actor, source, kind) for source in [*OUTSIDE, str(escape_link), "../../etc/passwd"]}
    assert answers == {
        (
            "backend 'probe'.source",
            f"must be a file under the inventory directory {inventory_dir}",
        )
    }
    assert not Backend.objects.filter(name="probe").exists() and ConfigRevision.objects.count() == revisions


def test_files_below_the_inventory_directory_are_accepted_even_before_they_exist(db, actor, inventory_dir):
    services.config_apply(
        changes={
            ConfigType.BACKEND: {
                "later": {"kind": "file", "source": str(inventory_dir / "sub" / "later.json")},
                "demo": {"kind": "simulated", "seed": 1, "source": str(inventory_dir / "demo" / "default.json")},
            }
        },
        actor=actor,
    )
    assert Backend.objects.filter(name__in=["later", "demo"]).count() == 2


def test_reading_checks_again_and_gives_one_answer_for_outside_missing_and_unreadable(
    db, actor, inventory_dir, escape_link
):
    """A backend written before the limit (or restored from an old revision) is refused when it is read."""
    unreadable = inventory_dir / "unreadable.json"
    unreadable.write_text("{}")
    unreadable.chmod(0)
    fifo = inventory_dir / "pipe.json"
    os.mkfifo(fifo)
    sources = [*OUTSIDE, str(escape_link), str(inventory_dir / "missing.json"), str(fifo), str(inventory_dir)]
    if os.geteuid() != 0:  # root reads whatever the mode says
        sources.append(str(unreadable))
    messages = set()
    for source in sources:
        with pytest.raises(InventoryError) as raised:
            read_inventory_text(source)
        messages.add(str(raised.value).replace(f"inventory file {source}:", "inventory file SOURCE:"))
    assert messages == {
        f"cannot read the inventory file SOURCE: it must be a file under the inventory directory {inventory_dir}, "
        "readable by the console"
    }


def test_a_sync_of_a_backend_pointing_outside_fails_without_reading_it(cluster, inventory_dir):
    backend = cluster([node("n1")])
    Backend.objects.filter(pk=backend.pk).update(source="/dev/zero")
    backend.refresh_from_db()
    with pytest.raises(InventoryError, match="cannot read the inventory file /dev/zero"):
        services.backend_sync(backend=backend)
    backend.refresh_from_db()
    assert "must be a file under the inventory directory" in backend.last_sync_error
    assert backend.nodes.count() == 1


def test_files_larger_than_256_mib_are_refused_before_they_are_read(inventory_dir):
    huge = inventory_dir / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_INVENTORY_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(InventoryError, match=r"huge.json is larger than 256 MiB"):
        read_inventory_text(str(huge))


def test_a_regular_file_below_the_directory_is_read(inventory_dir):
    path = write_list(inventory_dir / "ok.json", [node("n1")])
    assert '"n1"' in read_inventory_text(str(path))
