"""Keys kept before 0022 get the text of their answer, so a retry of one gets it byte
for byte on PostgreSQL once moved there (`migrate_data`): read on SQLite, their JSON
holds its keys in the order they were written; on PostgreSQL jsonb had already lost
it, and the text is what a replay gave before."""

import json
from typing import Any

from django.db import migrations


def fill(apps: Any, schema_editor: Any) -> None:
    db = schema_editor.connection.alias  # the database migrated (`migrate_data`'s target)
    keys = apps.get_model("console", "IdempotencyKey")
    for key in keys.objects.using(db).filter(text="").iterator(chunk_size=500):
        key.text = json.dumps(key.response)
        key.save(using=db, update_fields=["text"])


class Migration(migrations.Migration):
    dependencies = [("console", "0024_event_budget")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
