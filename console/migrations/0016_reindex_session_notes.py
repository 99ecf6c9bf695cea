"""Queue an index job for each memory written in a session that is not a turn.

Until this release every memory with a session borrowed the text of the two
memories before it in its session as index-only context (and lent its own).
Only episodic kinds (`recall.types.EPISODIC_KINDS`) do now; the context is
left out of the text plane's fingerprint, so drift checks would never see
the old borrowed text. The jobs let the index worker (or the next write's
apply) index these memories again under the new rule; the episodes after
them are queued too, as they no longer borrow the notes' text.
"""

from django.db import migrations

EPISODIC = ("episode", "working")
BATCH = 1000


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    memory = apps.get_model("console", "Memory")
    job = apps.get_model("console", "IndexJob")
    rows = list(
        memory.objects.using(db)
        .exclude(session_id="")
        .filter(session_order__isnull=False)
        .values_list("pk", "session_id", "kind")
        .iterator(chunk_size=BATCH)
    )
    sessions = {session for _, session, kind in rows if kind not in EPISODIC}
    ids = [pk for pk, session, _ in rows if session in sessions]
    for start in range(0, len(ids), BATCH):
        job.objects.using(db).bulk_create(
            [job(item="memory", item_id=pk, op="upsert") for pk in ids[start : start + BATCH]]
        )


class Migration(migrations.Migration):
    dependencies = [("console", "0015_passages")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
