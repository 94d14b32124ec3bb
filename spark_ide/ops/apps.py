from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class OpsConfig(AppConfig):
    """Operating the IDE: the run, model-server and benchmark commands, and ``/metrics``."""

    name = "spark_ide.ops"
    label = "ops"

    def ready(self) -> None:
        from . import multiproc

        # Every process of the host writes its metrics into one directory (multiproc's docstring).
        multiproc.take_part(Path(settings.PROMETHEUS_MULTIPROC_DIR))
