"""The rehearsal of a version change (timeline/versions/rehearse.py) and the commands
`cleanline version rehearse|upgrade|downgrade` (timeline/cli_version.py), in this process on
copies of real fixture tables: the rehearsal changes a copy whose `.hoodie` is copied and whose
data files are hard links, verifies it, and writes nothing to the table; the commands refuse while
a preflight blocker stands, ask unless --yes, take the table's lock, and say what they did."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import rows, tree_snapshot
from timeline import HudiTable
from timeline.cli import main
from timeline.locks import LockUnavailable
from timeline.locks.filesystem import FILESYSTEM_BASED_LOCK_PROVIDER
from timeline.versions.change import VersionChangeRefused
from timeline.versions.rehearse import copy_table, fsview_rows, timeline_rows

V9_MDT = "sample_table/cow/v9_timebasedkeygen_nonhivestyle"
V6_COW = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
V6_MOR_LOGS = "sample_table/mor/parquet/v6_nonpartitioned"
FS_LOCK = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
           "hoodie.write.lock.provider": FILESYSTEM_BASED_LOCK_PROVIDER,
           "hoodie.write.lock.filesystem.expire": "1", "hoodie.write.lock.wait_time_ms": "300"}


def test_version_rehearsal_changes_a_linked_copy_and_checks_it(fixture_lake: dict[str, Path], tmp_path: Path) -> None:
    path = shutil.copytree(fixture_lake[V9_MDT], tmp_path / "t")
    before = tree_snapshot(path)
    maintenance = HudiTable.open(str(path)).maintenance()
    at8 = maintenance.rehearse_version_change(8, work_dir=str(tmp_path))
    assert at8.passed and at8.rows == len(rows(path)) and at8.rows_equal
    assert at8.metadata_table.startswith("valid (") and at8.plan is not None
    assert [s.index_partitions_dropped for s in at8.plan.ran] == [("column_stats",)]
    refused = maintenance.rehearse_version_change(6, work_dir=str(tmp_path))
    assert not refused.passed and refused.plan is None
    assert any("compacts the metadata table" in r for r in refused.refused)
    at6 = maintenance.rehearse_version_change(6, drop_metadata_table=True, work_dir=str(tmp_path), keep=True)
    assert at6.passed and at6.metadata_table == "none" and not at6.timeline_differences
    copy = Path(at6.folder) / "t"
    assert HudiTable.open(str(copy)).version == 6 and (copy / ".hoodie" / "hoodie.properties").is_file()
    data = [p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts]
    assert data and all(os.stat(copy / p.relative_to(path)).st_ino == os.stat(p).st_ino for p in data)
    assert not (copy / ".hoodie" / "metadata").exists() and (path / ".hoodie" / "metadata").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["t", Path(at6.folder).name])  # the others removed
    assert tree_snapshot(path) == before


def test_version_rehearsal_finds_a_copy_that_reads_differently(fixture_lake: dict[str, Path], tmp_path: Path) -> None:
    """What the checks compare: a copy whose last commit is gone reads other instants and slices."""
    table = HudiTable.open(str(fixture_lake[V6_COW]))
    copy = HudiTable.open(copy_table(table, str(tmp_path)))
    assert (timeline_rows(copy), fsview_rows(copy)) == (timeline_rows(table), fsview_rows(table))
    last = table.timeline.completed().last()
    assert last is not None
    (Path(copy.base) / ".hoodie" / last.file_name(1)).unlink()
    assert timeline_rows(copy) != timeline_rows(table) and fsview_rows(copy) != fsview_rows(table)


def test_version_change_refused_while_a_blocker_stands_writes_nothing(fixture_lake: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    path = shutil.copytree(fixture_lake[V6_MOR_LOGS], tmp_path / "t")
    before = tree_snapshot(path)
    maintenance = HudiTable.open(str(path)).maintenance()
    plan = maintenance.change_version(8)
    assert plan.dry_run and not plan.done and any(r.startswith("log files to compact") for r in plan.refused)
    with pytest.raises(VersionChangeRefused, match="log files to compact"):
        maintenance.change_version(8, dry_run=False)
    report = maintenance.rehearse_version_change(8, work_dir=str(tmp_path))
    assert not report.passed and report.refused
    assert tree_snapshot(path) == before


def test_version_change_takes_the_tables_lock(fixture_lake: dict[str, Path], tmp_path: Path) -> None:
    path = shutil.copytree(fixture_lake[V6_COW], tmp_path / "t")
    lock_file = path / ".hoodie" / "lock"
    lock_file.write_bytes(b'{"lockCreateTime":"2026-11-27 08:00:00.000","lockThreadName":"main"}')
    before = tree_snapshot(path)
    with pytest.raises(LockUnavailable):
        HudiTable.open(str(path)).maintenance(options=FS_LOCK).change_version(9, dry_run=False)
    assert tree_snapshot(path) == before
    lock_file.unlink()
    maintenance = HudiTable.open(str(path)).maintenance(options=FS_LOCK)
    assert maintenance.change_version(9, dry_run=False).done
    assert len(maintenance.decisions) == 2 and all(d.locked for d in maintenance.decisions)
    assert not lock_file.exists() and HudiTable.open(str(path)).version == 9


def test_version_cli_rehearse_upgrade_and_downgrade(fixture_lake: dict[str, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = shutil.copytree(fixture_lake[V6_COW], tmp_path / "t")
    expected = rows(path)
    before = tree_snapshot(path)
    assert main(["version", "rehearse", str(path), "--to", "9", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["passed"] and shown["rowsEqual"] and [s["to"] for s in shown["plan"]["steps"]] == [8, 9]
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["version", "upgrade", str(path), "--to", "9"]) == 2  # answered no: cancelled
    assert main(["version", "downgrade", str(path), "--to", "8", "--yes"]) == 2  # not a downgrade
    assert tree_snapshot(path) == before
    capsys.readouterr()
    assert main(["version", "upgrade", str(path), "--to", "9", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "moved from table version 6 to 9" in out and "- step 6 -> 8: 9 instant file(s) moved (7 converted)" in out
    assert HudiTable.open(str(path)).version == 9 and rows(path) == expected
    assert main(["version", "downgrade", str(path), "--to", "6", "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["done"] and [(s["from"], s["to"]) for s in done["steps"]] == [(9, 8), (8, 6)]
    assert HudiTable.open(str(path)).version == 6 and rows(path) == expected
    blocked = shutil.copytree(fixture_lake[V6_MOR_LOGS], tmp_path / "mor")
    assert main(["version", "upgrade", str(blocked), "--to", "8", "--yes"]) == 1
    assert "refused: log files to compact" in capsys.readouterr().out
    assert HudiTable.open(str(blocked)).version == 6


def test_version_change_refuses_a_later_step_before_the_first_runs(fixture_lake: dict[str, Path],
                                                                   tmp_path: Path) -> None:
    """9 -> 6 with a metadata table: the 8 -> 6 step would need it compacted, so the change is
    refused before 9 -> 8 writes anything; dropping it lets the change go."""
    path = shutil.copytree(fixture_lake[V9_MDT], tmp_path / "t")
    before = tree_snapshot(path)
    maintenance = HudiTable.open(str(path)).maintenance()
    plan = maintenance.change_version(6)
    assert [s.step.to_version for s in plan.steps] == [8, 6] and len(plan.refused) == 1
    with pytest.raises(VersionChangeRefused, match="compacts the metadata table"):
        maintenance.change_version(6, dry_run=False)
    assert tree_snapshot(path) == before
    done = maintenance.change_version(6, dry_run=False, drop_metadata_table=True)
    assert [s.metadata_table for s in done.ran] == ["changed", "dropped"]
    assert not (path / ".hoodie" / "metadata").exists() and HudiTable.open(str(path)).config.metadata_partitions == ()
