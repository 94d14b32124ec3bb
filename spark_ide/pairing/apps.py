from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.apps import AppConfig


class RoomNotices:
    """The workspaces app's ``Rooms`` port: a settings change told to the workspace's pages
    (``adapter.settings_changed_everywhere``), a model switch to its room
    (``adapter.model_changed_everywhere``); the live engine loaded on the first one."""

    def settings_changed(self, workspace_id: uuid.UUID, changed: Mapping[str, Any], *, by: str) -> None:
        from .adapter import settings_changed_everywhere

        settings_changed_everywhere(workspace_id, changed, by=by)

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
        from spark_ide.workspaces.ports import use_members, use_rooms

        from .services import SessionMembers

        # Who else holds a role in a workspace (the workspace API's PATCH asks it).
        use_members(SessionMembers())
        # The pages open on a workspace hear of its settings' changes (the same PATCH), its room
        # of a model switch (docs/models.md).
        use_rooms(RoomNotices())
        # The model catalogue (docs/models.md): a file that does not parse stops the server, as
        # do model variables it cannot use (no file); each bad entry is logged and left out.
        try:
            check_at_start()
        except ConfigError as exc:
            raise ImproperlyConfigured(exc.message) from None
