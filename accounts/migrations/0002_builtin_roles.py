"""Install the built-in roles osmo-admin, osmo-user and osmo-default (SEMANTICS.md §7)."""
from django.db import migrations


def install_roles(apps, schema_editor):
    from pools.builtins import ROLES

    Role = apps.get_model("accounts", "Role")
    ConfigRevision = apps.get_model("pools", "ConfigRevision")
    for name, body in ROLES.items():
        Role.objects.get_or_create(name=name, defaults={**body, "builtin": True})
    ConfigRevision.objects.create(
        config_type="ROLE", revision=1, name="", action="create", username="system", origin="system",
        description="Built-in roles installed", snapshot=ROLES)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial"), ("pools", "0002_builtins")]
    operations = [migrations.RunPython(install_roles, migrations.RunPython.noop)]
