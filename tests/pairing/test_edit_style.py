"""``SPARK_EDIT_STYLE`` from the environment to the prompt style turns are built with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spark_ide.pairing.adapter import prompt_style
from spark_ide.upstream import ConfigError, EditStyle

ROOT = Path(__file__).resolve().parents[2]


def settings_value(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-c", "from spark_ide import settings; print(settings.SPARK_EDIT_STYLE)"],
        cwd=ROOT, env={**clean, "SPARK_DATA_DIR": str(tmp_path), **env}, capture_output=True, text=True,
    )


def test_the_default_at_startup_follows_the_provider(tmp_path: Path) -> None:
    seen = {
        provider: settings_value(tmp_path, SPARK_PROVIDER=provider, SPARK_MODEL=model).stdout.strip()
        for provider, model in (("openai", "gpt-5.1-codex"), ("openai-compatible", "llama"), ("local", "smollm2"))
    }
    assert seen == {"openai": "apply-patch", "openai-compatible": "function", "local": "whole-file"}


def test_a_bad_value_is_refused_at_startup(tmp_path: Path) -> None:
    done = settings_value(tmp_path, SPARK_EDIT_STYLE="patches")
    assert done.returncode != 0
    assert "SPARK_EDIT_STYLE must be one of apply-patch, apply-patch-builtin, function, edits" in done.stderr


@pytest.mark.parametrize("style", [s for s in EditStyle if s is not EditStyle.WHOLE_FILE])
def test_turns_are_built_in_the_configured_dialect(settings: Any, style: EditStyle) -> None:
    settings.SPARK_EDIT_STYLE = style.value
    built = prompt_style()
    assert built.edit_style is style and not built.whole_file_only and built.ledger


def test_whole_file_is_the_small_model_style(settings: Any) -> None:
    settings.SPARK_EDIT_STYLE = "whole-file"
    built = prompt_style()
    assert built.whole_file_only and built.steer_as_request and not built.ledger


def test_a_bad_value_set_later_is_refused_with_its_name(settings: Any) -> None:
    settings.SPARK_EDIT_STYLE = "diff"
    with pytest.raises(ConfigError, match="SPARK_EDIT_STYLE must be one of"):
        prompt_style()
