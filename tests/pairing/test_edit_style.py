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
from spark_ide.upstream.catalogue import ModelEntry

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


def test_a_catalogue_entry_brings_its_own_budget_ceiling_and_dialect(settings: Any) -> None:
    settings.SPARK_CONTEXT_TOKENS, settings.SPARK_MAX_OUTPUT_TOKENS = 9000, 700
    hosted = ModelEntry(name="big", provider="openai", base_url="https://api.openai.com/v1", model="gpt-5",
                        context_tokens=200_000, max_output_tokens=32_000)
    built = prompt_style(hosted)
    assert (built.context_tokens, built.max_output_tokens, built.edit_style) == (200_000, 32_000, EditStyle.APPLY_PATCH)
    small = prompt_style(ModelEntry(name="s", provider="local", base_url="http://127.0.0.1:8765/v1", model="smollm2"))
    assert small.whole_file_only and (small.context_tokens, small.max_output_tokens) == (9000, 700)  # the server's
    chosen = prompt_style(ModelEntry(name="e", provider="openai-compatible", base_url="https://h/v1", model="m",
                                     edit_style=EditStyle.EDITS))
    assert chosen.edit_style is EditStyle.EDITS and not chosen.whole_file_only
