from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from spark_ide.accounts.services import AccountError, local_user_ensure, login_token_create
from spark_ide.accounts.site import running_at
from spark_ide.ops.daphne_flags import SLOW_SOCKETS, STORM_PATIENCE


def _wait_for_port(host: str, port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CommandError(f"the server exited with code {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise CommandError(f"nothing listens on {host}:{port} after {timeout:.0f} s")


def _local_user(username: str) -> User:
    try:
        return local_user_ensure(username)
    except AccountError as exc:
        raise CommandError(exc.message) from None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = (
        "Start the IDE on the embedded default: the local model server and Daphne, "
        "then print a one-time sign-in URL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("SPARK_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("SPARK_PORT", "8000")))
        parser.add_argument("--user", default="local", help="the local user to sign in as")
        parser.add_argument(
            "--model-port", type=int, default=int(os.environ.get("SPARK_MODELSERVER_PORT", "8765"))
        )
        parser.add_argument(
            "--no-modelserver", action="store_true", help="use the model provider configured in the environment"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        # Ctrl+C, and SIGTERM from a service manager, stop both servers cleanly (a shell that
        # starts us in the background may have left SIGINT ignored).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        call_command("migrate", interactive=False, verbosity=0)
        user = _local_user(options["user"])
        children: list[subprocess.Popen[bytes]] = []
        try:
            env = dict(os.environ)
            local = env.get("SPARK_PROVIDER", "local") == "local"
            if local and not options["no_modelserver"]:
                model_port = options["model_port"]
                self.stdout.write(f"Starting the local model server (SmolLM2) on port {model_port}...")
                children.append(
                    subprocess.Popen(  # noqa: S603 - our own interpreter and module
                        [sys.executable, "-m", "spark_ide.modelserver", "--port", str(model_port)]
                    )
                )
                _wait_for_port("127.0.0.1", model_port, children[-1], timeout=60)
                env.setdefault("OPENAI_BASE_URL", f"http://127.0.0.1:{model_port}/v1")
            server = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                 "--websocket-max-message-size", "1048576", *SLOW_SOCKETS, *STORM_PATIENCE,
                 "spark_ide.asgi:application"],
                env=env,
            )
            children.append(server)
            _wait_for_port(host, port, server, timeout=30)
            shown = "127.0.0.1" if host in {"0.0.0.0", "::"} else host  # noqa: S104
            url = f"http://{shown}:{port}"
            with running_at(url):  # `spark_login_url` prints links to this server while it runs
                key = login_token_create(user=user)
                self.stdout.write(self.style.SUCCESS("\nSpark IDE is running. Open this link to sign in:\n"))
                self.stdout.write(f"    {url}/?token={key}\n")
                self.stdout.write("(the link works once; run `manage.py spark_login_url` for another)\n")
                server.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for child in reversed(children):
                if child.poll() is None:
                    child.send_signal(signal.SIGINT)
                    try:
                        child.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        child.kill()
