"""Helpers of the console tests (fixtures are in conftest.py): people and logins, the retention
most plans are made with, waiting for other processes, where screenshots go and how Chromium runs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def person(name: str, role: str, password: str = "a long enough password 1") -> Any:
    """A new user with `role`."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(name, password=password)
    user.groups.add(Group.objects.get(name=role))
    return user


def login(role: str) -> Any:
    """A test client logged in as a new user with `role`."""
    from django.contrib.auth.models import Group, User
    from django.test import Client

    user = User.objects.create_user(f"u-{role}", password="pw")
    user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


# Screenshots go to var/screenshots (untracked) unless CLEANLINE_SCREENSHOTS names another
# folder: `make screenshots` points it at docs/screenshots to refresh the README's pictures.
SHOTS = Path(os.environ.get("CLEANLINE_SCREENSHOTS") or Path(__file__).resolve().parents[2] / "var" / "screenshots")


ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


# The plan settings most console tests use: one commit retained, below the table's configured
# retention (Hudi's default 10), so the requester allows it explicitly (the library refuses it
# otherwise: timeline/clean/retention.py).
SHORT_RETENTION = {"commits_retained": 1, "allow_short_retention": True}
SHORT_RETENTION_FORM = {"commits_retained": "1", "allow_short_retention": "on"}


# Hudi writer options under which archival moves instants of a small fixture table: keep 2 to 3
# commits (Hudi's defaults, 20 to 30, keep every instant of the fixtures), the cleaner retaining
# one (its retention would raise the keep counts otherwise). On a copy of
# sample_table/cow/v9_txns_nonpart_nometa (11 commits) archival moves 9.
KEEP_FEW = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}
ARCHIVABLE_TABLE = "sample_table/cow/v9_txns_nonpart_nometa"


def completed_commits(table: Any) -> list[str]:
    """The completed commits of a registered table's active timeline, read from the lake."""
    from timeline import HudiTable

    return [i.requested_time for i in HudiTable.open(table.path).timeline.commits().completed()]


def hoodie_files(table: Any) -> dict[str, int]:
    """Every file under a registered local table's .hoodie folder with its size (what an
    archival writes or deletes), to compare before and after."""
    root = Path(table.path.removeprefix("file:")) / ".hoodie"
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def signed_in(browser: Any, url: str, name: str, role: str, width: int, scheme: str) -> Any:
    """A new browser page (its own context) logged in through the login form as a new user
    `name` with `role`, on the dashboard."""
    from django.contrib.auth.models import Group, User

    User.objects.create_user(name, password="correct horse").groups.add(Group.objects.get(name=role))
    page = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme).new_page()
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    return page


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `condition` every 50 ms until it holds; after `seconds`, fail naming `what` (what
    other processes, Celery workers or Spark, do to the database or the lake)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def queued_outcome(task_id: str, seconds: float) -> Any:
    """What the task a service queued on commit returned, once a Celery worker ran it (its id is
    on the row it works on: `task_id`, a table's `sync_task_id`); after `seconds`, fail."""
    from console.celery import app

    assert task_id, "no task was queued for this row"
    return app.AsyncResult(task_id).get(timeout=seconds)
