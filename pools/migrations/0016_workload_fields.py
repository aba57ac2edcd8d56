from django.db import migrations, models
from django.db.models import F


def pods_alone_until_resynced(apps, schema_editor):
    """Pods synced before these fields existed: each its own workload, its namespace's, until the next sync reads
    it again in full, which its emptied version makes sure of (a live backend's resync reads only the pods whose
    ``resourceVersion`` differs from the stored one)."""
    apps.get_model("pools", "Pod").objects.update(
        workload_kind="Pod", workload_name=F("name"), user=F("namespace"), resource_version=""
    )


class Migration(migrations.Migration):
    dependencies = [("pools", "0015_prometheus_confirmed")]

    operations = [
        migrations.AddField(
            model_name="pod",
            name="workload_kind",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="pod",
            name="workload_name",
            field=models.CharField(blank=True, max_length=253),
        ),
        migrations.AddField(
            model_name="pod",
            name="owner_kind",
            field=models.CharField(blank=True, help_text="controller from metadata.ownerReferences", max_length=64),
        ),
        migrations.AddField(
            model_name="pod",
            name="owner_name",
            field=models.CharField(blank=True, max_length=253),
        ),
        migrations.AddField(
            model_name="pod",
            name="annotations",
            field=models.JSONField(blank=True, default=dict, help_text="only the annotations workloads read"),
        ),
        migrations.AddField(
            model_name="pod",
            name="priority_class",
            field=models.CharField(blank=True, help_text="spec.priorityClassName", max_length=253),
        ),
        migrations.AddField(
            model_name="pod",
            name="started",
            field=models.DateTimeField(blank=True, help_text="status.startTime", null=True),
        ),
        migrations.AddField(
            model_name="pod",
            name="scheduled_reason",
            field=models.CharField(blank=True, help_text="PodScheduled reason when not True", max_length=128),
        ),
        migrations.AddField(
            model_name="pod",
            name="scheduled_message",
            field=models.CharField(blank=True, help_text="PodScheduled message when not True", max_length=1000),
        ),
        migrations.AddField(
            model_name="pod",
            name="user",
            field=models.CharField(
                blank=True, help_text="who submitted it (engine.workloads.workload_user)", max_length=253
            ),
        ),
        migrations.AddIndex(
            model_name="pod",
            index=models.Index(fields=["backend", "namespace", "workload_kind", "workload_name"], name="pod_workload"),
        ),
        migrations.RunPython(pods_alone_until_resynced, migrations.RunPython.noop),
    ]
