from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0035_archival_approval_words'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='archival',
            constraint=models.UniqueConstraint(condition=models.Q(('status__in', ('draft', 'approved', 'running'))), fields=('table',), name='one_open_archival_per_table'),
        ),
    ]
