"""A ``models.toml`` for a test: local entries by name (``SPARK_MODELS_FILE`` set to it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def entry(name: str, *, port: int = 8765, model: str = "", **fields: str) -> str:
    """One ``[[models]]`` table: a local model named ``name`` (its id ``model``, else
    ``<name>-id``), on ``port``."""
    extra = "".join(f'{key} = "{value}"\n' for key, value in fields.items())
    return (f'[[models]]\nname = "{name}"\nprovider = "local"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'model = "{model or name + "-id"}"\n{extra}\n')


def use_catalogue(settings: Any, tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(text)
    settings.SPARK_MODELS_FILE = str(path)
    return path
