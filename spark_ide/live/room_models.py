"""The room's model (issue 34, docs/models.md): the catalogue entry its turns run on, and one
warm connection (``ModelLink``) per entry it uses.

The store says which entry the workspace runs on (``RoomStore.model_entry``: the owner's pick).
A switch makes a new link for the new entry and warms it at once, so the next prompt finds its
socket open; turns that start from then on run on it. A turn already running keeps its link
(its steers and the watchdog's corrections too: they continue its answer), and the link switched
away from is closed as soon as no turn runs on it. A room whose store names no entry (None)
runs on ``LiveSettings.connect_model`` and its ``prompt_style``, as before the catalogue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from spark_ide.upstream.catalogue import ModelEntry

from .events import ModelChosen
from .model_link import ModelLink
from .prompting import instructions_for
from .store import LiveSettings

log = logging.getLogger(__name__)


class RoomModels:
    def __init__(self, settings: LiveSettings) -> None:
        self._settings = settings
        self.style = settings.prompt_style  # how turns on the current link are put to the model
        instructions = instructions_for(self.style)
        self.current = ModelLink(
            lambda: settings.connect_model(instructions), meter=settings.meter, entry=settings.model_entry,
            stamp=settings.model_stamp,
        )
        self._retired: list[ModelLink] = []  # switched away from while a turn ran on them
        self._closing: set[asyncio.Task[None]] = set()

    def switch(self, entry: ModelEntry | None) -> bool:
        """Run the next turns on ``entry`` (None: keep the link there is); True when it changed.
        The new link starts connecting now."""
        settings = self._settings
        if entry is None or entry == self.current.entry:
            return False
        style = settings.style_for(entry) if settings.style_for is not None else settings.prompt_style
        instructions = instructions_for(style)
        connect = settings.connect_entry
        if connect is None:
            log.warning("a catalogue entry (%s) for a room with no way to connect to one: kept the link", entry.name)
            return False
        link = ModelLink(
            lambda: connect(entry, instructions), meter=settings.meter, entry=entry, stamp=settings.model_stamp,
        )
        self._retired.append(self.current)
        self.current, self.style = link, style
        link.warm()
        return True

    def chosen(self) -> ModelChosen | None:
        """The event that names the current entry (None: not from a catalogue)."""
        entry = self.current.entry
        return None if entry is None else ModelChosen(name=entry.name, provider=entry.provider, model=entry.model)

    def prune(self, in_use: ModelLink | None) -> None:
        """Close the links switched away from that no turn runs on (``in_use``: the running
        turn's link, if any)."""
        keep = [link for link in self._retired if link is in_use]
        for link in self._retired:
            if link is not in_use:
                task = asyncio.create_task(link.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        self._retired = keep

    async def close(self) -> None:
        for link in [self.current, *self._retired]:
            await link.close()
        self._retired = []
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task
