from django.db import migrations, models


def confirm_existing(apps, schema_editor):
    """Backends saved before confirmations existed keep sending their credentials where they were configured."""
    Backend = apps.get_model("pools", "Backend")
    for backend in Backend.objects.exclude(prometheus_url=""):
        backend.prometheus_confirmed_url = backend.prometheus_url
        backend.prometheus_confirmed_env = backend.prometheus_token_env
        backend.save(update_fields=["prometheus_confirmed_url", "prometheus_confirmed_env"])


class Migration(migrations.Migration):
    dependencies = [("pools", "0014_node_group_sums")]

    operations = [
        migrations.AddField(
            model_name="backend",
            name="prometheus_confirmed_url",
            field=models.CharField(blank=True, editable=False, max_length=1024),
        ),
        migrations.AddField(
            model_name="backend",
            name="prometheus_confirmed_env",
            field=models.CharField(blank=True, editable=False, max_length=128),
        ),
        migrations.RunPython(confirm_existing, migrations.RunPython.noop),
    ]
