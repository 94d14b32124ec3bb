from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from spark_ide.accounts.services import AccountError, local_user_ensure, login_token_create
from spark_ide.accounts.site import servers_database, site_url


class Command(BaseCommand):
    help = (
        "Print a one-time sign-in URL for USER (created without a password if missing), on the "
        "server `spark_run` runs (its data directory is found without SPARK_DATA_DIR), else SITE_URL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", default="local")
        parser.add_argument("--base", help="the server's address (default: the running one, else SITE_URL)")

    def handle(self, *args: Any, **options: Any) -> None:
        with servers_database():
            try:
                user = local_user_ensure(options["username"])
            except AccountError as exc:
                raise CommandError(exc.message) from None
            key = login_token_create(user=user)
        base = options["base"] or site_url()
        self.stdout.write(f"{base.rstrip('/')}/?token={key}")
