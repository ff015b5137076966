"""An archival killed (SIGKILL, no clean-up) at each point of Hudi's order, then run again: after
the archive log file or LSM data file, after the LSM manifest, after `_version_` was deleted,
half-way through the requested and inflight files, after the first completed file. At every
point the table reads as before (timeline, archived timeline, file slices, hudi-rs rows), no
archived action looks pending, none is lost; the re-run ends with every instant archived once."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import ours, rows
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.archive.archiver import archive_instants
from timeline.archived_timeline import archived_entries, latest_snapshot_version, snapshot_files
from timeline.instant import Instant
from timeline.metadata.archived import ArchivedEntry

V6 = "sample_table/mor/parquet/v6_nonpartitioned_rollback"
V9 = "sample_table/mor/avro/v9_txns_simple_meta"

# Archives the instants named on the command line and kills its own process at one point:
#   after-data      right after the archive log file / LSM data file is written;
#   after-manifest  right after the LSM manifest is written (`_version_` still the old one);
#   no-version      right after `_version_` is deleted (before it is written again);
#   mid-pending     after half of the requested and inflight files are deleted;
#   after-completed after the first completed file is deleted.
KILLER = """
import os, signal, sys
from timeline import HudiTable
from timeline.archive.archiver import archive_instants
from timeline.storage.arrow import LocalStorage
path, point, pending = sys.argv[1], sys.argv[2], int(sys.argv[3])
real_write, real_delete = LocalStorage.write, LocalStorage.delete
deleted = []
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def write(self, target, data, **kw):
    real_write(self, target, data, **kw)
    name = target.rsplit("/", 1)[-1]
    if point == "after-data" and (name.startswith(".commits_.archive.") or name.endswith("_0.parquet")):
        die()
    if point == "after-manifest" and name.startswith("manifest_"):
        die()
def delete(self, target):
    found = real_delete(self, target)
    name = target.rsplit("/", 1)[-1]
    if point == "no-version" and name == "_version_":
        die()
    if "/history/" not in target and "/archived/" not in target:
        deleted.append(name)
        if point == "mid-pending" and len(deleted) == pending // 2:
            die()
        if point == "after-completed" and len(deleted) == pending + 1:
            die()
    return found
LocalStorage.write, LocalStorage.delete = write, delete
table = HudiTable.open(path)
wanted = set(sys.argv[4:])
archive_instants(table, [i for i in table.timeline if i.requested_time in wanted])
"""


def archived_once(table: HudiTable) -> bool:
    """No instant in the archived timeline's files twice (v6 entries per state, LSM rows)."""
    folder = table.path(table.config.archive_folder)
    if table.config.layout_version >= 2:
        files = snapshot_files(table.storage, folder, latest_snapshot_version(table.storage, folder))
        times = [t for f in files for t in pq.read_table(Path(folder) / f.name).column("instantTime").to_pylist()]
        return all(n == 1 for n in Counter(times).values())
    keys = Counter((e.time, e.action, e.state) for raw in archived_entries(table.storage, folder)
                   if (e := ArchivedEntry.from_raw(raw)))
    return all(n == 1 for n in keys.values())


def check_readable(path: Path, every: list[Instant], expected_rows: list[tuple], expected_slices: list) -> None:
    table = HudiTable.open(str(path))
    active, archived = list(table.timeline), list(load_archived_timeline(table))
    assert all(i.is_completed for i in active), [str(i) for i in active if not i.is_completed]
    listed = {(i.requested_time, i.action) for i in [*active, *archived]}
    assert {(i.requested_time, i.action) for i in every} <= listed  # nothing lost
    assert archived_once(table)
    assert ours(table) == expected_slices
    assert rows(path) == expected_rows


@pytest.mark.parametrize(("table_id", "point"), [
    (V6, "after-data"), (V6, "mid-pending"), (V6, "after-completed"),
    (V9, "after-data"), (V9, "after-manifest"), (V9, "no-version"), (V9, "mid-pending"), (V9, "after-completed"),
])
def test_archive_killed_at_each_point_is_readable_and_finishes_on_rerun(
        table_copy: Callable[[str], Path], table_id: str, point: str) -> None:
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    every = list(table.timeline)
    candidates = [i for i in table.timeline.completed() if i.action in ("commit", "deltacommit", "rollback")]
    moved = candidates[:max(2, len(candidates) // 2)]
    pending_files = sum(len(table.timeline.files_of(i)) - 1 for i in moved)
    expected_rows, expected_slices = rows(path), ours(table)

    run = subprocess.run([sys.executable, "-c", KILLER, str(path), point, str(pending_files),
                          *(i.requested_time for i in moved)], capture_output=True, text=True, timeout=300)
    assert run.returncode == -9, run.stderr
    check_readable(path, every, expected_rows, expected_slices)

    result = archive_instants(HudiTable.open(str(path)), moved)
    assert set(result.archived) | set(result.already_archived) | set(result.gone) == set(moved)
    check_readable(path, every, expected_rows, expected_slices)
    table = HudiTable.open(str(path))
    assert [(i.requested_time, i.action) for i in load_archived_timeline(table)] == [
        (i.requested_time, i.action) for i in moved]
    assert not {i.requested_time for i in moved} & {i.requested_time for i in table.timeline}
