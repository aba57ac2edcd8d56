"""Install the built-in role osmo-metrics (system:Metrics) on databases created before it existed."""
from django.db import migrations
from django.db.models import Max


def install_metrics_role(apps, schema_editor):
    from pools.builtins import ROLES
    from pools.engine.permissions import METRICS_ROLE

    Role = apps.get_model("accounts", "Role")
    Group = apps.get_model("auth", "Group")
    ConfigRevision = apps.get_model("pools", "ConfigRevision")
    Group.objects.get_or_create(name=METRICS_ROLE)
    if Role.objects.filter(name=METRICS_ROLE).exists():
        return
    Role.objects.create(name=METRICS_ROLE, builtin=True, **ROLES[METRICS_ROLE])
    fields = ("description", "policies", "external_roles", "sync_mode", "immutable")
    snapshot = {role["name"]: {key: role[key] for key in fields} for role in Role.objects.values("name", *fields)}
    latest = ConfigRevision.objects.filter(config_type="ROLE").aggregate(n=Max("revision"))["n"] or 0
    ConfigRevision.objects.create(
        config_type="ROLE", revision=latest + 1, name=METRICS_ROLE, action="create", username="system",
        origin="system", description=f"Built-in role {METRICS_ROLE} installed", snapshot=snapshot)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_identity_and_tokens"), ("pools", "0005_node_placements")]
    operations = [migrations.RunPython(install_metrics_role, migrations.RunPython.noop)]
