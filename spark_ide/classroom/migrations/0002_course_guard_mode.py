from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('classroom', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='course',
            name='guard_mode',
            field=models.CharField(
                choices=[('off', 'off'), ('flag', 'flag findings'), ('halt', 'halt and correct high-severity findings')],
                default='halt', max_length=8,
            ),
        ),
    ]
