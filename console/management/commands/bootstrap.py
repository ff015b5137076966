"""`manage.py bootstrap LAKE`: the set-up `make run` does after migrating: two admin accounts
(admin and admin2, their passwords printed once: one plans a clean, the other approves it, as
two-person approval asks) and every table found under LAKE registered and synced (a table
registered by an earlier start is only queued for a sync, which the Celery worker runs)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandParser

from console import services
from console.models import Table


class Command(BaseCommand):
    help = "Create two admin users and register and sync every Hudi table under a folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("lake", help="folder holding Hudi tables (searched two levels deep)")
        parser.add_argument("--username", default="admin")
        parser.add_argument("--second-username", default="admin2",
                            help="a second admin, so that a plan one admin makes can be approved by another "
                                 "(CLEANLINE_APPROVER_MUST_DIFFER); empty: none")

    def handle(self, *args: Any, lake: str, username: str, second_username: str, **options: Any) -> None:
        self.account(username, "admin")
        if second_username and second_username != username:
            self.account(second_username, "admin")
            self.stdout.write(f"two-person approval: a plan {username} makes is approved by {second_username}, "
                              f"and the other way round")
        admin = User.objects.get(username=username)
        for properties in sorted(Path(lake).glob("*/.hoodie/hoodie.properties")) + sorted(
                Path(lake).glob("*/*/.hoodie/hoodie.properties")):
            path = str(properties.parent.parent)
            table = Table.objects.filter(path__endswith=path).first()
            if table is not None:  # known from an earlier start: the worker re-syncs it, the page shows it now
                services.table_sync_queue(table=table)
                self.stdout.write(f"queued a sync of {table.name}")
                continue
            try:
                table = services.table_register(path=path, user=admin, enqueue=False)  # synced here, below
            except ValidationError as exc:
                self.stderr.write(f"skipped {path}: {'; '.join(exc.messages)}")
                continue
            services.table_sync(table=table)
            # the doctor and a history point in the worker's first sync, seconds after the start
            # (not on the way to the first page, nor after beat's first periodic sync)
            services.table_sync_queue(table=table)
            self.stdout.write(f"synced {table.name} ({table.instants.count()} instants)")

    def account(self, username: str, role: str) -> None:
        """Create `username` with `role` and print its password once; an existing account is
        left as it is (its password cannot be shown: only its hash is kept)."""
        if not User.objects.filter(username=username).exists():
            password = secrets.token_urlsafe(12)
            user = User.objects.create_user(username, password=password)
            user.groups.add(Group.objects.get(name=role))
            self.stdout.write(f"login: {username} / {password}")
        else:
            self.stdout.write(f"login: {username} (existing account; set a password with "
                              f"`.venv/bin/python manage.py changepassword {username}`)")
