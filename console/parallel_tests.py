"""The test suite on several processes (pytest-xdist), as `console.settings` sets it up."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

__all__ = ["parallel_test_worker"]


def parallel_test_worker() -> None:
    """Under pytest-xdist (`make test` runs the suite on several processes), each test process
    its own Redis database (Celery's broker: the workers a test starts take only its tasks; the
    first process keeps REDIS_URL's, the others take 14, 12, 11, ... never 13, `make run`'s test
    console's) and its own plan store folder (<CLEANLINE_PLAN_STORE>/<worker>). Written back to
    the environment once, marked, so that the processes a test starts inherit them as they are."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker or os.environ.get("CLEANLINE_TEST_WORKER") == worker:
        return
    number = int(worker.removeprefix("gw"))
    url = urlparse(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"))
    base = int(url.path.strip("/") or 0)
    databases = [base, *(n for n in (14, 12, 11, 10, 9, 8, 7) if n != base)]
    if number >= len(databases):
        raise ImproperlyConfigured(f"pytest-xdist worker {worker}: at most {len(databases)} test processes")
    os.environ["REDIS_URL"] = url._replace(path=f"/{databases[number]}").geturl()
    if os.environ.get("CLEANLINE_PLAN_STORE", "").strip():
        os.environ["CLEANLINE_PLAN_STORE"] = os.path.join(os.environ["CLEANLINE_PLAN_STORE"].strip(), worker)
    os.environ["CLEANLINE_TEST_WORKER"] = worker
