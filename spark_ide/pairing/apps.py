from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.apps import AppConfig


class RoomNotices:
    """The workspaces app's ``Rooms`` port: a settings change told to the workspace's pages
    (``adapter.settings_changed_everywhere``), the live engine loaded on the first one."""

    def settings_changed(self, workspace_id: uuid.UUID, changed: Mapping[str, Any], *, by: str) -> None:
        from .adapter import settings_changed_everywhere

        settings_changed_everywhere(workspace_id, changed, by=by)


class PairingConfig(AppConfig):
    name = "spark_ide.pairing"
    label = "pairing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from spark_ide.workspaces.ports import use_members, use_rooms

        from .services import SessionMembers

        # Who else holds a role in a workspace (the workspace API's PATCH asks it).
        use_members(SessionMembers())
        # The pages open on a workspace hear of its settings' changes (the same PATCH).
        use_rooms(RoomNotices())
