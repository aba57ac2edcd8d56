"""Install the built-in backend, pod templates and resource validations (SEMANTICS.md §1)."""
from django.db import migrations


def install_builtins(apps, schema_editor):
    from pools.builtins import BACKENDS, POD_TEMPLATES, RESOURCE_VALIDATIONS

    Backend = apps.get_model("pools", "Backend")
    PodTemplate = apps.get_model("pools", "PodTemplate")
    ResourceValidation = apps.get_model("pools", "ResourceValidation")
    ConfigRevision = apps.get_model("pools", "ConfigRevision")
    for config_type, model, objects, field in (
        ("BACKEND", Backend, BACKENDS, None),
        ("POD_TEMPLATE", PodTemplate, POD_TEMPLATES, "spec"),
        ("RESOURCE_VALIDATION", ResourceValidation, RESOURCE_VALIDATIONS, "rules"),
    ):
        # Later migrations add fields the built-ins have; set only those this model has yet.
        known = {f.name for f in model._meta.get_fields()}
        for name, body in objects.items():
            values = {k: v for k, v in body.items() if k in known} if field is None else {field: body}
            model.objects.get_or_create(name=name, defaults={**values, "builtin": True})
        ConfigRevision.objects.create(
            config_type=config_type, revision=1, name="", action="create", username="system", origin="system",
            description="Built-in configuration installed", snapshot=objects)


class Migration(migrations.Migration):
    dependencies = [("pools", "0001_initial")]
    operations = [migrations.RunPython(install_builtins, migrations.RunPython.noop)]
