"""A real Celery worker process on a real Redis runs `sync_table`: the sync a registration
queues on commit, then one sent again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from console import services
from console.models import SyncStatus, Table
from tests.console.helpers import queued_outcome
from timeline import HudiTable


@pytest.fixture
def worker(transactional_db, settings, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on the broker the app uses (`make test` points REDIS_URL at a database of its
    own), sharing the test database, with the test's folder as the allowed root (the worker checks
    a table's location against it before a sync)."""
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    env = {**os.environ, "REDIS_URL": settings.REDIS_URL, "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
           "CLEANLINE_ALLOWED_ROOTS": ",".join(settings.CLEANLINE_ALLOWED_ROOTS)}
    process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "solo",
                                "--concurrency", "1", "--loglevel", "WARNING", "--without-gossip", "--without-mingle"],
                               env=env, cwd=str(Path(django_settings.BASE_DIR)))
    yield process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def test_worker_runs_sync_table_on_redis(worker: subprocess.Popen[bytes], settings, tmp_path: Path,
                                          table_copy) -> None:
    from console.tasks import sync_table

    table = services.table_register(path=str(table_copy("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")), user=None)
    task_id = Table.objects.get(pk=table.pk).sync_task_id  # the sync its registration queued on commit
    outcome = queued_outcome(task_id, 120)
    assert outcome["changed"] and outcome["created"] == len(HudiTable.open(table.path).timeline)
    table.refresh_from_db()
    assert table.sync_status == SyncStatus.OK and table.sync_task_id == task_id
    assert table.instants.count() == outcome["created"]
    again = sync_table.delay(table.pk).get(timeout=60)
    assert again == {"changed": False, "created": 0, "updated": 0, "deleted": 0}
    deadline = time.monotonic() + 5
    while Table.objects.get(pk=table.pk).sync_status != SyncStatus.OK and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker.poll() is None
