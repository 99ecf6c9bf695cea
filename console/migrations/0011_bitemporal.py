"""Transaction time: the MemoryRevision table, and an `initial` revision of every
memory already stored, so `recorded_as_of` reads old data too.

The initial revision is the memory as it is now, recorded at its `created`
time: the best this database knows of when it learnt the memory (earlier
edits were not kept). Reversible: the table goes, memories stay.
"""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

SNAPSHOT = (
    "project_id", "kind", "name", "description", "body", "tags", "importance",
    "valid_from", "invalid_at", "source", "agent_id", "session_id", "created",
)  # fmt: skip


def _initial(apps: Any, schema_editor: Any) -> None:
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    memory = apps.get_model("console", "Memory")
    revision = apps.get_model("console", "MemoryRevision")
    batch = []
    for row in memory.objects.using(db).order_by("pk").iterator(chunk_size=1000):
        values = {f: getattr(row, f) for f in SNAPSHOT}
        batch.append(
            revision(
                memory_id=row.pk,
                number=1,
                op="initial",
                recorded_at=row.created,
                superseded_by_id=row.superseded_by_id or "",
                **values,
            )  # fmt: skip
        )
        if len(batch) >= 1000:
            revision.objects.using(db).bulk_create(batch)
            batch = []
    revision.objects.using(db).bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0010_altitude_digests"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryRevision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("memory_id", models.CharField(max_length=26)),
                ("number", models.PositiveIntegerField()),
                (
                    "op",
                    models.CharField(
                        choices=[
                            ("initial", "initial"),
                            ("create", "create"),
                            ("import", "import"),
                            ("edit", "edit"),
                            ("supersede", "supersede"),
                            ("archive", "archive"),
                            ("restore", "restore"),
                            ("delete", "delete"),
                        ],
                        max_length=16,
                    ),
                ),
                ("recorded_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("kind", models.CharField(max_length=16)),
                ("name", models.CharField(max_length=120)),
                ("description", models.CharField(blank=True, default="", max_length=150)),
                ("body", models.TextField(blank=True, default="")),
                ("tags", models.JSONField(blank=True, default=list)),
                ("importance", models.FloatField(default=0.5)),
                ("valid_from", models.DateTimeField()),
                ("invalid_at", models.DateTimeField(blank=True, null=True)),
                ("superseded_by_id", models.CharField(blank=True, default="", max_length=26)),
                ("source", models.CharField(blank=True, default="", max_length=32)),
                ("agent_id", models.CharField(blank=True, default="", max_length=120)),
                ("session_id", models.CharField(blank=True, default="", max_length=120)),
                ("created", models.DateTimeField(blank=True, null=True)),
                ("deleted", models.BooleanField(default=False)),
                (
                    "project",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="revisions",
                        to="console.project",
                    ),
                ),
            ],
            options={
                "ordering": ["memory_id", "number"],
                "indexes": [
                    models.Index(fields=["recorded_at"], name="console_mem_recorde_642626_idx")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("memory_id", "number"), name="memory_revision_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(_initial, migrations.RunPython.noop),
    ]
