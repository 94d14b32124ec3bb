"""Reading the files of deploy/ (systemd units, the compose file, the nginx upstreams), and
what they may start: the project's own commands, each checked by its own parser (Daphne's,
Celery's, the model server's, Django's), so a renamed module or a flag the program does not
have fails here instead of on a server."""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from django.conf import settings
from django.core.management import CommandError

ROOT = Path(__file__).resolve().parents[2]
ASGI_APPLICATION = "spark_ide.asgi:application"
UNITS = ROOT / "deploy/systemd"
TARGET = "spark-ide.target"
DAPHNE_UNIT = "spark-ide-daphne@.service"
COMPOSE = ROOT / "deploy/docker-compose.yml"

T = TypeVar("T")
Unit = dict[str, dict[str, list[str]]]


def read_unit(path: Path) -> Unit:
    """Sections -> key -> every value given (systemd allows a key more than once, which
    configparser refuses)."""
    unit: Unit = {}
    section: dict[str, list[str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = unit.setdefault(line[1:-1], {})
            continue
        assert section is not None, f"{path.name}: {line!r} before any section"
        key, equals, value = line.partition("=")
        assert equals, f"{path.name}: {line!r} is not key=value"
        section.setdefault(key.strip(), []).append(value.strip())
    return unit


def unit_files() -> list[Path]:
    return sorted(UNITS.glob("*.service")) + sorted(UNITS.glob("*.target"))


def wanted(unit: Unit) -> list[str]:
    return [name for value in unit["Unit"].get("Wants", []) for name in value.split()]


def daphne_sockets() -> set[str]:
    """The sockets of the Daphne instances spark-ide.target starts."""
    (exec_start,) = read_unit(UNITS / DAPHNE_UNIT)["Service"]["ExecStart"]
    argv = shlex.split(exec_start)
    template = argv[argv.index("--unix-socket") + 1]
    prefix = DAPHNE_UNIT.removesuffix(".service")  # spark-ide-daphne@
    names = wanted(read_unit(UNITS / TARGET))
    instances = [name.removeprefix(prefix).removesuffix(".service") for name in names if name.startswith(prefix)]
    return {template.replace("%i", instance) for instance in instances}


def compose_services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return dict(loaded["services"])


def upstream_servers(site: str) -> list[str]:
    """The ``server`` entries of the site's ``upstream spark_ide`` block."""
    block = re.search(r"upstream spark_ide \{(.*?)\}", site, flags=re.DOTALL)
    assert block is not None, "no upstream spark_ide block"
    return re.findall(r"^\s*server\s+(\S+?);", block.group(1), flags=re.MULTILINE)


def check_command(argv: Sequence[str]) -> None:
    """Raise AssertionError unless ``argv`` runs a command the project has, with flags it takes."""
    program, args = Path(argv[0]).name, list(argv[1:])
    if program == "sh":
        assert args[:1] == ["-c"] and len(args) == 2, f"sh takes one -c script: {argv}"
        for part in args[1].split("&&"):
            check_command(shlex.split(part))
    elif program == "daphne":
        _check_daphne(args)
    elif program == "celery":
        _check_celery(args)
    elif program in {"python", "python3"}:
        _check_python(args)
    else:
        raise AssertionError(f"{argv[0]} is not a command the project has")


def _check_daphne(args: list[str]) -> None:
    from daphne.cli import CommandLineInterface

    parsed = _parsed(lambda: CommandLineInterface().parser.parse_args(args), "daphne", args)
    assert parsed.application == ASGI_APPLICATION, parsed.application
    assert parsed.unix_socket or parsed.port, "daphne needs a socket or a port to listen on"
    assert parsed.proxy_headers, "behind nginx, client addresses come from its headers"
    # Daphne's own cap on a message must let through what the session socket accepts.
    assert parsed.websocket_max_message_size >= settings.SPARK_WS_MAX_MESSAGE_BYTES
    module, _, name = ASGI_APPLICATION.partition(":")
    assert callable(getattr(importlib.import_module(module), name))


def _check_celery(args: list[str]) -> None:
    import celery
    from celery.app.utils import find_app
    from celery.bin.base import CLIContext
    from celery.bin.celery import celery as cli

    at = next((i for i, token in enumerate(args) if token in cli.commands), None)
    assert at is not None, f"celery {args} names none of its commands"
    top = cli.make_context("celery", args[: at + 1])  # the -A option and the command's name
    app = find_app(top.params["app"])
    assert isinstance(app, celery.Celery), f"-A {top.params['app']} is not the project's Celery app"
    assert app.main == "spark_ide"
    top.obj = CLIContext(app=app, no_color=True, workdir=None, quiet=True)
    cli.commands[args[at]].make_context(args[at], args[at + 1 :], parent=top)  # its flags, by click


def _check_python(args: list[str]) -> None:
    if args[:2] == ["-m", "spark_ide.modelserver"]:
        from spark_ide.modelserver.cli import build_parser, config_from

        config_from(_parsed(lambda: build_parser().parse_args(args[2:]), "the model server", args))
        return
    assert args[:1] == ["manage.py"] and len(args) >= 2, f"python runs the model server or manage.py: {args}"
    from django.core.management import get_commands, load_command_class

    name = args[1]
    assert name in get_commands(), f"manage.py has no command {name}"
    command = load_command_class(get_commands()[name], name)
    _parsed(lambda: command.create_parser("manage.py", name).parse_args(args[2:]), f"manage.py {name}", args)


def _parsed(parse: Callable[[], T], what: str, args: list[str]) -> T:
    """argparse reports bad flags by exiting (Django's parser by raising); here either is a
    failed assertion."""
    try:
        return parse()
    except (SystemExit, CommandError) as exc:
        raise AssertionError(f"{what} refuses {args}") from exc
