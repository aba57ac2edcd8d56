"""A database bootstrapped before the demo's blueprints were generated keeps working after an upgrade.

Its demo backends read ``pools/demo/inventory-<name>.json``, files that are no longer shipped. ``make run``
runs ``bootstrap`` every time; on such a database it points those backends at the generated blueprints, in
one revision, and touches nothing else.
"""

from pathlib import Path

from pools import services
from pools.models import Backend, ConfigRevision

OLD_SOURCE = str(Path(services.demo.__file__).resolve().parents[1] / "demo" / "inventory-{}.json")


def test_bootstrap_moves_old_demo_backends_to_the_generated_blueprints(demo):
    Backend.objects.filter(name="gpu-cluster-01").update(source=OLD_SOURCE.format("gpu-cluster-01"))
    Backend.objects.filter(name="dev-cluster-01").update(source="/srv/fleet/dev.json")  # an administrator's own
    before = ConfigRevision.objects.count()
    assert services.demo_install() is False
    moved = Backend.objects.get(name="gpu-cluster-01")
    assert moved.source.endswith("demo/gpu-cluster-01.json") and Path(moved.source).is_file()
    assert Backend.objects.get(name="dev-cluster-01").source == "/srv/fleet/dev.json"
    assert ConfigRevision.objects.count() == before + 1
    services.backend_sync(backend=moved)  # the blueprint it now reads is there and inside the inventory directory
    assert services.demo_install() is False and ConfigRevision.objects.count() == before + 1
