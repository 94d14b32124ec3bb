"""Run a browser module's pure logic under Node (no page needed): a script in, JSON out."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from tests.conftest import require


def run_node(script: str, **values: Any) -> Any:
    """Run ``script`` as an ES module with each of ``values`` bound as a ``const``; the script
    prints one JSON value, which is returned."""
    require(shutil.which("node") is not None, "node is not installed")
    prelude = "".join(f"const {name} = {json.dumps(value)};\n" for name, value in values.items())
    done = subprocess.run(
        ["node", "--no-warnings", "--input-type=module", "-e", prelude + script],
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
