"""What one run may use. Every limit is a setting (SPARK_SANDBOX_*) with a default that suits teaching."""

from __future__ import annotations

from dataclasses import dataclass, fields

KB = 1024
MB = 1024 * KB


class SandboxConfigError(ValueError):
    """A limit or a sandbox setting is out of range; the message names it."""


@dataclass(frozen=True)
class Limits:
    """Per-run limits. Memory, files and open files are per process; processes count per run.

    ``disk_bytes`` caps each of the run's writable file systems (the work dir and ``/tmp``,
    both tmpfs, so a disk fill is a bounded memory fill).
    """

    cpu_seconds: int = 10
    memory_bytes: int = 256 * MB  # address space (RLIMIT_AS) of each process
    processes: int = 64
    file_bytes: int = 1 * MB  # largest file a run may write (RLIMIT_FSIZE)
    open_files: int = 64
    output_bytes: int = 64 * KB  # stdout and stderr together; past it the run is stopped
    wall_seconds: float = 15.0
    disk_bytes: int = 32 * MB

    def __post_init__(self) -> None:
        minimum = {
            "cpu_seconds": 1, "memory_bytes": 32 * MB, "processes": 4, "file_bytes": 1,
            "open_files": 16, "output_bytes": 1, "wall_seconds": 0.1, "disk_bytes": 1 * MB,
        }
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise SandboxConfigError(f"sandbox limit {item.name} must be a number, got {value!r}")
            if value < minimum[item.name]:
                least = minimum[item.name]
                raise SandboxConfigError(f"sandbox limit {item.name} must be at least {least}, got {value}")
