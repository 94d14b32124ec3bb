"""Make an existing user a teacher (they may then create courses)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from spark_ide.accounts.services import is_guest
from spark_ide.accounts.site import servers_database
from spark_ide.classroom.services import teacher_grant


class Command(BaseCommand):
    help = "Add a user to the teachers group (who may create courses)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        with servers_database():
            user = User.objects.filter(username=options["username"]).first()
            if user is None:
                raise CommandError(f"no user {options['username']!r}")
            if is_guest(user):
                raise CommandError(f"{user.get_username()!r} is a guest: guests cannot be teachers")
            teacher_grant(user)
        self.stdout.write(f"{user.get_username()} is a teacher")
