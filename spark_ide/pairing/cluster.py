"""The Django side of rooms shared by several processes (``spark_ide.live.owner``, ``replica``): the
lease in Redis, the Channels layer as the bus, and HTTP requests that reach a room owned by
another process.

Only with ``SPARK_CLUSTER`` (on whenever ``REDIS_URL`` is set); the embedded default keeps
every room in its one process.
"""

from __future__ import annotations

import uuid

import redis.asyncio as aioredis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from spark_ide.live.bus import LEASE_TTL_S, Bus, Cluster, ask_owner
from spark_ide.live.bus_messages import Request, RoomMoveFile, RoomReadFiles, RoomReply, RoomSetFile, RoomStoreEvents
from spark_ide.workspaces import documents

from .redis_clients import LoopClients

KEY_PREFIX = "spark:room-owner:"

# Only a lease still held is renewed. One that vanished (it expired while Redis could not be
# reached, or Redis restarted and lost it) is not taken back: Redis lost the room's pub/sub
# stream with it, so the replicas may have missed what the owner published meanwhile and
# cannot tell. The owner gives the room up instead; every socket reconnects and resyncs.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisLease:
    """``live.bus.Lease`` in Redis: one key per room holding the owner's channel, with a
    time to live the owner renews. Redis keeps nothing on disk here: after a restart every
    lease is gone, and so is every message the pub/sub layer carried while it was down. An
    owner whose key vanished therefore does not take it back (``renew`` is False): it closes
    the room, its sockets and the replicas' reconnect, and whoever needs the room next opens
    it from storage (a new epoch) and resyncs everyone. Nothing a client was told about is
    lost: every update was saved before it was sent (docs/cluster.md, "Recovery")."""

    def __init__(self, url: str, ttl_s: float = LEASE_TTL_S) -> None:
        self.url = url
        self.ttl_ms = int(ttl_s * 1000)
        self._clients = LoopClients(url, timeout_s=2)

    def _redis(self) -> aioredis.Redis:
        return self._clients.get()

    async def acquire(self, workspace: str, holder: str) -> bool:
        return bool(await self._redis().set(KEY_PREFIX + workspace, holder, nx=True, px=self.ttl_ms))

    async def renew(self, workspace: str, holder: str) -> bool:
        return bool(await self._redis().eval(_RENEW, 1, KEY_PREFIX + workspace, holder, self.ttl_ms))

    async def holder(self, workspace: str) -> str | None:
        value = await self._redis().get(KEY_PREFIX + workspace)
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    async def release(self, workspace: str, holder: str) -> None:
        await self._redis().eval(_RELEASE, 1, KEY_PREFIX + workspace, holder)


def cluster_from_settings() -> Cluster | None:
    if not settings.SPARK_CLUSTER:
        return None
    bus: Bus = get_channel_layer()
    cluster = Cluster(bus=bus, lease=RedisLease(settings.REDIS_URL))
    documents.LIVE.elsewhere = lambda workspace_id: _owner_elsewhere(cluster, workspace_id)
    return cluster


class RemoteDocument:
    """``documents.LiveHolder`` for a room another process owns: HTTP changes and reads go
    to the owner and wait for its answer."""

    def __init__(self, cluster: Cluster, owner: str) -> None:
        self.cluster = cluster
        self.owner = owner

    def apply_file(self, path: str, text: str | None) -> None:
        self._ask(RoomSetFile(path, text))

    def replace_file_if(self, path: str, text: str | None, expected: str | None) -> bool:
        return self._ask(RoomSetFile(path, text, conditional=True, expected=expected)).ok

    def rename_file(self, path: str, new_path: str) -> str | None:
        return self._ask(RoomMoveFile(path, new_path)).text

    def read_files(self) -> dict[str, str]:
        return dict(self._ask(RoomReadFiles()).texts or {})

    async def store_events(self) -> None:
        await ask_owner(self.cluster.bus, self.owner, RoomStoreEvents())

    def _ask(self, request: Request) -> RoomReply:
        answer: RoomReply = async_to_sync(ask_owner)(self.cluster.bus, self.owner, request)
        return answer


def _owner_elsewhere(cluster: Cluster, workspace_id: uuid.UUID) -> RemoteDocument | None:
    """The room's owner when another process holds it (HTTP runs in a thread: this asks Redis)."""
    owner = async_to_sync(cluster.lease.holder)(str(workspace_id))
    return None if owner is None else RemoteDocument(cluster, owner)
