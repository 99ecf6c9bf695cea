"""Expiry (`Memory.expires_at`), Memory Worth (the feedback counters, `Feedback`,
`RetrievalEvent.pack_id`): issue 14, item 2."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0011_bitemporal'),
    ]

    operations = [
        migrations.AddField(
            model_name='memory',
            name='expires_at',
            field=models.DateTimeField(blank=True, db_index=True, null=True),
        ),
        migrations.AddField(
            model_name='memory',
            name='feedback_harmful',
            field=models.IntegerField(default=0),
        ),
        migrations.AddField(
            model_name='memory',
            name='feedback_helpful',
            field=models.IntegerField(default=0),
        ),
        migrations.AddField(
            model_name='memory',
            name='feedback_used',
            field=models.IntegerField(default=0),
        ),
        migrations.AddField(
            model_name='retrievalevent',
            name='pack_id',
            field=models.CharField(blank=True, db_index=True, default='', max_length=26),
        ),
        migrations.CreateModel(
            name='Feedback',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('agent', models.CharField(blank=True, default='', max_length=120)),
                ('used', models.BooleanField(default=False)),
                ('helpful', models.BooleanField(default=False)),
                ('harmful', models.BooleanField(default=False)),
                ('at', models.DateTimeField(default=django.utils.timezone.now)),
                ('event', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='console.retrievalevent')),
                ('memory', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='console.memory')),
            ],
            options={
                'ordering': ['-at', '-id'],
                'constraints': [models.UniqueConstraint(fields=('event', 'memory', 'agent'), name='feedback_unique')],
            },
        ),
    ]
