"""Which key a room's model connection uses: its owner's stored key for the provider when
there is one (bring your own key, ``accounts.provider_keys``), else the server's; an owner who
uses only their own keys and has none for the provider gets no connection (docs/models.md,
"Keys")."""

from __future__ import annotations

import uuid
from dataclasses import replace

from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.db import DatabaseError

from spark_ide.accounts.keyring import KeyUnreadable
from spark_ide.accounts.provider_keys import OwnerKey, OwnKeyRequired, keys_stamp, user_key
from spark_ide.upstream import ProviderConfig, UpstreamError
from spark_ide.upstream.errors import KEY_MISSING, PROVIDER_UNAVAILABLE
from spark_ide.workspaces.models import Workspace


def owner_api_key(workspace: uuid.UUID | str, provider: str) -> OwnerKey | None:
    """The workspace owner's key for ``provider`` (None: the server's key is used; also for a
    workspace deleted meanwhile). Raises ``UpstreamError``: ``key_missing`` when the owner uses
    only their own keys and has none for it, ``provider_unavailable`` when theirs cannot be
    read (the keys secret changed, the database failed)."""
    try:
        owner = Workspace.objects.filter(pk=workspace).values_list("owner_id", flat=True).first()
        return None if owner is None else user_key(owner, provider)
    except DatabaseError as exc:
        raise UpstreamError(PROVIDER_UNAVAILABLE, f"could not read the room owner's keys: {exc}") from None
    except OwnKeyRequired as exc:
        raise UpstreamError(KEY_MISSING, str(exc)) from None
    except KeyUnreadable:
        raise UpstreamError(
            PROVIDER_UNAVAILABLE,
            f"the room owner's stored {provider} key cannot be decrypted with this server's keys secret "
            "(SPARK_KEYS_SECRET; see docs/security.md, \"Stored provider keys\"): store it again",
        ) from None


async def with_owner_key(config: ProviderConfig, workspace: uuid.UUID | str) -> ProviderConfig:
    """``config`` with the room owner's key for its provider in place of the server's, if
    they stored one."""
    found = await database_sync_to_async(owner_api_key)(workspace, config.provider)
    return config if found is None else replace(config, api_key=found.secret, key_label=found.label)


async def owner_keys_stamp(workspace: uuid.UUID | str) -> str:
    """Changes when the workspace owner's keys or their choice change (``LiveSettings.model_stamp``)."""
    owner = User.objects.filter(workspaces=uuid.UUID(str(workspace)))
    stamp: str = await database_sync_to_async(keys_stamp)(owner)
    return stamp
