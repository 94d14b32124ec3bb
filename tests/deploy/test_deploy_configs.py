"""The deploy/ files are checked by the real tools: nginx -t and systemd-analyze verify."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def test_the_nginx_site_passes_nginx_t(tmp_path: Path) -> None:
    require(Path(NGINX).exists(), "nginx is not installed")
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n access_log off;\n include {ROOT}/deploy/nginx/spark-ide.conf;\n}}\n"
    )
    done = subprocess.run([NGINX, "-t", "-c", str(conf)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr


def test_the_nginx_site_upgrades_websockets() -> None:
    site = (ROOT / "deploy/nginx/spark-ide.conf").read_text()
    ws_block = site.split("location /ws/", 1)[1].split("}", 1)[0]
    assert "proxy_set_header Upgrade $http_upgrade;" in ws_block
    assert "proxy_set_header Connection $connection_upgrade;" in ws_block
    assert "proxy_http_version 1.1;" in ws_block


def test_the_systemd_unit_passes_systemd_analyze(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    require(analyze is not None, "systemd-analyze is not installed")
    unit = (ROOT / "deploy/systemd/spark-ide.service").read_text().replace("/opt/spark-ide", str(ROOT))
    (tmp_path / "spark-ide.service").write_text(unit)
    done = subprocess.run(
        [str(analyze), "verify", str(tmp_path / "spark-ide.service")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_the_systemd_unit_passes_flags_daphne_accepts() -> None:
    from daphne.cli import CommandLineInterface

    unit = (ROOT / "deploy/systemd/spark-ide.service").read_text()
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    args = exec_start.removeprefix("ExecStart=").split()[1:]
    parsed = CommandLineInterface().parser.parse_args(args)
    assert parsed.application == "spark_ide.asgi:application"
    assert parsed.websocket_max_message_size == 1048576
    assert parsed.proxy_headers
