"""`manage.py flush` (also run by Django's TransactionTestCase between tests) on SQLite too.

Emptying the whole database empties the audit log with it. PostgreSQL's flush truncates, which
fires no row trigger. SQLite's runs `DELETE FROM` on every table, which the audit table's triggers
(migration 0008) refuse; here they are dropped, the database flushed and the same triggers created
again, all in one transaction, so that no other connection ever sees the table unprotected.
Changing or deleting single events stays refused."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush
from django.db import connections, transaction

AUDIT_TABLE = "console_auditevent"


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        database = options["database"]
        connection = connections[database]
        if connection.vendor != "sqlite":
            super().handle(**options)
            return
        with transaction.atomic(using=database):
            with connection.cursor() as cursor:
                cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
                               [AUDIT_TABLE])
                triggers = cursor.fetchall()
                for name, _ in triggers:
                    cursor.execute(f"DROP TRIGGER {connection.ops.quote_name(name)}")
            super().handle(**options)
            with connection.cursor() as cursor:
                for _, sql in triggers:
                    cursor.execute(sql)
