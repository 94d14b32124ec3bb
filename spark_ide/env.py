"""Typed readers for settings from the environment (one place, one prefix: ``SPARK_``)."""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation
from pathlib import Path

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(RuntimeError):
    """A setting in the environment is missing or malformed."""


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None


def envmoney(name: str) -> Decimal | None:
    """An amount of US dollars, at least 0 (``1.50``); unset or empty: None."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite() or value < 0:
        raise ConfigError(f"{name} must be an amount of US dollars, 0 or more (e.g. 2.50), got {raw!r}")
    return value


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (spelled in any case; unset or empty: ``default``), else a
    ``ConfigError`` naming them."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def secret_key(data_dir: Path, *, production: bool) -> str:
    """The signing key: from ``SPARK_SECRET_KEY``, or generated once and kept in the data dir.

    Production must pass it explicitly: a key generated on one of N web processes would not
    match the others, and sessions would break at random.
    """
    value = os.environ.get("SPARK_SECRET_KEY", "")
    if value:
        return value
    if production:
        raise ConfigError("SPARK_SECRET_KEY is required when SPARK_ENV=production")
    path = data_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    import secrets

    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # Exclusive create: two processes starting together must agree on one key.
    try:
        with open(path, "x") as handle:
            handle.write(key)
        path.chmod(0o600)
    except FileExistsError:
        return path.read_text().strip()
    return key
