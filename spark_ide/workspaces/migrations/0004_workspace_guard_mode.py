from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('workspaces', '0003_workspace_public'),
    ]

    operations = [
        migrations.AddField(
            model_name='workspace',
            name='guard_mode',
            field=models.CharField(
                choices=[('off', 'off'), ('flag', 'flag findings'), ('halt', 'halt and correct high-severity findings')],
                default='halt', max_length=8,
            ),
        ),
    ]
