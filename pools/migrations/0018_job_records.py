import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("pools", "0017_unit_members")]

    operations = [
        migrations.AddField(
            model_name="lease",
            name="since",
            field=models.DateTimeField(blank=True, help_text="when its holder took it", null=True),
        ),
        migrations.CreateModel(
            name="JobRecord",
            fields=[
                ("id", models.UUIDField(primary_key=True, serialize=False)),
                ("task", models.CharField(max_length=64)),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("PENDING", "Queued"),
                            ("STARTED", "Running"),
                            ("SUCCESS", "Done"),
                            ("FAILURE", "Failed"),
                        ],
                        default="PENDING",
                        max_length=16,
                    ),
                ),
                ("result", models.JSONField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("created_by", models.CharField(blank=True, max_length=150)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "backend",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="jobs", to="pools.backend"
                    ),
                ),
            ],
            options={"ordering": ["-created_at"]},
        ),
        migrations.AddConstraint(
            model_name="jobrecord",
            constraint=models.UniqueConstraint(
                condition=models.Q(("state__in", ["PENDING", "STARTED"])),
                fields=("backend", "task"),
                name="one_active_job_per_backend",
            ),
        ),
    ]
