from django.db import migrations, models

MEMBERS_HELP = 'who belongs: [{"kind": "user"|"group"|"service_account", "name", "role"}]'


class Migration(migrations.Migration):
    dependencies = [("pools", "0016_workload_fields")]

    operations = [
        migrations.AddField(
            model_name="department",
            name="members",
            field=models.JSONField(blank=True, default=list, help_text=MEMBERS_HELP),
        ),
        migrations.AddField(
            model_name="project",
            name="members",
            field=models.JSONField(blank=True, default=list, help_text=MEMBERS_HELP),
        ),
    ]
