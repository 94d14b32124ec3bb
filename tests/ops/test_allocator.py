"""The allocator's view for memory reports: glibc's malloc_info summed per arena, or jemalloc's
own counters when it is preloaded (issue 26: allocator-kept memory against live data)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_ide.ops import allocator
from spark_ide.ops.memtrace import MemTrace

JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")

XML = """<malloc version="1">
<heap nr="0">
<sizes><size from="17" to="32" total="64" count="2"/></sizes>
<total type="fast" count="2" size="64"/>
<total type="rest" count="30" size="40000"/>
<system type="current" size="200000"/>
<system type="max" size="300000"/>
<aspace type="total" size="200000"/>
<aspace type="mprotect" size="200000"/>
</heap>
<heap nr="1">
<sizes></sizes>
<total type="fast" count="0" size="0"/>
<total type="rest" count="1" size="1000"/>
<system type="current" size="132000"/>
<system type="max" size="132000"/>
<aspace type="total" size="132000"/>
<aspace type="mprotect" size="132000"/>
</heap>
<total type="fast" count="2" size="64"/>
<total type="rest" count="31" size="41000"/>
<total type="mmap" count="3" size="5000000"/>
<system type="current" size="332000"/>
<system type="max" size="432000"/>
<aspace type="total" size="332000"/>
<aspace type="mprotect" size="332000"/>
</malloc>
"""


def test_malloc_info_is_summed_per_arena_and_in_all() -> None:
    first, second, total = allocator.parse_malloc_info(XML)
    assert (first.nr, first.system, first.free_chunks, first.free_bytes) == (0, 200_000, 32, 40_064)
    assert (second.nr, second.free_chunks, second.free_bytes) == (1, 1, 1_000)
    assert (total.nr, total.system, total.free_chunks, total.free_bytes, total.mmapped) == (
        -1, 332_000, 33, 41_064, 5_000_000)


@pytest.mark.skipif(allocator.malloc_info_xml() is None, reason="glibc only")
def test_this_process_reports_glibcs_arenas(tmp_path: Path) -> None:
    assert allocator.allocator_name() == "glibc"
    *arenas, total = allocator.parse_malloc_info(allocator.malloc_info_xml() or "")
    assert arenas and total.system >= max(arena.system for arena in arenas)
    assert allocator.allocator_lines()[0].startswith("-- malloc_info: ")
    assert "-- malloc_info: " in MemTrace(tmp_path / "trace.txt").report()


@pytest.mark.skipif(not JEMALLOC.exists(), reason="libjemalloc2 is not installed")
def test_a_process_with_jemalloc_preloaded_reports_jemallocs_counters() -> None:
    code = "from spark_ide.ops import allocator; print(allocator.allocator_name()); print(allocator.jemalloc_stats())"
    env = {**os.environ, "LD_PRELOAD": str(JEMALLOC)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    name, stats = out.splitlines()
    assert name == "jemalloc"
    assert all(f"'{counter}'" in stats for counter in allocator.JEMALLOC_COUNTERS)
