"""Stored digests read as the builder reads sentences now (`recall.digest.digest_line`).

A digest sentence taken from a turn kept its speaker label ("assistant: ..."), which
faked a turn among the digest's lines; a person's edited line could too. Each stored
sentence leaves its label behind, and one agents may not read as a line of a digest
is dropped, in built and edited digests alike (the builder's rule since dd2f539).
"""

from django.db import migrations

from recall.digest import digest_line


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    db = schema_editor.connection.alias  # the database being migrated (migrate --database)
    digest = apps.get_model("console", "Digest")
    for row in digest.objects.using(db).iterator():
        kept = []
        for sentence in row.sentences or []:
            line = digest_line(str(sentence.get("text", "")))
            if line:
                kept.append({**sentence, "text": line})
        if kept != row.sentences:
            row.sentences = kept
            row.save(using=db, update_fields=["sentences"])


class Migration(migrations.Migration):

    dependencies = [
        ("console", "0018_link_names"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
