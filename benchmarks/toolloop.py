"""Tool-loop benchmark (``manage.py spark_bench toolloop``): how soon a round's tool outputs go back.

A model that edits with ``apply_patch`` (``SPARK_EDIT_STYLE=apply-patch``, a custom tool)
ends a response with its calls; the IDE applies them while they stream and answers them in
the next ``response.create`` of the turn, on the same warm socket (``live.answer``,
``live.rounds``). This measures that round trip on the real stack (``pairing.stack``): the
scripted model server, the frame tap in front of it, the IDE under Daphne, a ``websockets``
client as the browser.

Each turn plays a script of ``SPARK_MAX_ROUNDS`` (8) rounds: seven each a short message and an
``apply_patch`` call that bumps a number in ``loop.py`` (the patch the round before left), the
eighth a message without calls, which ends the turn. At the tap, per round that ended with
calls:

* ``from_last_delta``: the last ``response.custom_tool_call_input.delta`` of the response
  passed the tap -> the next ``response.create`` carrying the outputs passed it (the issue's
  definition; it includes the server's ``.done``, ``output_item.done`` and ``response.completed``
  that follow the last delta);
* ``from_completed``: ``response.completed`` passed the tap -> that ``response.create`` passed it
  (the client cannot answer before the response ends: this is the client's share).

Both include the loopback hops tap -> client -> tap. The baseline is measured the same way,
through the same tap, in the same run, turns alternating with the IDE's: the bare upstream
client (``spark_ide.upstream``, in this process) playing the same scripts, answering each call
``completed`` at once and chaining the next request with ``TurnRequest.next_round``, with no
IDE around it (no patch applied, no room, no Django).

The engine is paced (``--rate``, tokens/s) so each round's stream is over when its
``response.completed`` comes: the figure is the loop's own latency, not a backlog of deltas.
Checked too: every round's outputs name its calls and chain on its response, every patch
applied (the file over HTTP holds the last number), every turn finished ``answered``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from benchmarks import report
from benchmarks.pairing.client import Browser, late_events, play
from benchmarks.pairing.stack import FrameTap, Stack, tapped_events
from spark_ide import responses_protocol as protocol
from spark_ide.live.events import FinishReason, TurnStatus
from spark_ide.upstream import (
    Completed,
    Message,
    ModelClient,
    ProviderConfig,
    ToolCall,
    ToolOutput,
    TurnRequest,
    open_client,
)
from spark_ide.upstream.dialects import APPLY_PATCH, EditStyle

ROUNDS = 8  # SPARK_MAX_ROUNDS's default: seven rounds of calls, then the answer in words
CALLS = ROUNDS - 1  # per turn, one a round
TARGET_P50_MS = 2.0
QUICK = ["--turns", "15"]
PATH = "loop.py"
TOOL_DELTAS = frozenset({
    protocol.CUSTOM_TOOL_INPUT_DELTA, protocol.FUNCTION_ARGUMENTS_DELTA, protocol.APPLY_PATCH_DIFF_DELTA,
})
CALL_ITEMS = frozenset({protocol.CUSTOM_TOOL_CALL, protocol.FUNCTION_CALL, protocol.APPLY_PATCH_CALL})
OUTPUT_ITEMS = frozenset({
    protocol.CUSTOM_TOOL_CALL_OUTPUT, protocol.FUNCTION_CALL_OUTPUT, protocol.APPLY_PATCH_CALL_OUTPUT,
})


def loop_file(number: int) -> str:
    """``loop.py`` when its number is ``number``."""
    return (
        "# The loop benchmark's file: each round of a turn bumps the number below.\n\n\n"
        "def limit(value):\n    return min(value, 100)\n\n\n"
        f'def step():\n    """One step of the loop."""\n    return {number}\n\n\n'
        "def main():\n    print(step())\n"
    )


def patch(number: int) -> str:
    """A V4A patch taking ``loop.py``'s number from ``number`` to ``number + 1``."""
    return (
        f"*** Begin Patch\n*** Update File: {PATH}\n@@ def step():\n"
        f'     """One step of the loop."""\n-    return {number}\n+    return {number + 1}\n \n'
        "*** End Patch\n"
    )


def script(turn: int) -> list[Any]:
    """Turn ``turn``'s rounds (turn 0 warms up): its calls take the number from
    ``turn * CALLS`` on, one a round."""
    first = turn * CALLS
    rounds: list[Any] = [
        [f"Bumping it to {first + k + 1}.", {"type": protocol.CUSTOM_TOOL_CALL, "name": APPLY_PATCH,
                                              "input": patch(first + k)}]
        for k in range(CALLS)
    ]
    return [*rounds, f"Done: it is {first + CALLS} now."]


def scripts(turns: int) -> dict[str, Any]:
    return {f"loop-{turn}": script(turn) for turn in range(turns + 1)}


def prompt(turn: int, rate: float) -> str:
    return f"[script:loop-{turn}][rate:{rate:g}][ttft:0]"


# -- the round trips, at the tap --------------------------------------------------------------


@dataclass(frozen=True)
class RoundTrip:
    from_last_delta_ms: float
    from_completed_ms: float
    answered: bool  # the request carried one output per call, chained on the response


def round_trips(events: list[tuple[float, bool, dict[str, Any]]]) -> Iterator[RoundTrip]:
    """Per response that ended with calls: when its last tool delta and its ``response.completed``
    passed the tap, and when the next ``response.create`` answering its calls did."""
    last_delta: float | None = None
    for index, (at, from_server, event) in enumerate(events):
        kind = event.get("type")
        if from_server and kind in TOOL_DELTAS:
            last_delta = at
        if not (from_server and kind == protocol.COMPLETED):
            continue
        response = event["response"]
        calls = {item["call_id"] for item in response.get("output", []) if item.get("type") in CALL_ITEMS}
        if not calls or last_delta is None:
            continue
        answer = next(
            ((sent, body) for sent, from_server_, body in events[index + 1:]
             if not from_server_ and body.get("type") == protocol.CREATE and _answers(body, calls)),
            None,
        )
        if answer is not None:
            sent, body = answer
            outputs = [item["call_id"] for item in body.get("input", []) if item.get("type") in OUTPUT_ITEMS]
            yield RoundTrip(
                (sent - last_delta) * 1000.0, (sent - at) * 1000.0,
                sorted(outputs) == sorted(calls) and body.get("previous_response_id") == response["id"],
            )
        last_delta = None


def _answers(body: dict[str, Any], calls: set[str]) -> bool:
    return any(item.get("type") in OUTPUT_ITEMS and item.get("call_id") in calls for item in body.get("input", []))


def summary(values: list[float]) -> dict[str, float | int]:
    """p50 / p90 / p95 / p99 / max / n, in ms."""
    figures = report.summary(values)
    if values:
        figures["p90"] = round(report.percentile(sorted(values), 0.90), 3)
    return figures


# -- the two clients ---------------------------------------------------------------------------


@dataclass
class Side:
    """One client's rounds: the tap's round trips, and whether each turn went as scripted."""

    trips: list[RoundTrip]
    turns_ok: list[bool]

    def figures(self) -> dict[str, Any]:
        return {
            "from_last_delta_ms": summary([trip.from_last_delta_ms for trip in self.trips]),
            "from_completed_ms": summary([trip.from_completed_ms for trip in self.trips]),
            "every_call_answered": bool(self.trips) and all(trip.answered for trip in self.trips),
            "turns_as_scripted": all(self.turns_ok),
        }


async def recorded(tap: FrameTap, play_turn: Callable[[], Awaitable[bool]]) -> tuple[list[RoundTrip], bool]:
    """Play one turn with the tap recording; its round trips and whether it went as scripted."""
    with tap.recorded() as frames:
        ok = await play_turn()
    trips = list(round_trips(tapped_events(frames)))
    return trips, ok and len(trips) == CALLS


async def ide_turn(browser: Browser, turn: int, rate: float) -> bool:
    """A turn through the IDE: every round announced, no failed call, answered in the end."""
    start = len(browser.events)
    played = await play(browser, prompt(turn, rate))
    rounds = [event for _, event in browser.events[start:]
              if event["type"] == "turn.round" and event["turn"] == played.id]
    return (
        played.finished["status"] == TurnStatus.COMPLETED and played.finished.get("reason") == FinishReason.ANSWERED
        and len(rounds) == CALLS and not any(event["failed"] for event in rounds)
    )


async def bare_rounds(
    client: ModelClient, request: TurnRequest,
    answer: Callable[[tuple[ToolCall, ...]], Awaitable[list[ToolOutput]]], *, timeout_s: float,
) -> bool:
    """A turn on the bare upstream client: each round read to its end, its calls answered by
    ``answer``, the next round chained at once. True once a round ends without calls (within
    ``ROUNDS``); False if one does not complete."""
    for _ in range(ROUNDS):
        stream = await client.start(request)
        last = None
        async with asyncio.timeout(timeout_s):
            async for event in stream:
                last = event
        if not isinstance(last, Completed):
            return False
        if not last.tool_calls:
            return True
        outputs = await answer(last.tool_calls)
        request = request.next_round(
            response_id=last.response_id, answer=stream.text, calls=last.tool_calls, outputs=outputs,
        )
    return False


async def _applied(calls: tuple[ToolCall, ...]) -> list[ToolOutput]:
    return [ToolOutput(call, "Applied.") for call in calls]


async def bare_turn(client: ModelClient, turn: int, rate: float) -> bool:
    """The same turn on the bare upstream client: each call answered at once, next round chained."""
    request = TurnRequest(
        instructions="bench", input=(Message("user", prompt(turn, rate)),), edit_style=EditStyle.APPLY_PATCH,
    )
    return await bare_rounds(client, request, _applied, timeout_s=30)


# -- the run -----------------------------------------------------------------------------------


def progress(message: str) -> None:
    report.progress("toolloop", message)


async def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    assert stack.tap is not None
    tap = stack.tap
    workspace_id, ws_url = await stack.session({PATH: loop_file(0)})
    browser = await Browser.open(ws_url, stack.token)
    config = ProviderConfig(provider="local", base_url=f"http://127.0.0.1:{tap.port}/v1",
                            edit_style=EditStyle.APPLY_PATCH)
    client = await open_client(config)
    sides = {"ide": Side([], []), "bare": Side([], [])}
    try:
        await ide_turn(browser, 0, args.rate)  # warm: imports, the first turn, the socket
        await bare_turn(client, 0, args.rate)
        for turn in range(1, args.turns + 1):
            plays: dict[str, Callable[[], Awaitable[bool]]] = {
                "ide": partial(ide_turn, browser, turn, args.rate), "bare": partial(bare_turn, client, turn, args.rate),
            }
            for name, turn_played in plays.items():
                trips, ok = await recorded(tap, turn_played)
                sides[name].trips += trips
                sides[name].turns_ok.append(ok)
            progress(f"turn {turn}: ide {[round(t.from_last_delta_ms, 2) for t in sides['ide'].trips[-3:]]} ms, "
                     f"bare {[round(t.from_last_delta_ms, 2) for t in sides['bare'].trips[-3:]]} ms (last 3)")
        expected = loop_file((args.turns + 1) * CALLS)
        applied = await stack.file_text(workspace_id, PATH, expected) == expected
        late = late_events(browser.events)
    finally:
        await browser.close()
        await client.close()
    return {
        "round_trip": {name: side.figures() for name, side in sides.items()},
        "every_patch_applied": applied,
        "late_events": late,
        "samples_ms": {name: [round(t.from_last_delta_ms, 3) for t in side.trips] for name, side in sides.items()},
    }


def rows(figures: dict[str, Any]) -> list[report.Row]:
    ide, bare = figures["round_trip"]["ide"], figures["round_trip"]["bare"]
    p50 = ide["from_last_delta_ms"].get("p50")
    sound = figures["sound"]
    return [
        report.row(
            "tool loop: every call answered and chained, every patch applied, turns answered", sound,
            target="yes", met=sound,
        ),
        report.row(
            "tool loop: last tool-call delta -> next response.create with the outputs, p50", p50, unit="ms",
            baseline=bare["from_last_delta_ms"].get("p50"), target=f"<= {TARGET_P50_MS:g} ms",
            met=report.at_most(p50, TARGET_P50_MS),
            note=f"at the tap, scripted engine, {ide['from_last_delta_ms'].get('n')} rounds; "
            "baseline: the bare upstream client chaining the same rounds",
        ),
        report.row(
            "tool loop: the same, p90 / p99",
            f"{ide['from_last_delta_ms'].get('p90')} / {ide['from_last_delta_ms'].get('p99')}", unit="ms",
            baseline=f"{bare['from_last_delta_ms'].get('p90')} / {bare['from_last_delta_ms'].get('p99')}",
            note="no target",
        ),
        report.row(
            "tool loop: response.completed -> next response.create, p50", ide["from_completed_ms"].get("p50"),
            unit="ms", baseline=bare["from_completed_ms"].get("p50"), note="the client's share; no target",
        ),
    ]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    setup = report.Setup()
    this_run = asyncio.current_task()
    assert this_run is not None  # a SIGTERM cancels the run; the stack's exit ends its processes
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    settings = {"SPARK_EDIT_STYLE": EditStyle.APPLY_PATCH.value, "SPARK_MAX_ROUNDS": str(ROUNDS)}
    async with Stack(scripts(args.turns), relay=False, settings=settings) as stack:
        progress(f"stack up in {time.monotonic() - setup.started:.1f}s")
        figures = await measure(args, stack)
    samples = figures.pop("samples_ms")
    ide, bare = figures["round_trip"]["ide"], figures["round_trip"]["bare"]
    figures["sound"] = (
        ide["every_call_answered"] and ide["turns_as_scripted"] and bare["every_call_answered"]
        and bare["turns_as_scripted"] and figures["every_patch_applied"] and figures["late_events"] == 0
    )
    ide_p50, bare_p50 = ide["from_last_delta_ms"].get("p50"), bare["from_last_delta_ms"].get("p50")
    figures["ide_minus_bare_p50_ms"] = round(ide_p50 - bare_p50, 3) if ide_p50 is not None and bare_p50 else None
    figures["target_p50_ms"] = TARGET_P50_MS
    figures["rows"] = rows(figures)
    figures["charts"] = {"toolloop_round_trip_cdf": report.chart(
        "Tool loop: last tool-call delta -> next response.create", "ms", "share of rounds",
        {"IDE": samples["ide"], "bare upstream client": samples["bare"]}, kind="cdf", log_x=True,
    )} if samples["ide"] else {}
    figures["setup"] = setup.finish(turns=args.turns, rounds_per_turn=ROUNDS, rate_tokens_per_s=args.rate)
    return figures


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_bench toolloop", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30, help=f"turns per client, {ROUNDS - 1} round trips each")
    parser.add_argument("--rate", type=float, default=1000.0, help="the engine's pace, tokens/s")
    args = parser.parse_args(argv)
    if args.turns < 1 or not args.rate > 0:
        parser.error("--turns must be >= 1 and --rate > 0")
    return args


def main(argv: list[str]) -> dict[str, Any]:
    return asyncio.run(run(parse(argv)))
