"""The `[[names]]` each memory's body holds, as rows (`LinkName`), filled from the bodies.

A memory written under a name used to find the bodies that already named it
with `body LIKE '%[[name%'` over its whole project, inside the write's
transaction; the rows answer it by index. The names are read as
`recall.links.names` reads them.
"""

import django.db.models.deletion
from django.db import migrations, models

from recall import links

BATCH = 1000


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    memory = apps.get_model("console", "Memory")
    link_name = apps.get_model("console", "LinkName")
    rows = memory.objects.using(db).filter(body__contains="[[").values_list("pk", "body")
    made = []
    for pk, body in rows.iterator(chunk_size=BATCH):
        made += [link_name(src_id=pk, name=name) for name in links.names(body)]
        if len(made) >= BATCH:
            link_name.objects.using(db).bulk_create(made)
            made = []
    link_name.objects.using(db).bulk_create(made)


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0017_revision_changed_by'),
    ]

    operations = [
        migrations.CreateModel(
            name='LinkName',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('src', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='console.memory')),
            ],
            options={
                'indexes': [models.Index(fields=['name'], name='link_name_name')],
                'constraints': [models.UniqueConstraint(fields=('src', 'name'), name='link_name_unique')],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
