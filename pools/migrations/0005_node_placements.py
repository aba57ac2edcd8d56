"""Node.placements: each node's memberships as one text, so pool summaries group nodes instead of memberships."""

from collections import defaultdict

from django.db import migrations, models


def fill_placements(apps, schema_editor):
    Node = apps.get_model("pools", "Node")
    NodeMembership = apps.get_model("pools", "NodeMembership")
    pairs = defaultdict(list)
    for node_id, pool_id, platform in NodeMembership.objects.values_list("node_id", "pool_id", "platform_name"):
        pairs[node_id].append(f"{pool_id}:{platform}")
    nodes = [node for node in Node.objects.only("id") if node.pk in pairs]
    for node in nodes:
        node.placements = " ".join(sorted(pairs[node.pk]))
    Node.objects.bulk_update(nodes, ["placements"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ("pools", "0004_materialized_usage"),
    ]

    operations = [
        migrations.AddField(
            model_name="node",
            name="placements",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(fill_placements, migrations.RunPython.noop),
    ]
