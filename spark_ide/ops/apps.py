from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operating the IDE: the run, model-server and benchmark commands."""

    name = "spark_ide.ops"
    label = "ops"
