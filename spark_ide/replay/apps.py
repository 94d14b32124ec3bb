from django.apps import AppConfig


class ReplayConfig(AppConfig):
    name = "spark_ide.replay"
    label = "replay"
    default_auto_field = "django.db.models.BigAutoField"
