#!/usr/bin/env python
"""Django's command-line utility for Spark IDE."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "spark_ide.settings")
    # A command acting on the running server's data gets its data directory before the
    # settings load (they would make ./var otherwise), or is told what to set.
    from spark_ide.running import attach_command

    problem = attach_command(sys.argv, os.environ)
    if problem is not None:
        sys.stderr.write(problem + "\n")
        sys.exit(1)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
