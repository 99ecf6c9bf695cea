"""Edges keep where the body names their target, so links expand in body order."""

from django.db import migrations, models

from recall.links import names


def backfill(apps, schema_editor):
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    Edge = apps.get_model("console", "Edge")
    rows = Edge.objects.using(db).filter(origin="wikilink").select_related("src", "dst")
    for edge in rows.iterator():
        order = names(edge.src.body)
        if edge.dst.name in order:
            edge.position = order.index(edge.dst.name)
            edge.save(using=db, update_fields=["position"])


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0004_briefing_read_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="edge",
            name="position",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
