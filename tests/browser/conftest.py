"""A real IDE server (Daphne, its own SQLite) and headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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
        # A steering edit commits after this pause (600 ms by default): long enough that a test
        # sees its pending state and presses Esc in time on a loaded CI machine (at 600 ms the
        # commit came first now and then).
        SPARK_EDIT_STEER_IDLE_MS="1500",
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


@contextmanager
def scripted_ide(
    ide_server: IdeServer, data: Path, scripts: dict[str, Any], **env: str,
) -> Iterator[IdeServer]:
    """An IDE of its own in ``data`` (``ide_server``'s settings and ``env``) whose model server
    knows ``scripts`` (name -> script: ``[script:NAME]`` in a prompt plays one)."""
    script_file = data / "scripts.json"
    script_file.write_text(json.dumps(scripts), encoding="utf-8")
    model_port = _free_port()
    own = {
        **ide_server.env, "SPARK_DATA_DIR": str(data), "OPENAI_BASE_URL": f"http://127.0.0.1:{model_port}/v1", **env,
    }
    with with_model_server(own, data, model_port, script_file) as server:
        yield server


@contextmanager
def logged_model_ide(
    ide_server: IdeServer, data: Path, scripts: dict[str, Any], **env: str,
) -> Iterator[tuple[IdeServer, Any]]:
    """An IDE of its own in ``data`` (``ide_server``'s settings and ``env``) whose scripted
    model server (knowing ``scripts``) runs in this process and logs every request it receives:
    yields the IDE and that ``RequestLog``, for tests that read what the model was sent."""
    import asyncio

    from spark_ide.modelserver.config import ServerConfig
    from spark_ide.modelserver.engines.scripted import ScriptedEngine, load_scripts
    from spark_ide.modelserver.request_log import RequestLog
    from spark_ide.modelserver.server import ModelServer

    script_file = data / "scripts.json"
    script_file.write_text(json.dumps(scripts), encoding="utf-8")
    log = RequestLog()
    model = ModelServer(ScriptedEngine(load_scripts(script_file), 1000.0, 0.02), ServerConfig(), request_log=log)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(model.start(), loop).result(timeout=10)
    own = {
        **ide_server.env, "SPARK_DATA_DIR": str(data), "OPENAI_BASE_URL": f"http://127.0.0.1:{model.port}/v1", **env,
    }
    try:
        with daphne(own, data) as server:
            yield server, log
    finally:
        asyncio.run_coroutine_threadsafe(model.stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


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


def open_new_workspace(server: IdeServer, page: Any, name: str, username: str = "local") -> str:
    """Sign in, create a workspace from the list and wait for its live editor; returns its URL.
    A test that makes its user a teacher signs in as a user of its own: the server is shared,
    and a teacher's header (its Classroom link) would follow "local" into every later test."""
    sign_in(server, page, username)
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


class Crowd:
    """People present in a session without a browser each: guests who join through its invite
    link over plain HTTP, as a person's browser would (the name form, its CSRF token, the
    session cookie), then hold the session socket open with that cookie, reading what it sends.
    Cheap enough for ten people where ten browser contexts are not."""

    def __init__(self, server: IdeServer, link: str, ws_path: str) -> None:
        self.server = server
        self.link = link
        self.ws_url = server.url.replace("http", "ws", 1) + ws_path
        self.sockets = ExitStack()
        self.readers: list[threading.Thread] = []

    def _cookie(self, name: str) -> str:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        form = opener.open(self.link, timeout=10).read().decode()
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert found, "the invite link's page has no form"
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": found.group(1), "name": name}).encode()
        with opener.open(self.link, data=body, timeout=10) as answer:
            assert "/sessions/" in answer.url, f"{name} was not let in: {answer.url}"
        return "; ".join(f"{cookie.name}={cookie.value}" for cookie in jar)

    def join(self, *names: str) -> None:
        """Each of ``names`` joins as a guest and stays connected until ``close``."""
        from websockets.sync.client import connect

        for name in names:
            headers = {"Cookie": self._cookie(name), "Origin": self.server.url}
            socket_ = self.sockets.enter_context(
                connect(self.ws_url, additional_headers=headers, max_size=None, open_timeout=10)
            )
            reader = threading.Thread(target=self._drain, args=(socket_,), daemon=True)
            reader.start()
            self.readers.append(reader)

    @staticmethod
    def _drain(socket_: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            for _ in socket_:
                pass  # what the room sends is read, so it never waits on these sockets
        except ConnectionClosed:
            pass

    def close(self) -> None:
        self.sockets.close()
        for reader in self.readers:
            reader.join(timeout=5)
        self.readers = []


@contextmanager
def crowd(server: IdeServer, owner: Any, role: str = "viewer") -> Iterator[Crowd]:
    """A ``Crowd`` for the owner's session, joining through its ``role`` invite link."""
    owner.locator(".invites summary").click()
    link = owner.locator(f"#invite-{role}").input_value()
    owner.locator(".invites summary").click()
    people = Crowd(server, link, str(owner.locator("#live").get_attribute("data-ws-path")))
    try:
        yield people
    finally:
        people.close()


def failures(page: Any) -> list[tuple[int, str]]:
    """Every 4xx/5xx response the page gets from now on (the list grows as they come)."""
    bad: list[tuple[int, str]] = []
    page.on("response", lambda answer: bad.append((answer.status, answer.url)) if answer.status >= 400 else None)
    return bad


def live(page: Any) -> None:
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)


def front(page: Any, name: str) -> None:
    page.locator(".tab.active", has_text=name).wait_for(timeout=LIVE_WAIT_MS)


def tab_names(page: Any) -> list[str]:
    return [str(name) for name in page.locator(".tab").evaluate_all("(tabs) => tabs.map((t) => t.dataset.path)")]


def open_every_panel(page: Any) -> None:
    """Open (and close) each panel this person's page has, waiting for what each loads."""
    if page.locator("#guard-setting").count():  # the owner's: loaded after the page, replacing its holder
        page.locator("details#guard-setting").wait_for(timeout=LIVE_WAIT_MS)
    if page.locator(".members summary").count():
        page.locator(".members summary").click()
        page.locator("#members .members-list").wait_for()
        page.locator(".members summary").click()
    if page.locator(".invites summary").count():
        page.locator(".invites summary").click()
        page.locator(".invite-panel input[readonly]").first.wait_for()
        page.locator(".invites summary").click()
    for panel in ("#public-share", "#guard-setting"):
        if page.locator(f"{panel} summary").count():
            page.locator(f"{panel} summary").click()
            page.locator(f"{panel} .invite-panel").wait_for()
            page.locator(f"{panel} summary").click()
    page.locator(".history-diff summary").first.click()
    page.locator(".history-diff .diff-body .diff").first.wait_for(timeout=LIVE_WAIT_MS)
    for toggle in ("#follow", "#present"):  # on, then off again
        page.locator(toggle).click()
        page.locator(toggle).click()
