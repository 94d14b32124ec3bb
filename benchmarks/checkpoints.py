"""Checkpoints (``manage.py spark_bench checkpoints``): what one costs when little changed.

A workspace of ``--files`` files (``--file-bytes`` each); a first checkpoint stores every file;
then ``--checkpoints`` more, each after one file changed, through the database store's own
function (``pairing.checkpoints.checkpoint_save``, in a transaction as the room's fenced write
is), with ``SPARK_CHECKPOINTS_KEEP`` = ``--keep``: past it, every save also prunes the oldest
and the blobs nobody uses. Everything runs in one outer transaction that is rolled back: the
database is left as it was.

Figures: the new blob bytes per checkpoint (target: one file's bytes), the row's own bytes
(its path -> key map), the time of a save before and while pruning (p50/p99), of a load, and of
restoring every file into a live document (one transaction).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from pycrdt import Doc

from benchmarks import report
from spark_ide.editing.document import document_from_texts
from spark_ide.live.checkpoints import Checkpoint, CheckpointKind, addressed, new_checkpoint_id, restore_files
from spark_ide.pairing.checkpoints import checkpoint_load, checkpoint_save, checkpoint_storage
from spark_ide.workspaces.services import workspace_create

SCENARIO = "checkpoints"
QUICK = ["--checkpoints", "230"]


class _RollBack(Exception):
    """Leaves the outer transaction: nothing the run wrote stays."""


def files_of(count: int, size: int) -> dict[str, str]:
    line = "value = compute(alpha, beta, gamma)  # a line of code\n"
    body = line * max(1, size // len(line))
    return {f"pkg/module_{index:03}.py": f"ID = {index}\n{body}" for index in range(count)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    files = files_of(args.files, args.file_bytes)
    owner = get_user_model().objects.create_user(username=f"bench-{new_checkpoint_id()}")
    workspace = workspace_create(owner=owner, name="checkpoint bench", files={"a.py": "a\n"})
    first = Checkpoint(id=new_checkpoint_id(), kind=CheckpointKind.TURN, files=files, history=(), at=0)
    with transaction.atomic():
        whole = checkpoint_save(workspace.id, first, keep=args.keep)
    saves_before: list[float] = []
    saves_pruning: list[float] = []
    new_bytes: list[int] = []
    changed_bytes: list[int] = []
    row_bytes: list[int] = []
    ids: list[str] = []
    for number in range(args.checkpoints):
        path = f"pkg/module_{number % args.files:03}.py"
        files = {**files, path: files[path] + f"value += {number}\n"}
        checkpoint = Checkpoint(id=new_checkpoint_id(), kind=CheckpointKind.TURN, files=files, history=(), at=number)
        began = time.perf_counter()
        with transaction.atomic():
            saved = checkpoint_save(workspace.id, checkpoint, keep=args.keep)
        took = (time.perf_counter() - began) * 1000
        (saves_pruning if number + 2 > args.keep else saves_before).append(took)
        new_bytes.append(saved.bytes)
        changed_bytes.append(len(files[path].encode()))
        row_bytes.append(len(json.dumps(addressed(checkpoint).manifest)))
        ids.append(checkpoint.id)
    loads = []
    for checkpoint_id in ids[-20:]:
        began = time.perf_counter()
        loaded = checkpoint_load(workspace.id, checkpoint_id)
        loads.append((time.perf_counter() - began) * 1000)
        assert loaded is not None
    doc: Doc[Any] = document_from_texts(files_of(args.files, args.file_bytes), "bench")
    began = time.perf_counter()
    restore_files(doc, files)
    restore_ms = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    addressed(Checkpoint(id="x", kind=CheckpointKind.TURN, files=files, history=(), at=0))
    hash_ms = (time.perf_counter() - began) * 1000
    storage = checkpoint_storage(workspace.id)
    return {
        "first_checkpoint": {"blobs": whole.blobs, "bytes": whole.bytes},
        "new_bytes": report.summary(new_bytes, 0), "changed_file_bytes": report.summary(changed_bytes, 0),
        "overhead_bytes": report.summary(
            [new - changed for new, changed in zip(new_bytes, changed_bytes, strict=True)], 0,
        ),
        "row_map_bytes": report.summary(row_bytes, 0),
        "save_ms": report.summary(saves_before), "save_pruning_ms": report.summary(saves_pruning),
        "load_ms": report.summary(loads), "restore_ms": round(restore_ms, 3), "hash_ms": round(hash_ms, 3),
        "kept": {"checkpoints": storage.checkpoints, "blobs": storage.blobs, "blob_chars": storage.blob_chars},
    }


def main(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="spark_bench checkpoints", description=__doc__)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--file-bytes", type=int, default=2000)
    parser.add_argument(
        "--checkpoints", type=int, default=400, help="checkpoints after the first, one file changed each",
    )
    parser.add_argument("--keep", type=int, default=200, help="SPARK_CHECKPOINTS_KEEP")
    args = parser.parse_args(argv)
    setup = report.Setup()
    report.progress(SCENARIO, f"{args.files} files, {args.checkpoints} checkpoints, keep {args.keep}")
    figures: dict[str, Any] = {}
    try:
        with transaction.atomic():
            figures = measure(args)
            raise _RollBack
    except _RollBack:
        pass
    one_file = figures["changed_file_bytes"]["p50"]
    return {
        "benchmark": SCENARIO,
        **figures,
        "rows": [
            report.row(
                f"checkpoint of {args.files} files, one changed: new bytes stored", figures["new_bytes"]["p50"],
                unit="B", baseline=one_file, target="one file's bytes + its bucket (< 2 KiB)",
                met=report.at_most(figures["overhead_bytes"].get("max"), 2048),
                note=f"the file and its bucket of paths ({figures['overhead_bytes']['p50']} B); "
                f"the row lists {figures['row_map_bytes']['p50']} B of bucket keys",
            ),
            report.row(
                "checkpoint save, one file changed (p99)", figures["save_ms"].get("p99"), unit="ms",
                note=f"p50 {figures['save_ms'].get('p50')} ms",
            ),
            report.row(
                f"checkpoint save while pruning at keep={args.keep} (p99)", figures["save_pruning_ms"].get("p99"),
                unit="ms", note=f"p50 {figures['save_pruning_ms'].get('p50')} ms",
            ),
            report.row(
                f"restore code of {args.files} files, every one changed (one document transaction)",
                figures["restore_ms"], unit="ms",
            ),
        ],
        "setup": setup.finish(
            files=args.files, file_bytes=args.file_bytes, checkpoints=args.checkpoints, keep=args.keep,
        ),
    }
