"""The browser's copy of the protocol (static/src/protocol.js) is generated from the Python
definitions and committed: these fail when it is stale, and say how to refresh it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from spark_ide.live import events
from spark_ide.live.protocol_export import COMMAND, TARGET, constant_name, main, render, sections


def test_the_committed_protocol_js_is_generated_from_the_current_definitions() -> None:
    assert TARGET.exists(), f"{TARGET} is missing: run `{COMMAND}` (or `make protocol`)"
    assert TARGET.read_text(encoding="utf-8") == render(), (
        f"{TARGET.relative_to(TARGET.parents[2])} is stale: the protocol's definitions changed since it was "
        f"generated. Run `{COMMAND}` (or `make protocol`), commit the file and rebuild the bundle."
    )


def test_every_event_class_of_the_module_is_in_the_list_the_browser_gets() -> None:
    """A new event dataclass that is not added to ``EVENTS`` would be unknown to the page."""
    defined = {
        cls for _, cls in inspect.getmembers(events, inspect.isclass)
        if issubclass(cls, events.Event) and cls.__module__ == events.__name__ and "type" in vars(cls)
    }
    assert defined == set(events.EVENTS)
    types = [cls.type for cls in events.EVENTS]
    assert len(types) == len(set(types))


def test_constant_names_are_distinct_within_each_export() -> None:
    assert constant_name("turn.started") == "TURN_STARTED"
    assert constant_name("document.adopted") == "DOCUMENT_ADOPTED"
    for section in sections():
        keys = [key for key, _ in section.values]
        assert len(keys) == len(set(keys)), section.name


def test_check_fails_on_a_stale_file_and_names_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "protocol.js"
    assert main(["--check", "--output", str(out)]) == 1  # missing
    out.write_text(render().replace('"turn.started"', '"turn.begun"'), encoding="utf-8")
    assert main(["--check", "--output", str(out)]) == 1
    assert COMMAND in capsys.readouterr().err
    assert main(["--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render()
    assert main(["--check", "--output", str(out)]) == 0
