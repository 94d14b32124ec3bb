from django.apps import AppConfig


class PairingConfig(AppConfig):
    name = "spark_ide.pairing"
    label = "pairing"
    default_auto_field = "django.db.models.BigAutoField"
