"""Settings come from the environment through one typed helper; REDIS_URL switches backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from spark_ide.env import ConfigError, envbool, envchoice, envint, envlist, envmoney, secret_key
from tests.conftest import port_open, require

ROOT = Path(__file__).resolve().parents[1]


def test_envbool_reads_the_usual_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, value in [("1", True), ("yes", True), ("TRUE", True), ("0", False), ("off", False), ("", False)]:
        monkeypatch.setenv("SPARK_X", raw)
        assert envbool("SPARK_X", not value) is value
    monkeypatch.delenv("SPARK_X")
    assert envbool("SPARK_X", True) is True


def test_bad_values_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_X", "maybe")
    with pytest.raises(ConfigError, match="SPARK_X must be a boolean"):
        envbool("SPARK_X", False)
    monkeypatch.setenv("SPARK_N", "ten")
    with pytest.raises(ConfigError, match="SPARK_N must be an integer"):
        envint("SPARK_N", 1)
    monkeypatch.setenv("SPARK_L", " a, b ,,")
    assert envlist("SPARK_L", []) == ["a", "b"]


def test_a_choice_is_one_of_its_words_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_C", raising=False)
    assert envchoice("SPARK_C", "on", ("on", "off")) == "on"
    for raw, value in [(" OFF ", "off"), ("On", "on"), ("", "on")]:  # empty: as unset (compose passes "")
        monkeypatch.setenv("SPARK_C", raw)
        assert envchoice("SPARK_C", "on", ("on", "off")) == value
    monkeypatch.setenv("SPARK_C", "yes")
    with pytest.raises(ConfigError, match="SPARK_C must be one of on, off, got 'yes'"):
        envchoice("SPARK_C", "on", ("on", "off"))


def test_the_secret_key_is_generated_once_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_SECRET_KEY", raising=False)
    first = secret_key(tmp_path, production=False)
    assert len(first) > 40
    assert secret_key(tmp_path, production=False) == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_production_requires_the_secret_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_SECRET_KEY", raising=False)
    with pytest.raises(ConfigError, match="SPARK_SECRET_KEY is required"):
        secret_key(tmp_path, production=True)
    monkeypatch.setenv("SPARK_SECRET_KEY", "from-the-env")
    assert secret_key(tmp_path, production=True) == "from-the-env"


REDIS_CHECK = """
import asyncio, json, django
django.setup()
from django.conf import settings
from channels.layers import get_channel_layer
from spark_ide.celery import app

async def roundtrip():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("spark-test", channel)
    await layer.group_send("spark-test", {"type": "hello", "n": 7})
    message = await asyncio.wait_for(layer.receive(channel), 5)
    await layer.group_discard("spark-test", channel)
    return message

message = asyncio.run(roundtrip())
with app.connection_for_write() as connection:
    connection.ensure_connection(max_retries=1)
    transport = connection.transport_cls
print(json.dumps({
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "message": message,
    "broker": settings.CELERY_BROKER_URL,
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "transport": transport,
}))
"""


def test_redis_url_selects_the_redis_channel_layer_and_broker(tmp_path: Path) -> None:
    require(port_open("127.0.0.1", 6379), "Redis is not running on 127.0.0.1:6379")
    env = {**os.environ, "REDIS_URL": "redis://127.0.0.1:6379/5", "SPARK_DATA_DIR": str(tmp_path)}
    env["DJANGO_SETTINGS_MODULE"] = "spark_ide.settings"
    done = subprocess.run(
        [sys.executable, "-c", REDIS_CHECK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["layer"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert result["message"] == {"type": "hello", "n": 7}
    assert result["broker"] == "redis://127.0.0.1:6379/5"
    assert result["eager"] is False
    assert result["transport"] == "redis"


def test_without_redis_the_embedded_default_is_in_process(settings: object) -> None:
    from django.conf import settings as live

    if os.environ.get("REDIS_URL"):
        pytest.skip("REDIS_URL is set for this run")
    assert live.CHANNEL_LAYERS["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert live.CELERY_TASK_ALWAYS_EAGER is True


def settings_of(tmp_path: Path, names: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Start the settings in a fresh interpreter with only ``env`` of the project's variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "OPENAI_"))}
    code = f"from spark_ide import settings as s; print([getattr(s, n) for n in {names.split()!r}])"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**clean, "SPARK_DATA_DIR": str(tmp_path), **env},
        capture_output=True, text=True, timeout=60,
    )


def test_envmoney_reads_dollars_and_refuses_what_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_M", raising=False)
    assert envmoney("SPARK_M") is None
    for raw, value in (("", None), ("2.50", Decimal("2.50")), (" 0 ", Decimal(0))):
        monkeypatch.setenv("SPARK_M", raw)
        assert envmoney("SPARK_M") == value
    for bad in ("-1", "NaN", "inf", "$2", "two"):
        monkeypatch.setenv("SPARK_M", bad)
        with pytest.raises(ConfigError, match="SPARK_M must be an amount of US dollars"):
            envmoney("SPARK_M")


def test_test_rounds_and_the_models_share_of_run_output_are_read_at_startup(tmp_path: Path) -> None:
    names = "SPARK_AUTO_TEST SPARK_RUN_OUTPUT_TO_MODEL"
    assert settings_of(tmp_path, names).stdout.strip() == "[True, 8192]"
    done = settings_of(tmp_path, names, SPARK_AUTO_TEST="off", SPARK_RUN_OUTPUT_TO_MODEL="256")
    assert done.stdout.strip() == "[False, 256]", done.stderr


def test_the_replay_logs_budget_is_read_at_startup(tmp_path: Path) -> None:
    assert settings_of(tmp_path, "SPARK_REPLAY_BYTES").stdout.strip() == "[1000000]"
    done = settings_of(tmp_path, "SPARK_REPLAY_BYTES", SPARK_REPLAY_BYTES="0")
    assert done.stdout.strip() == "[0]", done.stderr


def test_the_step_window_is_read_at_startup(tmp_path: Path) -> None:
    assert settings_of(tmp_path, "SPARK_STEP_MS").stdout.strip() == "[4]"
    done = settings_of(tmp_path, "SPARK_STEP_MS", SPARK_STEP_MS="0")
    assert done.stdout.strip() == "[0]", done.stderr


@pytest.mark.parametrize(("env", "said"), [
    ({"SPARK_AUTO_TEST": "sometimes"}, "SPARK_AUTO_TEST must be one of on, off, got 'sometimes'"),
    ({"SPARK_RUN_OUTPUT_TO_MODEL": "255"}, "SPARK_RUN_OUTPUT_TO_MODEL must be at least 256 bytes, got 255"),
    ({"SPARK_RUN_OUTPUT_TO_MODEL": "8k"}, "SPARK_RUN_OUTPUT_TO_MODEL must be an integer, got '8k'"),
    ({"SPARK_REPLAY_BYTES": "-1"}, "SPARK_REPLAY_BYTES must be 0 or more, got -1"),
    ({"SPARK_STEP_MS": "101"}, "SPARK_STEP_MS must be from 0 to 100, got 101"),
    ({"SPARK_WS_PACE_MS": "-1"}, "SPARK_WS_PACE_MS must be from 0 to 100, got -1"),
    ({"SPARK_KEYS_OLD_SECRETS": "x" * 40 + ",short"},
     "SPARK_KEYS_SECRET and each of SPARK_KEYS_OLD_SECRETS must be at least 32 characters"),
    ({"SPARK_DAILY_BUDGET_USD": "ten"}, "SPARK_DAILY_BUDGET_USD must be an amount of US dollars, 0 or more (e.g. "
                                        "2.50), got 'ten'"),
])
def test_a_bad_value_stops_the_server_at_startup(tmp_path: Path, env: dict[str, str], said: str) -> None:
    done = settings_of(tmp_path, "SPARK_AUTO_TEST", **env)
    assert done.returncode != 0 and "ConfigError" in done.stderr and said in done.stderr
