# The table lock becomes a lease owned by one run (token, heartbeat, expiry); plans and jobs
# record the token of the run that claimed them; a plan being approved is APPROVING.
# A lock row left by an older version has no expiry and counts as expired.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0008_audit_protected'),
    ]

    operations = [
        migrations.AddField(
            model_name='cleanplan',
            name='run_token',
            field=models.CharField(blank=True, help_text='the table lock token of the run that claimed the plan (approval or clean)', max_length=64),
        ),
        migrations.AddField(
            model_name='job',
            name='run_token',
            field=models.CharField(blank=True, help_text='the table lock token of the run that claimed the job', max_length=64),
        ),
        migrations.AddField(
            model_name='tablelock',
            name='expires_at',
            field=models.DateTimeField(blank=True, help_text='free to take over from then on unless the owner beats again', null=True),
        ),
        migrations.AddField(
            model_name='tablelock',
            name='heartbeat_at',
            field=models.DateTimeField(blank=True, help_text="the owner's last heartbeat", null=True),
        ),
        migrations.AddField(
            model_name='tablelock',
            name='token',
            field=models.CharField(default='', help_text="the owning run's random token", max_length=64),
        ),
        migrations.AlterField(
            model_name='cleanplan',
            name='status',
            field=models.CharField(choices=[('planning', 'planning'), ('draft', 'draft'), ('approving', 'being approved'), ('stale', 'stale'), ('rejected', 'rejected'), ('approved', 'approved'), ('running', 'running'), ('completed', 'completed'), ('failed', 'failed')], default='planning', max_length=16),
        ),
    ]
