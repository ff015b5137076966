"""The doctor's entry points (timeline/doctor/__init__.py): findings worst first as JSON, the
inspect and maintenance namespaces, unknown kinds, a repair under the writers' lock rule, and the
tables under a root."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.doctor.helpers import LATEST, OLD, age_tree, assert_reads_the_same, copy_base_file, reads
from tests.helpers import FIXTURES, Lake, fake_failed_write, rows, unzip_table
from timeline import HudiTable, LiveWriterUnlocked
from timeline.doctor import KINDS, UnknownKind, diagnose, find_tables
from timeline.instant import format_instant_time
from timeline.storage import MemoryStorage

V9_COW = "sample_table/cow/v9_txns_simple_nometa"


def test_doctor_findings_worst_first_and_json(table_copy) -> None:
    path = table_copy(V9_COW)
    fake_failed_write(path, OLD, markers=False)
    (path / ".hoodie" / "hoodie.properties.backup").write_bytes((path / ".hoodie" / "hoodie.properties").read_bytes())
    age_tree(path)
    findings = HudiTable.open(str(path)).inspect.diagnose()
    assert [(f.kind, f.severity.value) for f in findings] == [("stale-pending", "warning"),
                                                              ("table-properties", "info")]
    data = json.loads(json.dumps([f.to_json() for f in findings]))
    assert set(data[0]) == {"kind", "severity", "summary", "evidence", "why", "repair", "repairable"}
    assert data[0]["evidence"]["instant"] == OLD and data[0]["evidence"]["requestedAt"].startswith("2026-11-01")
    assert KINDS == ("unreadable-instant", "table-properties", "archived-timeline", "stale-pending",
                     "stuck-table-service", "metadata-table-drift", "index-drift", "orphan-files", "clean-lag",
                     "leftover-markers", "leftover-heartbeats")
    with pytest.raises(UnknownKind, match="known: unreadable-instant"):
        diagnose(HudiTable.open(str(path)), kinds=["nonsense"])


def test_doctor_repair_through_maintenance_follows_the_live_writer_rule(table_copy) -> None:
    path = table_copy(V9_COW)
    orphan = copy_base_file(path, "20261102000000000")
    age_tree(path)
    # a write requested just now, with no lock known: the repair is refused, nothing changed
    now = format_instant_time(datetime.now(UTC))
    (Path(HudiTable.open(str(path)).timeline.folder) / f"{now}.commit.requested").write_bytes(b"")
    table = HudiTable.open(str(path))
    plan = table.maintenance().plan_repair("orphan-files")
    with pytest.raises(LiveWriterUnlocked):
        table.maintenance().repair(plan, dry_run=False)
    assert orphan.exists()
    result = table.maintenance(writers_stopped=True).repair(plan, dry_run=False)
    assert result.ok and not orphan.exists()


def test_doctor_find_tables_under_a_root(tmp_path) -> None:
    for table_id in (V9_COW, "sample_table/cow/v9_txns_simple_meta", "sample_table/cow/v6_nonpartitioned"):
        unzip_table(FIXTURES / f"{table_id}.zip", tmp_path / "lake" / table_id.replace("/", "_"))
    (tmp_path / "lake" / "not-a-table" / "sub").mkdir(parents=True)
    found = find_tables(str(tmp_path / "lake"))
    assert [f.rsplit("/", 1)[-1] for f in found] == ["v6_nonpartitioned", "v9_txns_simple_meta",
                                                      "v9_txns_simple_nometa"]  # no metadata table among them


def test_doctor_a_check_the_table_stops_is_itself_a_finding() -> None:
    storage = MemoryStorage()
    lake = Lake(storage, "/t", version=8)
    lake.commit("20261101000000000", {"city=sf": [lake.base_file("city=sf", "fg1", "20261101000000000")]})
    storage.denied.add("/t/city=sf")  # the store refuses to list a partition
    findings = diagnose(HudiTable.load(storage, "/t"))
    assert {f.kind for f in findings} >= {"orphan-files"}
    (orphans,) = [f for f in findings if f.kind == "orphan-files"]
    assert orphans.severity.value == "error" and not orphans.repairable
    assert "permission denied" in orphans.summary and orphans.to_json()["evidence"]["error"]


def test_doctor_an_unreadable_pending_replace_is_reported_not_rolled_back(table_copy) -> None:
    path = table_copy(V9_COW)
    (Path(HudiTable.open(str(path)).timeline.folder) / f"{OLD}.replacecommit.requested").write_bytes(b"garbage")
    age_tree(path)
    findings = diagnose(HudiTable.open(str(path)))
    assert [(f.kind, f.repairable) for f in findings] == [("unreadable-instant", False), ("stale-pending", False)]
    assert findings[1].to_json()["evidence"]["role"] == "other"


def test_doctor_round_trip_compares_every_retained_instant_not_only_the_latest(table_copy) -> None:
    """The round trip's read check (tests/doctor/helpers.py) notices a repair that changes what an
    older retained instant reads while the latest snapshot stays the same."""
    path = table_copy(V9_COW)
    before = reads(path)
    group = next(g for g in HudiTable.open(str(path)).file_system_view().all_file_groups()
                 if len(g.slices) > 1 and g.slices[1].base_file is not None)
    older = group.slices[1]
    assert older.base_file is not None
    (path / older.partition / older.base_file.name).unlink()  # a version an older instant reads
    assert rows(path) == before[LATEST]
    with pytest.raises(AssertionError):
        assert_reads_the_same(path, before)
