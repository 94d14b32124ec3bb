"""Reading ``models.toml`` (docs/models.md): the catalogue's entries, each checked field by field.

A file that cannot be read or does not parse, or holds no usable entry, is a
``CatalogueError`` (the server refuses to start: an operator who wrote a catalogue meant its
models, not the environment's). An entry with a bad field is left out, and the catalogue says
why in one line naming the entry and the field (``Catalogue.problems``, logged at start); the
server runs with the others.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, get_args

from spark_ide.upstream.catalogue import Catalogue, ModelEntry, Prices
from spark_ide.upstream.config import LOCAL_BASE_URL, OPENAI_BASE_URL, websocket_url
from spark_ide.upstream.dialects import EditStyle, parse_edit_style
from spark_ide.upstream.errors import ConfigError
from spark_ide.upstream.profiles import Provider

FIELDS = frozenset({
    "name", "provider", "base_url", "model", "key_env", "context_tokens", "max_output_tokens", "edit_style", "steer",
    "prices",
})
PRICE_FIELDS = ("input", "cached_input", "output")
# Fields that would hold a key itself: refused, the key belongs in the environment.
KEY_FIELDS = frozenset({"api_key", "key", "openai_api_key", "secret", "token"})
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,63}")
_MAX_TOKENS = 10_000_000


class CatalogueError(ConfigError):
    """The catalogue file as a whole cannot be used."""


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def load_catalogue(path: Path) -> Catalogue:
    """The catalogue in the file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{path}: cannot read the model catalogue ({exc})") from None
    return parse_catalogue(text, source=str(path))


def parse_catalogue(text: str, *, source: str = "models.toml") -> Catalogue:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{source} does not parse as TOML: {exc}") from None
    unknown = sorted(set(data) - {"default", "models"})
    if unknown:
        raise CatalogueError(f"{source}: unknown top-level key {unknown[0]!r} (the file has 'default' and [[models]])")
    tables = data.get("models")
    if not isinstance(tables, list) or not tables:
        raise CatalogueError(f"{source} has no [[models]] entries")
    entries: list[ModelEntry] = []
    problems: list[str] = []
    for number, table in enumerate(tables, start=1):
        label = _label(table, number)
        try:
            entry = _entry(table)
            if any(other.name == entry.name for other in entries):
                raise _Bad("name", f"a second entry is named {entry.name!r}")
        except _Bad as bad:
            problems.append(f"{source}: model {label}: {bad.field}: {bad.message}; the entry is left out")
            continue
        entries.append(entry)
    if not entries:
        raise CatalogueError(f"{source} has no usable model: " + " | ".join(problems))
    default = data.get("default", entries[0].name)
    if not isinstance(default, str) or all(entry.name != default for entry in entries):
        names = ", ".join(entry.name for entry in entries)
        raise CatalogueError(f"{source}: default {default!r} is not one of the usable models ({names})")
    return Catalogue(entries=tuple(entries), default=default, problems=tuple(problems), source=source)


def _label(table: object, number: int) -> str:
    name = table.get("name") if isinstance(table, dict) else None
    return f"{name!r} (entry {number})" if isinstance(name, str) and name else f"entry {number}"


def _entry(table: object) -> ModelEntry:
    if not isinstance(table, dict):
        raise _Bad("models", "each entry is a table ([[models]])")
    for field in sorted(set(table) & KEY_FIELDS):
        raise _Bad(field, "a key is never written in the catalogue: put it in an environment variable and "
                          "name that variable in key_env")
    unknown = sorted(set(table) - FIELDS)
    if unknown:
        raise _Bad(unknown[0], f"unknown field (the fields are {', '.join(sorted(FIELDS))})")
    name = _text(table, "name", required=True)
    if not _NAME.fullmatch(name):
        raise _Bad("name", f"{name[:70]!r} is not a name: up to 64 letters, digits and . _ - : / @ +")
    provider = _text(table, "provider", required=True)
    if provider not in get_args(Provider):
        raise _Bad("provider", f"{provider[:40]!r} is not one of {', '.join(get_args(Provider))}")
    checked: Provider = provider  # type: ignore[assignment]  # checked against Provider above
    return ModelEntry(
        name=name, provider=checked, base_url=_base_url(table, checked), model=_text(table, "model", required=True),
        key_env=_key_env(table, checked),
        context_tokens=_tokens(table, "context_tokens"), max_output_tokens=_tokens(table, "max_output_tokens"),
        edit_style=_edit_style(table, checked), steer=_flag(table, "steer"), prices=_prices(table),
    )


def _text(table: Mapping[str, Any], field: str, *, required: bool = False, default: str = "") -> str:
    value = table.get(field, None)
    if value is None:
        if required:
            raise _Bad(field, "missing")
        return default
    if not isinstance(value, str) or (required and not value.strip()):
        raise _Bad(field, f"must be a non-empty string, not {value!r:.60}")
    return value.strip()


def _base_url(table: Mapping[str, Any], provider: Provider) -> str:
    default = {"local": LOCAL_BASE_URL, "openai": OPENAI_BASE_URL}.get(provider, "")
    url = _text(table, "base_url", default=default)
    if not url:
        raise _Bad("base_url", "an openai-compatible model needs its host's base URL (https://host/v1)")
    try:
        websocket_url(url)
    except ConfigError as exc:
        raise _Bad("base_url", exc.message) from None
    return url


def _key_env(table: Mapping[str, Any], provider: Provider) -> str:
    name = _text(table, "key_env", default="OPENAI_API_KEY" if provider == "openai" else "")
    if name and not _VARIABLE.fullmatch(name):
        hint = " (it looks like a key: never put the key itself in the file)" if name.startswith("sk-") else ""
        raise _Bad("key_env", f"must be the NAME of an environment variable{hint}")
    return name


def _tokens(table: Mapping[str, Any], field: str) -> int | None:
    value = table.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_TOKENS:
        raise _Bad(field, f"must be a whole number from 1 to {_MAX_TOKENS:,}, not {value!r:.40}")
    return value


def _edit_style(table: Mapping[str, Any], provider: Provider) -> EditStyle | None:
    raw = _text(table, "edit_style")
    if not raw:
        return None
    try:
        return parse_edit_style(raw, provider=provider, setting="edit_style")
    except ConfigError as exc:
        raise _Bad("edit_style", exc.message) from None


def _flag(table: Mapping[str, Any], field: str) -> bool:
    value = table.get(field, False)
    if not isinstance(value, bool):
        raise _Bad(field, f"must be true or false, not {value!r:.40}")
    return value


def _prices(table: Mapping[str, Any]) -> Prices | None:
    value = table.get("prices")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Bad("prices", "must be a table: { input = 1.25, cached_input = 0.125, output = 10.0 } (USD per million)")
    unknown = sorted(set(value) - set(PRICE_FIELDS))
    if unknown:
        raise _Bad(f"prices.{unknown[0]}", f"unknown price (the prices are {', '.join(PRICE_FIELDS)})")
    return Prices(**{field: _price(value, field) for field in PRICE_FIELDS})


def _price(prices: Mapping[str, Any], field: str) -> Decimal:
    raw = prices.get(field, 0)
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise _Bad(f"prices.{field}", f"must be a number of US dollars per million tokens, not {raw!r:.40}")
    try:
        price = Decimal(str(raw))  # str: 0.1 stays 0.1, not the float nearest it
    except InvalidOperation:
        raise _Bad(f"prices.{field}", f"must be a number of US dollars per million tokens, not {raw!r:.40}") from None
    if not price.is_finite() or price < 0:
        raise _Bad(f"prices.{field}", f"must be zero or more, not {raw!r:.40}")
    return price
