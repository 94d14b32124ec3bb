"""A real IDE server (Daphne, its own SQLite) and headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/lib/chromium/chromium"
ARTIFACTS = ROOT / "test-artifacts"


@dataclass
class IdeServer:
    url: str
    env: dict[str, str]

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        )
        return done.stdout.strip()

    def login_url(self, username: str = "local") -> str:
        return self.manage("spark_login_url", username, "--base", self.url)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start: {log.read_text()}") from None
            time.sleep(0.1)


@contextmanager
def daphne(env: dict[str, str], data: Path) -> Iterator[IdeServer]:
    """The IDE under Daphne with ``env``, on a fresh port, its database migrated."""
    port = _free_port()
    server = IdeServer(url=f"http://127.0.0.1:{port}", env=env)
    server.manage("migrate", "--verbosity", "0")
    log = data / "daphne.log"
    with log.open("w") as out:
        web = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "spark_ide.asgi:application"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(port, web, "daphne", log)
            yield server
        finally:
            web.terminate()
            web.wait(timeout=10)


@pytest.fixture(scope="session")
def ide_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdeServer]:
    """Daphne on its own SQLite, with our model server's scripted engine as the model."""
    require((ROOT / "static/dist/main.js").exists(), "the esbuild bundle is missing: run `make bundle`")
    data = tmp_path_factory.mktemp("ide")
    model_port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SPARK_MODEL"}}
    env.update(
        SPARK_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="spark_ide.settings", SPARK_PROVIDER="local",
        OPENAI_BASE_URL=f"http://127.0.0.1:{model_port}/v1", SPARK_EDIT_STYLE="edits",
        SPARK_REPLAY_LIMIT="200",  # small enough that a page offline for seconds must resync
        SPARK_MAX_OUTPUT_TOKENS="100000",  # the scripted engine is not the small model: no short ceiling
    )
    with with_model_server(env, data, model_port) as server:
        yield server


@pytest.fixture(scope="session")
def small_model_server(ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdeServer]:
    """A second IDE whose prompts ask for whole files, as for the bundled small model: the
    first code fence of an answer is a write to the open file (or main.py). Same model server."""
    data = tmp_path_factory.mktemp("ide-small")
    env = {**ide_server.env, "SPARK_DATA_DIR": str(data), "SPARK_EDIT_STYLE": "whole-file"}
    with daphne(env, data) as server:
        yield server


@contextmanager
def with_model_server(
    env: dict[str, str], data: Path, model_port: int, scripts: Path | None = None,
) -> Iterator[IdeServer]:
    """Our model server's scripted engine on ``model_port`` (knowing ``scripts``, a JSON file
    of name -> text, if given), then the IDE under Daphne with ``env``."""
    model_log = data / "model.log"
    extra = ["--script-file", str(scripts)] if scripts is not None else []
    with model_log.open("w") as model_out:
        model = subprocess.Popen(
            [sys.executable, "-m", "spark_ide.modelserver", "--engine", "scripted", "--port", str(model_port), *extra],
            cwd=ROOT, env=env, stdout=model_out, stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(model_port, model, "the scripted model server", model_log)
            with daphne(env, data) as server:
                yield server
        finally:
            model.terminate()
            model.wait(timeout=10)


# Module scope, not session: Playwright's sync API keeps an event loop running in the main
# thread while it is open, and the asyncio tests that run after these modules need it gone.
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    require(Path(CHROMIUM).exists() or shutil.which("chromium") is not None, "Debian chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


# Helpers for tests that drive the IDE as a person would.

LIVE_WAIT_MS = 20_000


def sign_in(server: IdeServer, page: Any, username: str = "local") -> None:
    page.goto(server.login_url(username))
    page.wait_for_url(f"{server.url}/")  # signed in, the token gone from the address


def open_new_workspace(server: IdeServer, page: Any, name: str) -> str:
    """Sign in, create a workspace from the list and wait for its live editor; returns its URL."""
    sign_in(server, page)
    page.get_by_label("New workspace name").fill(name)
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/w/*/")
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    return str(page.url).split("#")[0]


def create_file(page: Any, path: str) -> None:
    """Create a file from the tree; its tab opens."""
    page.get_by_label("New file path").fill(path)
    page.get_by_title("Create file").click()
    page.locator(".tab.active", has_text=path.rsplit("/", 1)[-1]).wait_for(timeout=LIVE_WAIT_MS)


def server_text(page: Any, path: str) -> str | None:
    """The file's text as the server has it (the HTTP API reads the live document), or None."""
    return page.evaluate(  # type: ignore[no-any-return]
        """async (path) => {
            const workspace = document.getElementById("live").dataset.workspace;
            const url = `/api/workspaces/${workspace}/files/${path.split("/").map(encodeURIComponent).join("/")}`;
            const response = await fetch(url, { headers: { Accept: "text/plain" } });
            return response.ok ? await response.text() : null;
        }""",
        path,
    )


def wait_for_server_text(page: Any, path: str, text: str, timeout_ms: int = LIVE_WAIT_MS) -> None:
    """Wait until the server holds ``text`` as the file's content (typing reached it)."""
    deadline = time.monotonic() + timeout_ms / 1000
    while (current := server_text(page, path)) != text:
        assert time.monotonic() < deadline, f"the server has {current!r} for {path}, not {text!r}"
        page.wait_for_timeout(100)


@contextmanager
def second_person(
    server: IdeServer, owner: Any, chromium: Any, *, role: str, username: str | None = None,
    guest_name: str | None = None,
) -> Iterator[Any]:
    """Someone else, in a browser of their own, who joins the owner's session through its
    invite link for ``role``: signed in as ``username``, or as a guest named ``guest_name``
    (no account: the link asks for a name). Yields their page once it is live."""
    owner.locator(".invites summary").click()
    link = owner.locator(f"#invite-{role}").input_value()
    owner.locator(".invites summary").click()
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    try:
        person = context.new_page()
        errors: list[str] = []
        person.on("pageerror", lambda exc: errors.append(str(exc)))
        if guest_name is None:
            person.goto(server.login_url(username or "bob"))
            person.wait_for_url(f"{server.url}/")
            person.goto(link)  # opening it asks; joining is the button (a POST)
            person.get_by_role("button", name=f"Join as {role}").click()
        else:
            person.goto(link)
            person.get_by_label("Your name").fill(guest_name)
            person.get_by_role("button", name="Join").click()
        person.wait_for_url("**/sessions/*/")
        person.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
        yield person
        assert errors == [], f"JavaScript errors on the second person's page: {errors}"
    finally:
        context.close()
