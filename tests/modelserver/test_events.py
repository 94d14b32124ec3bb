from __future__ import annotations

from spark_ide.modelserver.engines.scripted import split_tokens

from .protocol_client import Client, text_of, types_of

STREAM_ORDER = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
]
CLOSING_ORDER = [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


async def test_it_streams_every_event_in_openai_order(ws: Client) -> None:
    events = await ws.run("[say]Hello there, world![/say]")
    kinds = types_of(events)
    assert kinds[:4] == STREAM_ORDER
    assert kinds[-4:] == CLOSING_ORDER
    assert set(kinds[4:-4]) == {"response.output_text.delta"}
    assert text_of(events) == "Hello there, world!"


async def test_it_numbers_events_from_zero(ws: Client) -> None:
    events = await ws.run("[say]count me[/say]")
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


async def test_it_keeps_one_response_id_and_item_id(ws: Client) -> None:
    events = await ws.run("[say]ids stay put[/say]")
    response_ids = {e["response"]["id"] for e in events if "response" in e}
    assert len(response_ids) == 1
    assert response_ids.pop().startswith("resp_")
    item_ids = {e["item_id"] for e in events if "item_id" in e}
    item_ids |= {e["item"]["id"] for e in events if "item" in e}
    assert len(item_ids) == 1
    assert item_ids.pop().startswith("msg_")


async def test_it_reports_the_response_object_like_openai(ws: Client) -> None:
    events = await ws.run(
        "[say]done[/say]",
        instructions="Be brief.",
        reasoning={"effort": "low"},
        max_output_tokens=100,
        temperature=0.5,
        store=False,
    )
    created, completed = events[0]["response"], events[-1]["response"]
    assert created["object"] == "response"
    assert created["status"] == "in_progress"
    assert created["output"] == []
    assert created["usage"] is None
    assert completed["status"] == "completed"
    assert completed["instructions"] == "Be brief."
    assert completed["reasoning"]["effort"] == "low"
    assert completed["max_output_tokens"] == 100
    assert completed["temperature"] == 0.5
    assert completed["store"] is False
    assert completed["model"] == "smollm2"
    assert completed["previous_response_id"] is None
    assert completed["output"] == [
        {
            "id": events[2]["item"]["id"],
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        }
    ]


async def test_it_counts_tokens_in_usage(ws: Client) -> None:
    text = "Counting tokens, four characters at most."
    events = await ws.run(f"[say]{text}[/say]")
    usage = events[-1]["response"]["usage"]
    assert usage["output_tokens"] == len(split_tokens(text))
    assert usage["input_tokens"] == len(split_tokens(f"[say]{text}[/say]"))
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


async def test_it_closes_the_item_with_the_full_text(ws: Client) -> None:
    events = await ws.run("[say]whole text\non two lines[/say]")
    by_type = {e["type"]: e for e in events}
    assert by_type["response.output_text.done"]["text"] == "whole text\non two lines"
    part = by_type["response.content_part.done"]["part"]
    assert part == {"type": "output_text", "text": "whole text\non two lines", "annotations": []}
    assert by_type["response.output_item.done"]["item"]["status"] == "completed"


async def test_it_accepts_message_items_as_input(ws: Client) -> None:
    events = await ws.run(
        [
            {"role": "developer", "content": "Answer in one word."},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "[say]ok"},
                    {"type": "input_text", "text": "ay[/say]"},
                ],
            },
        ]
    )
    assert events[-1]["type"] == "response.completed"
    assert text_of(events) == "okay"


async def test_it_plays_the_default_text_without_directives(ws: Client) -> None:
    events = await ws.run("Write me something.")
    assert events[-1]["type"] == "response.completed"
    assert text_of(events).startswith("Hello! I am the scripted engine")
