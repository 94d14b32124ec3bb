"""What became of one `apply_patch` call: per operation and hunk, and the text the model gets
back as the call's output (`custom_tool_call_output`, `apply_patch_call_output`,
`function_call_output`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum

from spark_ide.editing.status import BlockStatus, EditState
from spark_ide.editing.v4a import PatchOpKind

INTERRUPTED = "interrupted by the user"
_LETTERS = {PatchOpKind.ADD: "A", PatchOpKind.UPDATE: "M", PatchOpKind.DELETE: "D"}
_HEADERS = {PatchOpKind.ADD: "Add File", PatchOpKind.UPDATE: "Update File", PatchOpKind.DELETE: "Delete File"}


class CallStatus(StrEnum):
    """The `status` of an `apply_patch_call_output` (the other outputs say it in the text)."""

    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BlockOutcome:
    """One block of the call (a hunk, an added file, a delete or a move), as it ended."""

    block: int  # the turn's block index (its `edit.status` and ledger entry)
    state: EditState
    hunk: int | None = None
    lines: tuple[int, int] | None = None
    reason: str | None = None
    message: str | None = None
    # A hunk that found nothing in a file someone else changed since the model saw it: that,
    # and the file's lines now (``stale.changed_under``), told after the operation's line.
    stale: str | None = None

    @classmethod
    def of(cls, status: BlockStatus, stale: str | None = None) -> BlockOutcome:
        return cls(status.block, status.state, status.hunk, status.lines, status.reason, status.message, stale)

    @property
    def applied(self) -> bool:
        return self.state is EditState.APPLIED

    def describe(self) -> str:
        name = f"hunk {self.hunk}" if self.hunk is not None else "the operation"
        if self.applied:
            where = f" at lines {self.lines[0]}-{self.lines[1]}" if self.lines is not None else ""
            return f"{name} applied{where}"
        if self.state is EditState.ROLLED_BACK:
            return f"{name} rolled back ({INTERRUPTED})"
        message = (self.message or str(self.reason)).removeprefix(f"{name}: ")
        return f"{name} failed ({self.reason}): {message}"


@dataclass(frozen=True, slots=True)
class OperationOutcome:
    """One file operation of the patch: its blocks, and why it failed when it did."""

    kind: PatchOpKind
    path: str
    target: str | None  # Update ... Move to
    blocks: tuple[BlockOutcome, ...]
    problem: str | None = None  # a failure of the operation itself (no lines, a broken line)

    @property
    def applied(self) -> bool:
        return self.problem is None and bool(self.blocks) and all(block.applied for block in self.blocks)

    def describe(self) -> str:
        head = f"{_HEADERS[self.kind]} {self.path}" + (f" (moved to {self.target})" if self.target else "")
        parts = [block.describe() for block in self.blocks if block.hunk is not None or not block.applied]
        if self.problem is not None:
            parts.append(self.problem)
        if not parts:
            return f"{head}: applied"
        notes = "".join(f"\n{block.stale}" for block in self.blocks if block.stale)  # unindented: code
        return f"{head}: " + "; ".join(parts) + notes


@dataclass(frozen=True, slots=True)
class PatchResult:
    """The call's outcome: `status` and `output` are what the model is answered with."""

    call_id: str
    operations: tuple[OperationOutcome, ...]
    problems: tuple[str, ...]  # what failed outside any operation (a broken patch, no operation)
    interrupted: bool

    @property
    def status(self) -> CallStatus:
        ok = not self.interrupted and not self.problems and bool(self.operations)
        return CallStatus.COMPLETED if ok and all(op.applied for op in self.operations) else CallStatus.FAILED

    def as_dict(self) -> dict[str, object]:
        """JSON-able: the call's id, status, output, operations and problems."""
        return {
            "call_id": self.call_id, "status": self.status.value, "output": self.output,
            "operations": [asdict(op) for op in self.operations], "problems": list(self.problems),
            "interrupted": self.interrupted,
        }

    @property
    def blocks(self) -> tuple[BlockOutcome, ...]:
        return tuple(block for op in self.operations for block in op.blocks)

    @property
    def output(self) -> str:
        """Concise text for the model: like the Codex CLI's on success, else what applied
        and what failed, and why."""
        if self.status is CallStatus.COMPLETED:
            changed = [f"{_LETTERS[op.kind]} {op.target or op.path}" for op in self.operations]
            return "Success. Updated the following files:\n" + "\n".join(changed)
        applied = sum(1 for block in self.blocks if block.applied)
        if self.interrupted:
            head = f"Failed: {INTERRUPTED}; {applied} of the patch's changes applied before that and stay."
        elif applied:
            head = f"Partly applied: {applied} of {len(self.blocks)} changes applied and stay; the rest failed."
        else:
            head = "Failed: nothing was applied."
        lines = [head, *(f"- {op.describe()}" for op in self.operations), *(f"- {p}" for p in self.problems)]
        if not self.interrupted and applied < len(self.blocks):
            lines.append("Send a new patch for the failed parts only, written against the files as they are now.")
        return "\n".join(lines)
