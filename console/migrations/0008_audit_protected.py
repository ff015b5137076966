# Placeholder: the audit table's database protection (triggers) is added here.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0007_layout_summary'),
    ]

    operations = []
