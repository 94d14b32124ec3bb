from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "spark_ide.classroom"
    label = "classroom"
    default_auto_field = "django.db.models.BigAutoField"
