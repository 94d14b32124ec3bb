from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from spark_ide.accounts import keyring
from spark_ide.accounts.models import ProviderKey
from spark_ide.accounts.site import servers_database


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored provider key with the current keys secret (SPARK_KEYS_SECRET, else "
        "SPARK_SECRET_KEY), reading each with that or one of SPARK_KEYS_OLD_SECRETS; afterwards the old "
        "secrets can be removed (docs/security.md, \"Stored provider keys\")."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        done, unreadable = 0, []
        with servers_database(), transaction.atomic():
            for row in ProviderKey.objects.select_for_update().order_by("pk"):
                try:
                    row.ciphertext = keyring.reencrypt(row.ciphertext)
                except keyring.KeyUnreadable:
                    unreadable.append(f"#{row.pk} ({row.provider} …{row.last4} of user {row.user_id})")
                    continue
                row.save(update_fields=["ciphertext"])
                done += 1
        self.stdout.write(f"re-encrypted {done} stored key(s) with the current secret")
        if unreadable:
            raise CommandError(
                f"{len(unreadable)} stored key(s) no configured secret decrypts: {', '.join(unreadable)}; put the "
                "secret they were stored with in SPARK_KEYS_OLD_SECRETS and run this again, or have their owners "
                "store them again"
            )
