"""Waiting for what other processes (Celery workers, Spark) do to the database or the lake."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `condition` every 50 ms until it holds; after `seconds`, fail naming `what`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
