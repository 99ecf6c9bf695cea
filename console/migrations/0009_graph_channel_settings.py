"""The `link` channel became the `graph` channel: carry saved Recall overrides over.

In the `recall_config` override row, `channel_weights.link` becomes
`channel_weights.graph` and `link_seeds` becomes `graph_seeds`, so a weight
or seed count someone saved keeps applying. Reversible.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

RENAMES = (("link", "graph"),)
KNOBS = (("link_seeds", "graph_seeds"),)


def _rename(apps: Any, db: str, forward: bool) -> None:
    setting = apps.get_model("console", "Setting")
    row = setting.objects.using(db).filter(key="recall_config").first()
    if row is None or not isinstance(row.value, dict):
        return
    value = dict(row.value)
    pairs = [(a, b) if forward else (b, a) for a, b in KNOBS]
    for old, new in pairs:
        if old in value:
            value[new] = value.pop(old)
    weights = value.get("channel_weights")
    if isinstance(weights, dict):
        weights = dict(weights)
        for a, b in RENAMES:
            old, new = (a, b) if forward else (b, a)
            if old in weights:
                weights[new] = weights.pop(old)
        value["channel_weights"] = weights
    row.value = value
    row.save(using=db, update_fields=["value"])


def forwards(apps: Any, schema_editor: Any) -> None:
    _rename(apps, schema_editor.connection.alias, True)


def backwards(apps: Any, schema_editor: Any) -> None:
    _rename(apps, schema_editor.connection.alias, False)


class Migration(migrations.Migration):
    dependencies = [("console", "0008_project_members")]
    operations = [migrations.RunPython(forwards, backwards)]
