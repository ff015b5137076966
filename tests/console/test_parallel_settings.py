"""`make test` on several processes (pytest-xdist): each test process its own Redis database and
plan store folder (`console/parallel_tests.py`), passed on unchanged to the
processes a test starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READ = ("import json, os; from django.conf import settings; os.environ['DJANGO_SETTINGS_MODULE']='console.settings'; "
        "print(json.dumps([settings.REDIS_URL, settings.CLEANLINE_PLAN_STORE, os.environ['REDIS_URL'], "
        "os.environ.get('CLEANLINE_TEST_WORKER', '')]))")


def settings_of(**env: str) -> list[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
            "PYTEST_VERSION": "8", "DJANGO_SETTINGS_MODULE": "console.settings"}
    done = subprocess.run([sys.executable, "-c", READ], cwd=ROOT, env={**base, **env}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("worker", "database"), [("gw0", 15), ("gw1", 14), ("gw2", 12), ("gw3", 11)])
def test_each_test_process_has_its_own_redis_database_and_plan_store(tmp_path: Path, worker: str,
                                                                      database: int) -> None:
    redis, store, environ, marked = settings_of(PYTEST_XDIST_WORKER=worker, REDIS_URL="redis://127.0.0.1:6379/15",
                                                CLEANLINE_PLAN_STORE=str(tmp_path))
    assert redis == environ == f"redis://127.0.0.1:6379/{database}"
    assert store == str(tmp_path / worker) and marked == worker


def test_a_process_a_test_starts_keeps_its_test_process_s_databases(tmp_path: Path) -> None:
    """A Celery worker a test starts inherits the mapped environment and the mark: not mapped again."""
    redis, store, _, _ = settings_of(PYTEST_XDIST_WORKER="gw1", CLEANLINE_TEST_WORKER="gw1",
                                     REDIS_URL="redis://127.0.0.1:6379/14", CLEANLINE_PLAN_STORE=str(tmp_path / "gw1"))
    assert (redis, store) == ("redis://127.0.0.1:6379/14", str(tmp_path / "gw1"))


def test_without_parallel_processes_nothing_changes(tmp_path: Path) -> None:
    redis, store, _, marked = settings_of(REDIS_URL="redis://127.0.0.1:6379/15", CLEANLINE_PLAN_STORE=str(tmp_path))
    assert (redis, store, marked) == ("redis://127.0.0.1:6379/15", str(tmp_path), "")
    assert settings_of(REDIS_URL="redis://127.0.0.1:6379/3", PYTEST_XDIST_WORKER="gw1")[0] == "redis://127.0.0.1:6379/14"
    assert settings_of(REDIS_URL="redis://127.0.0.1:6379/14", PYTEST_XDIST_WORKER="gw1")[0] == "redis://127.0.0.1:6379/12"
