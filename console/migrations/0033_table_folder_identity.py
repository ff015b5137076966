from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0032_identity_links'),
    ]

    operations = [
        migrations.AddField(
            model_name='table',
            name='folder_identity',
            field=models.CharField(blank=True, help_text="device:inode of the table's folder when it was registered (local tables): every run holds the folder it opens against it", max_length=64),
        ),
    ]
