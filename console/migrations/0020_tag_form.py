"""Store every tag in `recall.recall.tag_form`: no leading `#`, trimmed, lower-cased.

Tags were stored lower-cased and trimmed, but `#billing` kept its `#`: a tag of
its own beside `billing`, which a filter on `billing` missed and the console
showed as `##billing`. Memories and notes whose tags change are queued for the
index worker (the text plane holds their tags).
"""

from django.db import migrations

BATCH = 1000
MAX_TAG_CHARS = 64


def _form(tags: list[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        tag = str(tag).strip().lstrip("#").strip().lower()[:MAX_TAG_CHARS]
        if tag and tag not in out:
            out.append(tag)
    return out


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    jobs = apps.get_model("console", "IndexJob").objects.using(db)
    for model, item in (("Memory", "memory"), ("Note", "note")):
        rows = apps.get_model("console", model).objects.using(db)
        changed = []
        for row in rows.filter(tags__icontains="#").only("pk", "tags").iterator(BATCH):
            tags = _form(row.tags or [])
            if tags != row.tags:
                row.tags = tags
                changed.append(row)
        for start in range(0, len(changed), BATCH):
            part = changed[start : start + BATCH]
            rows.bulk_update(part, ["tags"])
            jobs.bulk_create([jobs.model(item=item, item_id=r.pk, op="upsert") for r in part])


class Migration(migrations.Migration):
    dependencies = [("console", "0019_digest_lines")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
