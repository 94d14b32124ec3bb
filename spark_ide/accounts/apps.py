from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "spark_ide.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
