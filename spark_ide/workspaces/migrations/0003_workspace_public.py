from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('workspaces', '0002_live_document'),
    ]

    operations = [
        migrations.AddField(
            model_name='workspace',
            name='public',
            field=models.BooleanField(default=False),
        ),
    ]
