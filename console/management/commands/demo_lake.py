"""`manage.py demo_lake LAKE`: the Spark demo tables of `cleanline demo` written under LAKE, each
registered and synced as soon as it is written, so that it shows in the catalog while the next
one is built. `make run` starts it in the background (scripts/run.sh); with every table there
already it returns at once, without starting Spark."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, TextIO

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import services
from console.models import Table
from console.services.health import table_sync_checked
from timeline.internal.demo import DEMO_TABLES, demo_tables_to_build
from timeline.internal.engine import build_demo_lake


class Command(BaseCommand):
    help = "Build the Spark demo tables under a folder, registering and syncing each when written."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("lake", help="folder the demo tables are written in (existing tables are kept)")
        parser.add_argument("--username", default="admin", help="the user the tables are registered by")
        parser.add_argument("--log", help="a file every progress message is appended to (default: none)")
        parser.add_argument("--status", help="a JSON file kept up to date with the build's progress, which the "
                                             "dashboard and catalog show (CLEANLINE_DEMO_STATUS; default: none)")

    def handle(self, *args: Any, lake: str, username: str, log: str | None, status: str | None,
               **options: Any) -> None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r} to register the demo tables with (run bootstrap first)")
        started = time.monotonic()
        done: list[str] = []
        state: dict[str, Any] = {"tables": list(DEMO_TABLES), "built": [n for n in DEMO_TABLES
                                                                      if n not in demo_tables_to_build(lake)],
                                 "building": "", "finished": False, "failed": ""}
        log_file: TextIO | None = open(log, "a", encoding="utf-8") if log else None  # noqa: SIM115

        def save() -> None:
            if status:
                Path(status).parent.mkdir(parents=True, exist_ok=True)
                Path(f"{status}.tmp").write_text(json.dumps(state), encoding="utf-8")
                os.replace(f"{status}.tmp", status)

        def progress(message: str) -> None:
            if log_file is not None:
                log_file.write(f"{time.monotonic() - started:6.0f} s  {message}\n")
                log_file.flush()
            name, _, step = message.partition(": ")
            if step == "building":
                state["building"] = name
                save()
            if step == "done":
                done.append(name)
                self._register(Path(lake) / name, user)
                state["built"] = sorted(set(state["built"]) | {name}, key=DEMO_TABLES.index)
                state["building"] = ""
                save()
                self.stdout.write(f"demo lake: {name} built and in the catalog ({len(state['built'])} of "
                                  f"{len(DEMO_TABLES)}, {time.monotonic() - started:.0f} s)")

        save()
        try:
            build_demo_lake(lake, progress=progress)  # returns at once, without Spark, when all are there
            state.update(finished=True, building="")
            if done:
                self.stdout.write(f"demo lake: every Spark table is built and in the catalog "
                                  f"({time.monotonic() - started:.0f} s)")
        except Exception as exc:
            state.update(finished=True, building="", failed=f"{type(exc).__name__}: {exc}"[:500])
            raise
        finally:
            save()
            if log_file is not None:
                log_file.close()

    def _register(self, path: Path, user: User) -> None:
        table = Table.objects.filter(path__endswith=str(path)).first()
        if table is None:
            try:
                table = services.table_register(path=str(path), user=user, enqueue=False)  # synced here, below
            except ValidationError as exc:
                self.stderr.write(f"demo lake: {path} not registered: {'; '.join(exc.messages)}")
                return
        table_sync_checked(table=table)  # with its Health and a History point at once
