"""A page whose update the room refused is asked for what it has, and the two converge: an
update lost on the way (the next one skips it, a gap the room refuses) is recovered by the
room's sync step 1 and the page's answer, as y-protocols pages do."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Map, Text, YMessageType, YSyncMessageType, create_update_message, handle_sync_message

from tests.pairing.conftest import Live, connect

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_page_whose_update_was_lost_is_asked_for_it_and_converges(live: Live, rooms: None) -> None:
    page = await connect(live)
    try:
        await page.until_true(lambda: page.text("util.py") == "X = 1\n")
        files: Map[Any] = page.doc.get("files", type=Map)
        target: Text = files["util.py"]
        start = page.doc.get_state()
        target.insert(len(target), "Y = 2\n")  # its update is "lost": never sent
        middle = page.doc.get_state()
        target.insert(len(target), "Z = 3\n")
        await page.comm.send_to(bytes_data=create_update_message(page.doc.get_update(middle)))  # a gap
        asked = None
        deadline = 50
        while asked is None and deadline:
            deadline -= 1
            frame = await page.comm.receive_output(timeout=5)
            data = frame.get("bytes")
            if data and data[0] == YMessageType.SYNC and data[1] == YSyncMessageType.SYNC_STEP1:
                asked = data
        assert asked is not None, "the room did not ask for the missing update"
        reply = handle_sync_message(asked[1:], page.doc)  # the page's sync step 2: all the room lacks
        assert reply is not None
        await page.comm.send_to(bytes_data=reply)
        fresh = await connect(live)
        try:
            await fresh.until_true(lambda: fresh.text("util.py") == "X = 1\nY = 2\nZ = 3\n")
        finally:
            await fresh.close()
        assert start != middle
    finally:
        await page.close()
