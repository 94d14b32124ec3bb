"""The code-run sandbox: bubblewrap, a uid per run, rlimits, a wall clock, an output cap.

Standard library only (no Django): ``Sandbox(limits=Limits()).run({"main.py": "print(1)"},
path="main.py")`` works from any script. See docs/sandbox.md.
"""

from spark_ide.sandbox.core.files import BadRun
from spark_ide.sandbox.core.limits import Limits, SandboxConfigError
from spark_ide.sandbox.core.results import STREAMS, RunResult, RunStatus
from spark_ide.sandbox.core.run import OutputSink, Run, RunInputError
from spark_ide.sandbox.core.sandbox import Sandbox, SandboxUnavailable
from spark_ide.sandbox.core.uids import NoFreeUid, UidPool, processes_of

__all__ = [
    "STREAMS",
    "BadRun",
    "Limits",
    "NoFreeUid",
    "OutputSink",
    "Run",
    "RunInputError",
    "RunResult",
    "RunStatus",
    "Sandbox",
    "SandboxConfigError",
    "SandboxUnavailable",
    "UidPool",
    "processes_of",
]
