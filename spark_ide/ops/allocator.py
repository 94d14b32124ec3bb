"""Which C allocator serves this process, and what it holds (issue 26: is RSS growth live data
or memory the allocator keeps?).

* ``malloc_info_summary()``: glibc's ``malloc_info(0)`` (its XML, read back and summed): per
  arena, the memory it took from the system and its free chunks (count and bytes, by kind),
  and the totals. Many free chunks and bytes in the middle of arenas, beside an in-use figure
  that does not grow, is fragmentation the allocator keeps, not a leak.
* ``jemalloc_stats()``: when jemalloc is preloaded (``LD_PRELOAD=libjemalloc.so.2``, the
  deploy units' option: docs/deploy.md), its own counters through ``mallctl``: allocated,
  active, resident, retained.
* ``allocator_name()``: "jemalloc" when it is mapped into the process, else "glibc" (or
  "unknown" off Linux).

Diagnostics for ``spark_ide.ops.memtrace`` (on demand): nothing here runs in a request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

JEMALLOC_COUNTERS = ("allocated", "active", "resident", "retained")


def allocator_name() -> str:
    """The C allocator of this process: jemalloc when it is mapped in, else glibc."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    return "jemalloc" if "libjemalloc" in maps else "glibc"


@dataclass(frozen=True)
class ArenaInfo:
    """One glibc arena (``nr`` -1: the totals over all of them), in bytes."""

    nr: int
    system: int  # taken from the system (``system type="current"``)
    free_chunks: int  # free chunks kept (fast bins and the rest)
    free_bytes: int
    mmapped: int = 0  # only in the totals: blocks mmap-ed one each


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    return libc


def malloc_info_xml() -> str | None:
    """glibc's ``malloc_info(0)`` as it writes it; None without glibc."""
    libc = _libc()
    if libc is None:
        return None
    handle, name = tempfile.mkstemp(prefix="spark-malloc-info-")
    os.close(handle)
    try:
        stream = libc.fopen(name.encode(), b"w")
        if not stream:
            return None
        try:
            if libc.malloc_info(0, stream) != 0:
                return None
        finally:
            libc.fclose(stream)
        return Path(name).read_text()
    finally:
        os.unlink(name)


def _sized(node: ET.Element, tag: str, kind: str, field: str = "size") -> int:
    found = node.find(f"{tag}[@type='{kind}']")
    return int(found.get(field, "0")) if found is not None else 0


def parse_malloc_info(xml: str) -> list[ArenaInfo]:
    """Each arena of ``malloc_info``'s XML, then the totals (``nr`` -1)."""
    root = ET.fromstring(xml)  # noqa: S314 - glibc's own output
    arenas = []
    for heap in root.findall("heap"):
        arenas.append(ArenaInfo(
            nr=int(heap.get("nr", "0")), system=_sized(heap, "system", "current"),
            free_chunks=_sized(heap, "total", "fast", "count") + _sized(heap, "total", "rest", "count"),
            free_bytes=_sized(heap, "total", "fast") + _sized(heap, "total", "rest"),
        ))
    arenas.append(ArenaInfo(
        nr=-1, system=_sized(root, "system", "current"),
        free_chunks=_sized(root, "total", "fast", "count") + _sized(root, "total", "rest", "count"),
        free_bytes=_sized(root, "total", "fast") + _sized(root, "total", "rest"),
        mmapped=_sized(root, "total", "mmap"),
    ))
    return arenas


def malloc_info_summary() -> list[str]:
    """Report lines: glibc's arenas and their free chunks (``malloc_info``)."""
    xml = malloc_info_xml()
    if xml is None:
        return ["-- malloc_info: not glibc"]
    *arenas, total = parse_malloc_info(xml)
    lines = [f"-- malloc_info: {len(arenas)} arenas, {total.system / 1e6:.1f} MB from the system, "
             f"{total.free_chunks} free chunks holding {total.free_bytes / 1e6:.1f} MB, "
             f"mmap-ed {total.mmapped / 1e6:.1f} MB"]
    lines += [f"   arena {a.nr}: {a.system / 1e6:.1f} MB, {a.free_chunks} free chunks, {a.free_bytes / 1e6:.1f} MB free"
              for a in arenas]
    return lines


def jemalloc_stats() -> dict[str, int] | None:
    """jemalloc's counters (bytes) when it serves this process; None otherwise."""
    if allocator_name() != "jemalloc":
        return None
    try:
        process = ctypes.CDLL(None)
        mallctl = process.mallctl
    except (OSError, AttributeError):
        return None
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p,
                        ctypes.c_size_t]
    epoch = ctypes.c_uint64(1)
    size = ctypes.c_size_t(ctypes.sizeof(epoch))
    mallctl(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch), size)  # refresh the stats
    stats: dict[str, int] = {}
    for name in JEMALLOC_COUNTERS:
        value = ctypes.c_size_t(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if mallctl(f"stats.{name}".encode(), ctypes.byref(value), ctypes.byref(size), None, 0) == 0:
            stats[name] = value.value
    return stats


def allocator_lines() -> list[str]:
    """Report lines for whichever allocator serves the process."""
    stats = jemalloc_stats()
    if stats is not None:
        return ["-- jemalloc (preloaded): " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in stats.items())]
    return malloc_info_summary()
