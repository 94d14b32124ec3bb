import uuid

from django.apps import AppConfig


class RoomsLive:
    """``workspaces.ports.Live``: what the workspace app tells the rooms (the rooms' module is
    imported when first needed, as the consumers and views do)."""

    def model_changed(self, workspace_id: uuid.UUID) -> None:
        from .adapter import model_changed_everywhere

        model_changed_everywhere(workspace_id)


class PairingConfig(AppConfig):
    name = "spark_ide.pairing"
    label = "pairing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.exceptions import ImproperlyConfigured

        from spark_ide.upstream.errors import ConfigError
        from spark_ide.workspaces.catalogue import check_at_start
        from spark_ide.workspaces.ports import use_live, use_members

        from .services import SessionMembers

        # Who else holds a role in a workspace (the workspace API's PATCH asks it).
        use_members(SessionMembers())
        use_live(RoomsLive())  # a model switched: the workspace's room warms it (docs/models.md)
        # The model catalogue (docs/models.md): a file that does not parse stops the server, as
        # do model variables it cannot use (no file); each bad entry is logged and left out.
        try:
            check_at_start()
        except ConfigError as exc:
            raise ImproperlyConfigured(exc.message) from None
