"""The console on PostgreSQL: the sync and view tests and the approval contract (twenty
simultaneous approvals of each kind claim it once) again, with DATABASE_URL pointing at a real
PostgreSQL server (`make test` makes sure one answers on 127.0.0.1:5432)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_URL = os.environ.get("CLEANLINE_TEST_POSTGRES_URL", "postgres://postgres:postgres@127.0.0.1:5432/postgres")


def test_postgres_sync_and_views_pass() -> None:
    env = {**os.environ, "DATABASE_URL": POSTGRES_URL}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--create-db",
                          "tests/console/services/test_sync.py", "tests/console/views/test_views.py",
                          "tests/console/services/test_approval_contract.py"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "postgresql" in subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='console.settings'; "
         "django.setup(); from django.db import connection; print(connection.vendor)"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60).stdout
