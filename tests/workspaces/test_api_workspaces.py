from __future__ import annotations

import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_it_creates_a_workspace_with_files(api: Any) -> None:
    response = api.post(
        "/api/workspaces",
        {"name": "demo", "files": {"src/app.py": "print('hi')\n", "README.md": "# Demo\n"}},
        content_type="application/json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "demo"
    uuid.UUID(body["id"])
    files = {f["path"]: f for f in body["files"]}
    assert files["src/app.py"] == {"path": "src/app.py", "size": 12, "language": "Python"}
    assert files["README.md"]["language"] == "Markdown"


def test_it_reads_a_workspace(api: Any) -> None:
    created = api.post("/api/workspaces", {"name": "w", "files": {"a.js": "x"}}, content_type="application/json").json()
    response = api.get(f"/api/workspaces/{created['id']}")
    assert response.status_code == 200
    assert response.json() == {
        "id": created["id"],
        "name": "w",
        "files": [{"path": "a.js", "size": 1, "language": "JavaScript"}],
        "auto_test": None,  # test rounds: the server's default
        "model": "smollm2", "models": ["smollm2"],  # the environment's single model (docs/models.md)
    }


def test_it_lists_only_my_workspaces(api: Any, other_user: Any) -> None:
    from spark_ide.workspaces.services import workspace_create

    workspace_create(owner=other_user, name="theirs")
    api.post("/api/workspaces", {"name": "mine"}, content_type="application/json")
    assert [w["name"] for w in api.get("/api/workspaces").json()] == ["mine"]


def test_it_rejects_a_malformed_body(api: Any) -> None:
    response = api.post("/api/workspaces", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


def test_it_rejects_a_missing_name(api: Any) -> None:
    response = api.post("/api/workspaces", {"files": {}}, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_name"


def test_it_rejects_files_that_are_not_an_object(api: Any) -> None:
    response = api.post("/api/workspaces", {"name": "w", "files": ["a"]}, content_type="application/json")
    assert response.json()["error"]["code"] == "bad_file"


def test_it_rejects_a_bad_path_and_creates_nothing(api: Any) -> None:
    from spark_ide.workspaces.models import Workspace

    response = api.post(
        "/api/workspaces", {"name": "w", "files": {"ok.py": "", "../evil": "x"}}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_path"
    assert Workspace.objects.count() == 0


def test_it_answers_404_for_an_unknown_workspace(api: Any) -> None:
    response = api.get(f"/api/workspaces/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_answers_404_for_a_malformed_workspace_id(api: Any) -> None:
    assert api.get("/api/workspaces/not-a-uuid").json()["error"]["code"] == "not_found"


def test_it_hides_another_users_workspace(api: Any, other_user: Any) -> None:
    from spark_ide.workspaces.services import workspace_create

    theirs = workspace_create(owner=other_user, name="secret", files={"s.py": "key = 1"})
    assert api.get(f"/api/workspaces/{theirs.id}").status_code == 404
    assert api.get(f"/api/workspaces/{theirs.id}/files/s.py").status_code == 404
    assert api.put(f"/api/workspaces/{theirs.id}/files/s.py", b"x", content_type="text/plain").status_code == 404
    assert api.delete(f"/api/workspaces/{theirs.id}/files/s.py").status_code == 404


def test_it_deletes_a_workspace(api: Any) -> None:
    created = api.post("/api/workspaces", {"name": "w"}, content_type="application/json").json()
    assert api.delete(f"/api/workspaces/{created['id']}").status_code == 204
    assert api.get(f"/api/workspaces/{created['id']}").status_code == 404


def test_it_refuses_a_wrong_method(api: Any) -> None:
    response = api.patch("/api/workspaces")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_unknown_api_paths_answer_json_404(api: Any) -> None:
    response = api.get("/api/nothing/here")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "not_found"
