"""Helpers of the console tests (fixtures are in conftest.py): people and logins, the retention
most plans are made with, waiting for other processes, where screenshots go and how Chromium runs."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.models import Alert

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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Sinks:
    """What the local SMTP server and webhook receiver got."""

    mails: list[tuple[list[str], EmailMessage]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    fail_hooks: list[int] = field(default_factory=list)  # status codes to answer the next POSTs with

    def mails_of(self, alert: Alert) -> list[EmailMessage]:
        return [m for _, m in self.mails if f"(alert #{alert.pk})" in m.get_content()]

    def hooks_of(self, alert: Alert) -> list[dict[str, Any]]:
        return [h for h in self.hooks if h["cleanline"]["alert"] == alert.pk]

    def counts(self) -> tuple[int, int]:
        return len(self.mails), len(self.hooks)


def browser_sign_in(browser: Any, url: str, role: str, **context: Any) -> Any:
    """A new browser page (1280 px unless `context` says otherwise) signed in as `ada` with
    `role`, on the dashboard."""
    from django.contrib.auth.models import Group, User

    User.objects.create_user("ada", password="correct horse").groups.add(Group.objects.get(name=role))
    page = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **context}).new_page()
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    return page
