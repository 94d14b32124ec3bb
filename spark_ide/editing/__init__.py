"""The streaming edit engine: model text in, in-place pycrdt document changes out.

Pure Python + pycrdt + rapidfuzz (no Django). See docs/editing.md.
"""

from spark_ide.editing.files import FILES_KEY, workspace_files
from spark_ide.editing.ledger import Ledger, LedgerEntry, Outcome
from spark_ide.editing.limits import NO_LIMITS, FileLimits
from spark_ide.editing.locator import LocateFailure, MatchStrategy, Region, locate
from spark_ide.editing.merge import MergeReport
from spark_ide.editing.parse_events import BlockKind, ParseEvent
from spark_ide.editing.parser import EditStreamParser
from spark_ide.editing.patch import PatchCall, PatchOperation
from spark_ide.editing.patch_result import BlockOutcome, CallStatus, OperationOutcome, PatchResult
from spark_ide.editing.reasons import EditorClosedError, FailureReason, ReviewRefused, RollbackReason
from spark_ide.editing.status import BlockStatus, CodeText, EditEvent, EditState, ProseEvent
from spark_ide.editing.turn import TurnEditor

__all__ = [
    "FILES_KEY",
    "NO_LIMITS",
    "BlockKind",
    "BlockOutcome",
    "BlockStatus",
    "CallStatus",
    "CodeText",
    "EditEvent",
    "EditState",
    "EditStreamParser",
    "EditorClosedError",
    "FailureReason",
    "FileLimits",
    "Ledger",
    "LedgerEntry",
    "LocateFailure",
    "MatchStrategy",
    "MergeReport",
    "OperationOutcome",
    "Outcome",
    "ParseEvent",
    "PatchCall",
    "PatchOperation",
    "PatchResult",
    "ProseEvent",
    "Region",
    "ReviewRefused",
    "RollbackReason",
    "TurnEditor",
    "locate",
    "workspace_files",
]
