"""The cyclic garbage collector's full passes, kept off the streams.

A full (generation 2) pass walks every container object the process holds. A Daphne process
holds some hundreds of thousands from start-up alone (Django, Twisted, Channels, their
modules and settings), and a full pass came every few seconds while a model streamed at 20k
tokens/s: 150-260 ms each, with every room's deltas waiting behind it (the added latency p99
of ``spark_bench longlines``). What start-up made lives as long as the process: after one
collection it is moved out of the collector's way (``gc.freeze``), and full passes walk only
what came after. ``SPARK_GC_FREEZE=0`` turns it off.

What came after still makes full passes of 15-110 ms (the rooms' replay logs: a Frame and
its event per delta kept, 145,000 objects at 20 rooms), five in a 12-second answer streamed to
20 rooms: Python looks for a full pass every 10 middle ones and runs it once a quarter more
objects reached the old generation, which a streaming room's log does all the time.
``SPARK_GC_THRESHOLDS`` sets the collector's thresholds ("young,middle,full"); the default is
Python's own (700, 10, 10). "700,10,1000" (a full pass looked for every 1,000 middle ones)
lowered the IDE's p99 at 20 rooms from 44-72 to 30-49 ms, but garbage in reference cycles then
waits minutes: RSS grew to 264 MB in a 5-minute soak against 185 MB with Python's, and to
566 MB in 30 minutes (docs/benchmarks.md). It is not the default.
"""

from __future__ import annotations

import gc
import os

THRESHOLDS = (700, 10, 10)  # Python's: a young pass every 700 new containers, middle every 10, full looked for every 10


def freeze_startup_objects() -> None:
    if os.environ.get("SPARK_GC_FREEZE", "1") == "0":
        return
    gc.collect()  # start-up's own garbage goes first: what is frozen is never collected
    gc.freeze()


def set_thresholds() -> None:
    """The collector's thresholds: ``SPARK_GC_THRESHOLDS`` ("young,middle,full"), else
    ``THRESHOLDS``. A value that is not three whole numbers is refused at start-up."""
    value = os.environ.get("SPARK_GC_THRESHOLDS", "").strip()
    if not value:
        gc.set_threshold(*THRESHOLDS)
        return
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"SPARK_GC_THRESHOLDS must be three whole numbers >= 0, such as 700,10,10: {value!r}")
    young, middle, full = map(int, parts)
    gc.set_threshold(young, middle, full)
