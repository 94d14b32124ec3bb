from django.apps import AppConfig


class ReplayConfig(AppConfig):
    name = "spark_ide.replay"
    label = "replay"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from spark_ide.workspaces.ports import use_history

        from .history import KeptHistory

        # The workspaces app keeps no history of its own: compaction hands it over here.
        use_history(KeptHistory())
