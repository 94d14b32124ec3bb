"""The cyclic garbage collector's full passes, kept off the streams.

A full (generation 2) pass walks every container object the process holds. A Daphne process
holds some hundreds of thousands from start-up alone (Django, Twisted, Channels, their
modules and settings), and a full pass came every few seconds while a model streamed at 20k
tokens/s: 150-260 ms each, with every room's deltas waiting behind it (the added latency p99
of ``spark_bench longlines``). What start-up made lives as long as the process: after one
collection it is moved out of the collector's way (``gc.freeze``), and full passes walk only
what came after. ``SPARK_GC_FREEZE=0`` turns it off.
"""

from __future__ import annotations

import gc
import os


def freeze_startup_objects() -> None:
    if os.environ.get("SPARK_GC_FREEZE", "1") == "0":
        return
    gc.collect()  # start-up's own garbage goes first: what is frozen is never collected
    gc.freeze()
