"""The nginx sites of deploy/nginx/, checked by ``nginx -t`` as files that are not installed:
as ``tests.support.nginx`` sets them up.

The compose site names its upstreams daphne-1 and daphne-2, which resolve only on the compose
network, and nginx -t fails on a name it cannot resolve. So it is checked as a generated copy
with those two names mapped to 127.0.0.1, and nothing else changed; that the names are the
compose services' is checked separately, from the compose file."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import require
from tests.deploy.deployfiles import ROOT, compose_services, daphne_sockets, upstream_servers
from tests.support.nginx import LOCATIONS, SITES, nginx_binary, nginx_command, nginx_config


def nginx_t(tmp_path: Path, site: str) -> subprocess.CompletedProcess[str]:
    require(nginx_binary() is not None, "nginx is not installed (make browser-deps installs nginx-light)")
    config = nginx_config(tmp_path, site)
    return subprocess.run(nginx_command(tmp_path, config, "-t"), capture_output=True, text=True, timeout=30)


def test_the_host_site_passes_nginx_t(tmp_path: Path) -> None:
    done = nginx_t(tmp_path, (SITES / "spark-ide.conf").read_text())
    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr


def test_the_compose_site_passes_nginx_t_with_its_hosts_mapped(tmp_path: Path) -> None:
    site = (SITES / "compose.conf").read_text()
    mapped, count = re.subn(r"server daphne-(\d+):8000;", r"server 127.0.0.1:800\1;", site)
    assert count == 2
    assert "daphne-" not in re.sub(r"#.*", "", mapped)  # no other name left to resolve
    done = nginx_t(tmp_path, mapped)
    assert done.returncode == 0, done.stderr


def test_a_broken_site_fails_nginx_t(tmp_path: Path) -> None:
    """The check is real: the same set-up refuses a site with an error in it."""
    broken = (SITES / "spark-ide.conf").read_text().replace("listen 80;", "listen 80", 1)
    done = nginx_t(tmp_path, broken)
    assert done.returncode != 0
    assert "test failed" in done.stderr


def test_the_host_upstream_is_the_sockets_of_the_daphne_units() -> None:
    servers = upstream_servers((SITES / "spark-ide.conf").read_text())
    assert len(servers) == 2
    assert {server.removeprefix("unix:") for server in servers} == daphne_sockets()


def test_the_compose_upstream_is_the_compose_daphnes() -> None:
    servers = upstream_servers((SITES / "compose.conf").read_text())
    expected = set()
    for name, service in compose_services().items():
        if service.get("command", [""])[0] == "daphne":
            command = service["command"]
            expected.add(f"{name}:{command[command.index('-p') + 1]}")
    assert len(expected) == 2
    assert set(servers) == expected


def test_the_session_sockets_are_upgraded_and_not_buffered() -> None:
    locations = LOCATIONS.read_text()
    ws_block = locations.split("location /ws/", 1)[1].split("}", 1)[0]
    for line in (
        "proxy_http_version 1.1;",
        "proxy_set_header Upgrade $http_upgrade;",
        "proxy_set_header Connection $connection_upgrade;",
        "proxy_buffering off;",
        "proxy_read_timeout 1h;",
    ):
        assert line in ws_block, line
    for site in ("spark-ide.conf", "compose.conf"):
        text = (SITES / site).read_text()
        assert "map $http_upgrade $connection_upgrade" in text, site
        assert "include snippets/spark-ide-locations.conf;" in text, site


def test_static_files_come_from_where_collectstatic_writes() -> None:
    """settings: STATIC_ROOT = $SPARK_DATA_DIR/static, the data directory of the units'
    environment file and of the image, which compose shares with nginx as a volume."""
    from django.conf import settings

    alias = re.search(r"location /static/ \{\s*alias (\S+);", LOCATIONS.read_text())
    assert alias is not None
    assert settings.STATIC_URL == "/static/"
    env_file = re.search(r"^SPARK_DATA_DIR=(\S+)$", (ROOT / "deploy/env.example").read_text(), flags=re.MULTILINE)
    image = re.search(r"SPARK_DATA_DIR=(\S+)", (ROOT / "deploy/Dockerfile").read_text())
    assert env_file is not None and image is not None
    assert alias.group(1) == f"{env_file.group(1)}/static/" == f"{image.group(1)}/static/"
    for name in ("nginx", "migrate"):
        assert any(
            volume.split(":")[:2] == ["static", alias.group(1).rstrip("/")]
            for volume in compose_services()[name]["volumes"]
        ), f"{name} does not mount the static volume where nginx reads it"
