from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from spark_ide.accounts.services import AccountError, api_token_create
from spark_ide.accounts.site import servers_database


class Command(BaseCommand):
    help = "Print a new API token for USER (for Authorization: Token <key>)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> None:
        with servers_database():
            user = get_user_model().objects.filter(username=options["username"]).first()
            if user is None:
                raise CommandError(f"no such user: {options['username']}")
            try:
                self.stdout.write(api_token_create(user=user, name=options["name"]))
            except AccountError as exc:
                raise CommandError(exc.message) from None
