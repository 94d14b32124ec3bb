"""The HTTP API's error codes are spelled once (``api_errors.ApiCode``): the docs' table lists
each with the status the API answers it with, and a code shared with the socket is the socket's."""

from __future__ import annotations

import re
from pathlib import Path

from spark_ide.api_errors import ApiCode
from spark_ide.live.events import ErrorCode

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def documented() -> dict[str, int]:
    text = DOCS.read_text()
    table = text[text.index("## Errors of the HTTP API"):]
    table = table[: table.index("\n## ")]
    return {code: int(status) for status, code in re.findall(r"^\| (\d{3}) \| `([a-z_0-9]+)` \|", table, re.M)}


def test_every_documented_code_is_answered_with_its_documented_status() -> None:
    rows = documented()
    assert len(rows) >= 15
    for code, status in rows.items():
        assert ApiCode(code).status == status, code


def test_a_code_the_socket_has_too_is_the_socket_s_own() -> None:
    shared = {code for code in ApiCode if code.value in ErrorCode._value2member_map_}
    assert shared == {
        ApiCode.MALFORMED_JSON, ApiCode.BAD_PATH, ApiCode.TOO_MANY_FILES, ApiCode.PATH_CONFLICT, ApiCode.BAD_FIELD,
        ApiCode.FORBIDDEN,
    }
