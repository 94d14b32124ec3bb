from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def ws(api: Any) -> str:
    files = {"src/app.py": "a = 1\n"}
    body = api.post("/api/workspaces", {"name": "w", "files": files}, content_type="application/json")
    return str(body.json()["id"])


def url(ws: str, path: str) -> str:
    return f"/api/workspaces/{ws}/files/{path}"


def test_it_reads_a_file_as_utf8_text(api: Any, ws: str) -> None:
    response = api.get(url(ws, "src/app.py"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content == b"a = 1\n"


def test_it_creates_a_file_with_put(api: Any, ws: str) -> None:
    response = api.put(url(ws, "lib/util.ts"), "export const x = 'é';\n".encode(), content_type="text/plain")
    assert response.status_code == 201
    assert response.json() == {"path": "lib/util.ts", "size": 23, "language": "TypeScript"}
    assert api.get(url(ws, "lib/util.ts")).content.decode() == "export const x = 'é';\n"


def test_it_replaces_a_file_with_put(api: Any, ws: str) -> None:
    response = api.put(url(ws, "src/app.py"), b"a = 2\n", content_type="text/plain")
    assert response.status_code == 200
    assert api.get(url(ws, "src/app.py")).content == b"a = 2\n"


def test_it_deletes_a_file(api: Any, ws: str) -> None:
    assert api.delete(url(ws, "src/app.py")).status_code == 204
    assert api.get(url(ws, "src/app.py")).status_code == 404
    assert api.delete(url(ws, "src/app.py")).json()["error"]["code"] == "not_found"


def test_it_answers_404_for_a_missing_file(api: Any, ws: str) -> None:
    response = api.get(url(ws, "nope.py"))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "path",
    ["../x", "a/../../x", "%2E%2E/x", "a/./b", "a//b", "a/", "a%00b", "a\\b", "%01ctl", "x" * 600],
)
def test_it_rejects_a_bad_path(api: Any, ws: str, path: str) -> None:
    response = api.put(url(ws, path), b"data", content_type="text/plain")
    assert response.status_code == 400, path
    assert response.json()["error"]["code"] == "bad_path"


def test_it_rejects_an_absolute_path(api: Any, ws: str) -> None:
    response = api.put(f"/api/workspaces/{ws}/files//etc/passwd", b"x", content_type="text/plain")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_path"


def test_it_rejects_a_path_under_a_file(api: Any, ws: str) -> None:
    response = api.put(url(ws, "src/app.py/inner.py"), b"x", content_type="text/plain")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "path_conflict"


@override_settings(SPARK_MAX_FILE_BYTES=100)
def test_it_rejects_an_oversized_file_and_keeps_the_old_text(api: Any, ws: str) -> None:
    response = api.put(url(ws, "src/app.py"), b"x" * 101, content_type="text/plain")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"
    assert api.get(url(ws, "src/app.py")).content == b"a = 1\n"


@override_settings(SPARK_MAX_FILE_BYTES=100, DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_it_rejects_a_body_over_the_upload_cap(api: Any, ws: str) -> None:
    response = api.put(url(ws, "big.txt"), b"x" * 5000, content_type="text/plain")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"


def test_it_rejects_a_non_utf8_body_and_keeps_the_old_text(api: Any, ws: str) -> None:
    response = api.put(url(ws, "src/app.py"), b"caf\xe9\n", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "not_utf8"
    assert api.get(url(ws, "src/app.py")).content == b"a = 1\n"


@override_settings(SPARK_MAX_WORKSPACE_FILES=2)
def test_it_caps_the_number_of_files(api: Any, ws: str) -> None:
    assert api.put(url(ws, "b.py"), b"", content_type="text/plain").status_code == 201
    response = api.put(url(ws, "c.py"), b"", content_type="text/plain")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_many_files"
