"""Restore and rollback killed part-way (SIGKILL) and re-run end as an uninterrupted run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, rows, unzip_table
from timeline import HudiTable
from timeline.savepoint import create_savepoint

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"
KILLER = """
import os, signal, sys, threading
from timeline.storage.arrow import LocalStorage
from timeline import HudiTable
limit, count = int(sys.argv[3]), [0]
real_delete = LocalStorage.delete
def delete(self, path):
    gone = real_delete(self, path)
    count[0] += 1
    if count[0] >= limit:
        os.kill(os.getpid(), signal.SIGKILL)
    return gone
LocalStorage.delete = delete
table = HudiTable.open(sys.argv[1])
if sys.argv[2].startswith("restore:"):
    from timeline.restore import restore
    restore(table, sys.argv[2].split(":")[1])
else:
    from timeline.rollback import rollback
    rollback(table, sys.argv[2].split(":")[1])
"""


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}


def write_times(path: Path) -> list[str]:
    return [i.requested_time for i in HudiTable.open(str(path)).timeline.writes()]


@pytest.mark.parametrize("operation", ["restore", "rollback"])
def test_killed_restore_or_rollback_finishes_on_rerun(tmp_path: Path, operation: str) -> None:
    killed, straight = (unzip_table(FIXTURES / f"{TABLE}.zip", tmp_path / side) for side in ("a", "b"))
    commits = [i.requested_time for i in HudiTable.open(str(killed)).timeline.commits().completed()]
    target = commits[2] if operation == "restore" else commits[-1]
    for path in (killed, straight):
        if operation == "restore":
            create_savepoint(HudiTable.open(str(path)), target)
    expected = rows(straight, target if operation == "restore" else commits[-2])
    argument = f"{operation}:{target}"
    run = subprocess.run([sys.executable, "-c", KILLER, str(killed), argument, "3"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == -9, run.stderr
    assert data_files(killed) != data_files(straight)  # it died part-way
    for path in (killed, straight):
        table = HudiTable.open(str(path))
        if operation == "restore":
            from timeline.restore import restore
            restore(table, target)
        else:
            from timeline.rollback import rollback
            rollback(table, target)
    assert data_files(killed) == data_files(straight)
    assert write_times(killed) == write_times(straight)
    assert rows(killed) == rows(straight) == expected
    timeline = HudiTable.open(str(killed)).timeline
    assert not timeline.pending().filter(lambda i: i.action in ("restore", "rollback"))
