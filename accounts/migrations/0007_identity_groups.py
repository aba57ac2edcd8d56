from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0006_service_accounts")]

    operations = [
        migrations.AddField(
            model_name="externalidentity",
            name="groups",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
