from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("console", "0026_revision_unsupersede"),
    ]

    operations = [
        migrations.AddField(
            model_name="retrievalevent",
            name="counts",
            field=models.BooleanField(default=True),
        ),
    ]
