from __future__ import annotations

import sys

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start the local model server (Responses WebSocket). `manage.py modelserver --help` for flags."

    def run_from_argv(self, argv: list[str]) -> None:
        # The flags belong to the model server's own parser (the same as
        # `python -m spark_ide.modelserver`); Django's option parsing is skipped on purpose.
        from spark_ide.modelserver.cli import main

        sys.exit(main(argv[2:]))
