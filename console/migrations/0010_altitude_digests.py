from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("console", "0009_graph_channel_settings")]

    operations = [
        migrations.CreateModel(
            name="Digest",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),  # noqa: E501
                ("key", models.CharField(blank=True, max_length=64, unique=True)),
                ("sentences", models.JSONField(default=list)),
                ("tokens", models.IntegerField(default=0)),
                ("fingerprint", models.CharField(blank=True, default="", max_length=64)),
                ("model", models.CharField(blank=True, default="", max_length=200)),
                ("built_at", models.DateTimeField(blank=True, null=True)),
                ("stale", models.BooleanField(default=True)),
                ("edited", models.BooleanField(default=False)),
                ("edited_by", models.CharField(blank=True, default="", max_length=150)),
                ("edited_at", models.DateTimeField(blank=True, null=True)),
                (
                    "project",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="console.project",
                    ),
                ),
            ],
            options={"ordering": ["key"]},
        ),
    ]
