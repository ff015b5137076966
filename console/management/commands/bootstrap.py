"""`manage.py bootstrap LAKE`: the set-up `make run` does after migrating: an admin account
(its password printed once) and every table found under LAKE registered and synced."""

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
    help = "Create an admin user and register and sync every Hudi table under a folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("lake", help="folder holding Hudi tables (searched two levels deep)")
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, lake: str, username: str, **options: Any) -> None:
        if not User.objects.filter(username=username).exists():
            password = secrets.token_urlsafe(12)
            user = User.objects.create_user(username, password=password)
            user.groups.add(Group.objects.get(name="admin"))
            self.stdout.write(f"login: {username} / {password}")
        else:
            self.stdout.write(f"login: {username} (existing account; set a password with "
                              f"`.venv/bin/python manage.py changepassword {username}`)")
        admin = User.objects.get(username=username)
        for properties in sorted(Path(lake).glob("*/.hoodie/hoodie.properties")) + sorted(
                Path(lake).glob("*/*/.hoodie/hoodie.properties")):
            path = str(properties.parent.parent)
            table = Table.objects.filter(path__endswith=path).first()
            if table is None:
                try:
                    table = services.table_register(path=path, user=admin)
                except ValidationError as exc:
                    self.stderr.write(f"skipped {path}: {'; '.join(exc.messages)}")
                    continue
            services.table_sync(table=table)
            self.stdout.write(f"synced {table.name} ({table.instants.count()} instants)")
