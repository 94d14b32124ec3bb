"""The binary side of the session socket speaks y-protocols sync both ways."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc, Map, YMessageType, YSyncMessageType, create_sync_message, handle_sync_message

from tests.pairing.conftest import FILES, Live, connect

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_clients_step1_gets_a_well_formed_step2(live: Live, rooms: None) -> None:
    client = await connect(live)
    await client.pump(0.2)
    fresh: Doc[Any] = Doc()
    await client.comm.send_to(bytes_data=create_sync_message(fresh))
    replies = []
    while not await client.comm.receive_nothing(0.3, interval=0.005):
        frame = await client.comm.receive_output()
        if frame.get("bytes") is not None:
            replies.append(frame["bytes"])
    step2 = [r for r in replies if r[:2] == bytes([YMessageType.SYNC, YSyncMessageType.SYNC_STEP2])]
    assert len(step2) == 1
    handle_sync_message(step2[0][1:], fresh)
    files = fresh.get("files", type=Map)
    assert {path: str(files[path]) for path in files} == FILES
    await client.close()
