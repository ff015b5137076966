from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0037_table_services'),
    ]

    operations = [
        migrations.AddField(
            model_name='syncmark',
            name='writing',
            field=models.JSONField(default=dict, help_text='the writes pending when the table was first listed (and at each listing since that found one), and how many listings that took: while any, a sync that finds the timeline moved lists the table again'),
        ),
    ]
