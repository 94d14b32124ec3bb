from django.apps import AppConfig


class PairingConfig(AppConfig):
    name = "spark_ide.pairing"
    label = "pairing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from spark_ide.workspaces.ports import use_members

        from .services import SessionMembers

        # Who else holds a role in a workspace (the workspace API's PATCH asks it).
        use_members(SessionMembers())
