from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from spark_ide.accounts.services import local_user_ensure, login_token_create


class Command(BaseCommand):
    help = "Print a one-time sign-in URL for USER (created without a password if missing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", default="local")
        parser.add_argument("--base", default=settings.SITE_URL)

    def handle(self, *args: Any, **options: Any) -> None:
        user = local_user_ensure(options["username"])
        key = login_token_create(user=user)
        self.stdout.write(f"{options['base'].rstrip('/')}/?token={key}")
