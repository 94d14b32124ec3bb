"""``manage.py spark_models``: the model catalogue (docs/models.md), one line per model, each
checked (reached, its key accepted); exit status 1 when one fails. ``--list`` only lists."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from spark_ide.upstream.catalogue import Catalogue
from spark_ide.upstream.catalogue_check import Checked, check_entry
from spark_ide.upstream.catalogue_file import CatalogueError
from spark_ide.workspaces.catalogue import catalogue


class Command(BaseCommand):
    help = "List the models this server offers (models.toml, else the environment's) and check each."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--list", action="store_true", help="list the models without checking them")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            found = catalogue()
        except CatalogueError as exc:
            raise CommandError(exc.message) from None
        source = found.source or "the environment (SPARK_PROVIDER, OPENAI_BASE_URL, SPARK_MODEL)"
        self.stdout.write(f"models from {source}; the default is {found.default}")
        for problem in found.problems:
            self.stdout.write(f"LEFT OUT  {problem}")
        if options["list"]:
            for entry in found.entries:
                self.stdout.write(f"{entry.name}  ({entry.provider} {entry.model} at {entry.base_url})")
            return
        checked = asyncio.run(_check_all(found))
        for result in checked:
            self.stdout.write(result.line())
        failed = [result.entry.name for result in checked if not result.ok]
        if failed or found.problems:
            left_out = f"; {len(found.problems)} left out" if found.problems else ""
            raise CommandError(f"{len(failed)} of {len(checked)} models failed their check{left_out}")


async def _check_all(found: Catalogue) -> list[Checked]:
    return list(await asyncio.gather(*(check_entry(entry, os.environ) for entry in found.entries)))
