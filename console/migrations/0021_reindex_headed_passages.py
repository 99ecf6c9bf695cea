"""Queue an index job for each memory whose body holds a markdown heading.

Until this release a heading was cut as a sentence like any other, and being
short it joined the sentence before it: the last sentence of one section was
embedded with the next section's title. A heading now starts a passage and
names the sentence after it (`recall.passages.sentences`). Stored sentence
vectors are keyed by the hash of their sentences, so the index worker embeds
these memories' passages again when it applies the jobs; other memories cut
as before and keep theirs.
"""

from django.db import migrations

BATCH = 1000
HEADING = r"(^|\n)[ \t]*#{1,6}[ \t]"  # a line that `sentences` reads as a heading


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    memory = apps.get_model("console", "Memory")
    job = apps.get_model("console", "IndexJob")
    ids = list(memory.objects.using(db).filter(body__regex=HEADING).values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        job.objects.using(db).bulk_create(
            [job(item="memory", item_id=pk, op="upsert") for pk in ids[start : start + BATCH]]
        )


class Migration(migrations.Migration):
    dependencies = [("console", "0020_tag_form")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
