"""nginx with a site of deploy/nginx/ as files that are not installed: a throwaway main
config (its own prefix, pid and logs) includes the site inside an ``http`` block, with the
shared locations at ``snippets/`` beside it, as /etc/nginx has them."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITES = ROOT / "deploy/nginx"
LOCATIONS = SITES / "snippets/spark-ide-locations.conf"


def nginx_binary() -> str | None:
    found = shutil.which("nginx") or "/usr/sbin/nginx"
    return found if Path(found).exists() else None


def nginx_config(prefix: Path, site: str) -> Path:
    """Write the main config for ``site`` under ``prefix``; its path."""
    conf = prefix / "conf"
    (conf / "snippets").mkdir(parents=True, exist_ok=True)
    shutil.copy(LOCATIONS, conf / "snippets" / LOCATIONS.name)
    (conf / "site.conf").write_text(site)
    (conf / "nginx.conf").write_text(
        f"pid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\nevents {{}}\n"
        "http {\n    access_log off;\n    include site.conf;\n}\n"
    )
    return conf / "nginx.conf"


def nginx_command(prefix: Path, config: Path, *extra: str) -> list[str]:
    nginx = nginx_binary()
    assert nginx is not None
    return [nginx, "-p", str(prefix), "-c", str(config), "-e", str(prefix / "error.log"), *extra]


@contextmanager
def compose_site_in_front(prefix: Path, ports: list[int]) -> Iterator[int]:
    """The compose site (deploy/nginx/compose.conf) in front of Daphne processes on
    ``ports`` of this machine instead of the compose services; the port it listens on."""
    site = (SITES / "compose.conf").read_text()
    for index, port in enumerate(ports, start=1):
        site = site.replace(f"daphne-{index}:8000", f"127.0.0.1:{port}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        listen = probe.getsockname()[1]
    site = site.replace("listen 80;", f"listen 127.0.0.1:{listen};")
    config = nginx_config(prefix, site)
    process = subprocess.Popen(nginx_command(prefix, config, "-g", "daemon off;"), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", listen), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {(prefix / 'error.log').read_text()[-2000:]}") from None
                time.sleep(0.05)
        yield listen
    finally:
        process.terminate()
        process.wait(timeout=10)
