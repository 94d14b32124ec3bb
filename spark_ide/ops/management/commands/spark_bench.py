from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

# Each benchmark is ``benchmarks.<name>.main`` (the top-level ``benchmarks`` package, run from
# the repository root; it is not part of the installed product). ``make bench`` runs them in
# this order: in-process ones first, whole stacks after, the soak last.
BENCHMARKS = (
    "editing", "guard", "modelserver", "upstream", "wan", "followup", "pairing", "toolloop", "runloop", "longlines",
    "checkpoints", "fanout", "rooms", "browser", "soak", "edit_steer",
)
NOT_SHIPPED = (
    "the benchmarks are not installed with Spark IDE: they are the top-level benchmarks/ directory of a "
    "checkout of its repository. Run `manage.py spark_bench` (or `make bench`) from that checkout."
)


class Command(BaseCommand):
    help = "Run a benchmark and print its figures as JSON (from a checkout of the repository): " + ", ".join(
        BENCHMARKS
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("benchmark", choices=BENCHMARKS)
        # Everything after the name goes to the benchmark, its flags and --help included.
        parser.add_argument("args", nargs=argparse.REMAINDER, help="passed to the benchmark (see its --help)")

    def handle(self, *args: Any, **options: Any) -> None:
        if importlib.util.find_spec("benchmarks") is None:
            raise CommandError(NOT_SHIPPED)
        # A benchmark that fails to import (a missing dependency of its own) says so itself.
        module = importlib.import_module(f"benchmarks.{options['benchmark']}")
        figures = module.main(list(args))  # Django hands positional arguments over as *args
        self.stdout.write(json.dumps(figures, indent=2, sort_keys=True))
