"""The latency panel of the live page (issue 12, "What users see"): after real turns on the
scripted model, it shows the last turn's TTFT and tokens/s, the last steer's latency and the
model, exactly the figures the server sent in ``turn.finished`` / ``turn.steered``, and charts
every recent turn with its own figures.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import IdeServer, open_new_workspace
from tests.browser.test_live_pairing import _ask

pytestmark = pytest.mark.browser

WAIT_MS = 20_000
NO_FIGURE = "\u2013"  # an en dash: no turn yet
QUICK = "Say hello\n[rate:2000][say]Hello! A quick answer, a few words long.[/say]"
SLOW = "Count slowly\n[ttft:300][rate:40][say]" + " ".join(f"word{i}" for i in range(400)) + "[/say]"
STEER = "Stop counting\n[rate:1500][say]Steered: a short answer instead.[/say]"

# The server events the page hands its panels, as the page saw them.
RECORD = """() => {
  window.turnEvents = [];
  for (const name of ["spark:turn-started", "spark:turn-steered", "spark:turn-finished"]) {
    document.body.addEventListener(name, (event) => window.turnEvents.push({ name, ...event.detail }));
  }
}"""


def _events(page: Any, name: str) -> list[dict[str, Any]]:
    return [e for e in page.evaluate("window.turnEvents") if e["name"] == name]


def _finished(page: Any, count: int) -> list[dict[str, Any]]:
    page.wait_for_function(
        "(n) => window.turnEvents.filter((e) => e.name === 'spark:turn-finished').length >= n", arg=count,
        timeout=WAIT_MS,
    )
    return _events(page, "spark:turn-finished")


def _shown_ms(text: str) -> float:
    """A figure as the panel writes it (4.21 ms, 38.5 ms, 120 ms, 1.2 s), in ms."""
    found = re.fullmatch(r"([\d.]+) (ms|s)", text)
    assert found, f"not a duration: {text!r}"
    return float(found.group(1)) * (1000 if found.group(2) == "s" else 1)


def _assert_ms(text: str, ms: float) -> None:
    """``text`` is ``ms`` written to the precision the panel uses for it."""
    digits = 2 if ms < 10 else 1 if ms < 100 else 0
    unit = 100 if ms >= 1000 else 10**-digits
    assert abs(_shown_ms(text) - ms) <= unit / 2 + 1e-9, f"{text!r} is not {ms} ms"


def _assert_rate(text: str, rate: float) -> None:
    found = re.fullmatch(r"(\d+) tok/s", text)
    assert found, f"not a rate: {text!r}"
    assert abs(int(found.group(1)) - rate) <= 0.5, f"{text!r} is not {rate} tok/s"


def _field(page: Any, name: str) -> str:
    return str(page.locator(f"#latency [data-latency={name}]").inner_text()).strip()


def _assert_inside_window(page: Any, selector: str) -> None:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None, f"{selector} is not shown"
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], box
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"] + 0.5, box


def test_the_panel_shows_each_turns_own_ttft_speed_steer_latency_and_model(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "speed panel")
    panel = page.locator("#latency")
    assert panel.locator("[data-latency=empty]").is_visible()
    assert _field(page, "ttft") == NO_FIGURE
    page.evaluate(RECORD)

    # Turn 1: a quick answer.
    _ask(page, QUICK)
    first = _finished(page, 1)[0]
    metrics = first["metrics"]
    assert first["status"] == "completed" and metrics["ttft_ms"] > 0 and metrics["tokens_per_s"] > 0
    panel.locator(f"g.latency-turn[data-turn='{first['turn']}']").wait_for(state="attached", timeout=WAIT_MS)
    _assert_ms(_field(page, "ttft"), metrics["ttft_ms"])
    _assert_rate(_field(page, "rate"), metrics["tokens_per_s"])
    assert _field(page, "model") == metrics["model"] == "smollm2"
    assert not panel.locator("[data-latency=empty]").is_visible()

    # Turn 2, slow, steered once it streams: turn 3 takes over.
    _ask(page, SLOW)
    page.wait_for_function(
        "() => window.turnEvents.filter((e) => e.name === 'spark:turn-started').length >= 2", timeout=WAIT_MS,
    )
    assert _field(page, "state") == "running…"
    page.locator("[data-field=tokens]", has_text="≈").wait_for(timeout=WAIT_MS)  # its answer streams
    _ask(page, STEER)  # Enter while a turn runs steers it
    ended = _finished(page, 3)
    steered = _events(page, "spark:turn-steered")
    assert len(steered) == 1
    by_turn = {e["turn"]: e for e in ended}
    second, third = by_turn[steered[0]["steered_from"]], by_turn[steered[0]["turn"]]
    assert (second["status"], third["status"]) == ("steered", "completed")
    page.wait_for_function("() => document.querySelectorAll('#latency g.latency-turn').length === 3")

    # The figures are the last turn's, and the last steer's.
    _assert_ms(_field(page, "ttft"), third["metrics"]["ttft_ms"])
    _assert_rate(_field(page, "rate"), third["metrics"]["tokens_per_s"])
    _assert_ms(_field(page, "steer"), steered[0]["steer_ms"])
    assert third["metrics"]["steer_ms"] == pytest.approx(steered[0]["steer_ms"], abs=1e-3)
    assert _field(page, "model") == third["metrics"]["model"] == "smollm2"
    assert _field(page, "state") == ""

    # The chart: one bar pair per turn, oldest left, each with that turn's own figures.
    bars = panel.locator("g.latency-turn")
    assert [bars.nth(i).get_attribute("data-turn") for i in range(3)] == [e["turn"] for e in ended]
    heights = []
    for i, event in enumerate(ended):
        bar = bars.nth(i)
        assert float(bar.get_attribute("data-ttft-ms")) == event["metrics"]["ttft_ms"]
        assert float(bar.get_attribute("data-tokens-per-s")) == event["metrics"]["tokens_per_s"]
        title = str(bar.locator("title").text_content())
        shown = re.search(r"TTFT (\S+ m?s), (\d+ tok/s), (\d+) tokens", title)
        assert shown, title
        _assert_ms(shown.group(1), event["metrics"]["ttft_ms"])
        _assert_rate(shown.group(2), event["metrics"]["tokens_per_s"])
        assert int(shown.group(3)) == event["metrics"]["tokens"]
        heights.append((float(bar.locator(".ttft").get_attribute("height")),
                        float(bar.locator(".rate").get_attribute("height"))))
    # Bars are to scale: the largest figure of each row fills its row, the others in proportion.
    for row, key in ((0, "ttft_ms"), (1, "tokens_per_s")):
        figures = [e["metrics"][key] for e in ended]
        tallest = max(h[row] for h in heights)
        for figure, height in zip(figures, (h[row] for h in heights), strict=True):
            assert height == pytest.approx(max(1.0, tallest * figure / max(figures)), abs=0.11)
    _assert_inside_window(page, "#latency")

    # A reload replays the recent turns: the panel shows the same turns, once each.
    page.reload()
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
    page.wait_for_function("() => document.querySelectorAll('#latency g.latency-turn').length === 3")
    assert [bars.nth(i).get_attribute("data-turn") for i in range(3)] == [e["turn"] for e in ended]
    _assert_ms(_field(page, "ttft"), third["metrics"]["ttft_ms"])
    assert _field(page, "model") == "smollm2"
