"""The pure cores import no Django (nor Channels or Celery): they run from a CLI as they are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = """
import importlib, pkgutil, sys
import spark_ide.{core} as core
for info in pkgutil.walk_packages(core.__path__, "spark_ide.{core}."):
    if not info.name.endswith("__main__"):  # importing that one runs the program
        importlib.import_module(info.name)
print(sorted(k for k in sys.modules if k.split(".")[0] in ("django", "channels", "celery", "daphne")))
"""


@pytest.mark.parametrize("core", ["editing", "upstream", "live", "modelserver", "sandbox.core", "guard"])
def test_a_pure_core_imports_no_django(core: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(core=core)], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
