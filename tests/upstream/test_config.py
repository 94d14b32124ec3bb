"""Configuration from the environment, socket URL derivation, and key hygiene."""

from __future__ import annotations

import pytest

from spark_ide.upstream import CancelStrategy, ConfigError, ProviderConfig, Transport
from spark_ide.upstream.config import http_base_url, websocket_url

KEY = "sk-secret-abcdef123456"


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://api.openai.com/v1", "wss://api.openai.com/v1/responses"),
        ("https://api.openai.com/v1/", "wss://api.openai.com/v1/responses"),
        ("http://127.0.0.1:8765/v1", "ws://127.0.0.1:8765/v1/responses"),
        ("https://proxy.example/openai/v1?tenant=a", "wss://proxy.example/openai/v1/responses?tenant=a"),
        ("wss://edge.example/v1", "wss://edge.example/v1/responses"),
    ],
)
def test_it_derives_the_socket_url_like_the_sdk(base: str, expected: str) -> None:
    assert websocket_url(base) == expected


@pytest.mark.parametrize("base", ["ftp://host/v1", "api.openai.com/v1", "https://"])
def test_it_rejects_a_bad_base_url(base: str) -> None:
    with pytest.raises(ConfigError):
        websocket_url(base)


def test_it_turns_a_socket_base_back_into_http() -> None:
    assert http_base_url("wss://edge.example/v1/") == "https://edge.example/v1"


def test_it_defaults_to_the_local_model_server() -> None:
    config = ProviderConfig.from_env({})
    assert config.provider == "local"
    assert config.model == "smollm2"
    assert config.profile.cancel_strategy is CancelStrategy.NATIVE_CANCEL
    assert config.websocket_url.startswith("ws://127.0.0.1:")


def test_it_reads_openai_settings_from_the_environment() -> None:
    env = {"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "SPARK_MODEL": "gpt-x"}
    config = ProviderConfig.from_env(env)
    assert config.websocket_url == "wss://api.openai.com/v1/responses"
    assert config.api_key == KEY
    assert config.profile.cancel_strategy is CancelStrategy.HOT_SPARE
    assert config.profile.beta_header


def test_it_reads_how_long_to_wait_on_the_model_from_the_environment() -> None:
    default = ProviderConfig.from_env({})
    assert (default.connect_timeout_s, default.first_byte_timeout_s, default.idle_timeout_s) == (10, 60, 120)
    assert default.retry.max_tries == 5
    env = {"SPARK_UPSTREAM_CONNECT_S": "2.5", "SPARK_UPSTREAM_FIRST_BYTE_S": "15",
           "SPARK_UPSTREAM_STALL_S": "30", "SPARK_UPSTREAM_CONNECT_TRIES": "2"}
    config = ProviderConfig.from_env(env)
    assert (config.connect_timeout_s, config.first_byte_timeout_s, config.idle_timeout_s) == (2.5, 15, 30)
    assert config.retry.max_tries == 2


def test_it_uses_native_steer_for_models_the_profile_lists() -> None:
    env = {"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "SPARK_MODEL": "gpt-x",
           "SPARK_STEER_MODELS": "gpt-y, gpt-x"}
    assert ProviderConfig.from_env(env).profile.cancel_strategy is CancelStrategy.NATIVE_STEER


def test_it_reads_an_openai_compatible_server() -> None:
    env = {"SPARK_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "SPARK_MODEL": "llama"}
    config = ProviderConfig.from_env(env)
    assert config.profile.transport is Transport.CHAT_SSE
    assert config.profile.cancel_strategy is CancelStrategy.CLOSE_STREAM


def test_the_environment_can_ask_to_stop_a_response_by_reconnecting() -> None:
    """For a Responses server that takes neither ``response.cancel`` nor a second socket."""
    env = {"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "SPARK_MODEL": "gpt-x",
           "SPARK_UPSTREAM_CANCEL": "reconnect"}
    profile = ProviderConfig.from_env(env).profile
    assert profile.cancel_strategy is CancelStrategy.RECONNECT and not profile.keeps_spare
    assert ProviderConfig.from_env({}).profile.cancel_strategy is CancelStrategy.NATIVE_CANCEL  # unset: the best


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"SPARK_UPSTREAM_CANCEL": "politely"}, "SPARK_UPSTREAM_CANCEL must be one of native_cancel"),
        ({"SPARK_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "SPARK_MODEL": "m",
          "SPARK_UPSTREAM_CANCEL": "reconnect"}, "cannot cancel by reconnect"),
        ({"SPARK_UPSTREAM_CANCEL": "native_steer"}, "cannot cancel by native_steer"),
        ({"SPARK_PROVIDER": "anthropic"}, "SPARK_PROVIDER"),
        ({"SPARK_PROVIDER": "openai", "SPARK_MODEL": "gpt-x"}, "OPENAI_API_KEY"),
        ({"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": KEY}, "SPARK_MODEL"),
        ({"SPARK_PROVIDER": "openai-compatible", "SPARK_MODEL": "m"}, "OPENAI_BASE_URL"),
        ({"OPENAI_BASE_URL": "gopher://x"}, "base URL"),
        ({"SPARK_UPSTREAM_STALL_S": "0"}, "SPARK_UPSTREAM_STALL_S"),
        ({"SPARK_UPSTREAM_FIRST_BYTE_S": "soon"}, "SPARK_UPSTREAM_FIRST_BYTE_S"),
        ({"SPARK_UPSTREAM_CONNECT_S": "nan"}, "SPARK_UPSTREAM_CONNECT_S"),
        ({"SPARK_UPSTREAM_CONNECT_TRIES": "0"}, "SPARK_UPSTREAM_CONNECT_TRIES"),
    ],
)
def test_it_rejects_incomplete_environments(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as caught:
        ProviderConfig.from_env(env)
    assert caught.value.code == "config_invalid"


def test_it_never_shows_the_key_in_its_repr() -> None:
    config = ProviderConfig(provider="openai", model="gpt-x", api_key=KEY,
                            base_url="https://api.openai.com/v1")
    assert KEY not in repr(config)
    assert KEY not in str(config)
    assert "api_key=<set>" in repr(config)
