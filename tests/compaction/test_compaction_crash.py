"""A compaction that crashed midway (inflight, a partial set of new base files, no heartbeat) is
rolled back to requested as Hudi's `rollbackInflightCompaction` does and run again from its plan
to the same rows; one whose heartbeat is alive is left alone (timeline/services/compactor.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import FIXTURES, rows, tree_snapshot, unzip_table
from timeline import HudiTable
from timeline.instant import COMPACTION, ROLLBACK, State
from timeline.mdt.reader import MetadataTable
from timeline.mdt.validate import validate_files
from timeline.metadata.records import RollbackMetadata
from timeline.rollback import RollbackRefused
from timeline.services.refusals import CompactionRefused

V9 = "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"   # two file groups to compact, a metadata table
V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"


class Crash(Exception):
    pass


def crash_after_first_file(path: Path) -> tuple[str, list[Path]]:
    """Schedule and start a compaction that dies once its first new base file is written."""
    maintenance = HudiTable.open(str(path)).maintenance()
    plan = maintenance.compact(dry_run=False)
    assert plan.instant is not None and len(plan.operations) == 2
    written: list[Path] = []

    def die(file_path: str) -> None:
        written.append(Path(file_path.removeprefix("file:")))
        raise Crash(file_path)

    with pytest.raises(Crash):
        maintenance.run_compaction(after_file=die)
    return plan.instant.requested_time, written


def test_a_stuck_inflight_compaction_is_rolled_back_and_run_again_to_the_same_rows(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / f"{V9}.zip", tmp_path / "t")
    before = rows(path)
    t, partial = crash_after_first_file(path)
    table = HudiTable.open(str(path))
    assert [i.state for i in table.timeline if i.requested_time == t] == [State.INFLIGHT]
    assert len(partial) == 1 and partial[0].exists()
    assert rows(path) == before  # readers ignore the inflight compaction's files
    result = HudiTable.open(str(path)).maintenance().run_compaction()
    assert result.rolled_back is not None and result.rolled_back.action == ROLLBACK
    rollback = HudiTable.open(str(path)).read(result.rolled_back, RollbackMetadata)
    deleted = [name for m in rollback.partitions.values() for name in m.success_delete_files]
    assert [Path(d).name for d in deleted] == [partial[0].name]  # its partial file went (then written anew)
    assert result.instant.requested_time == t and sorted(Path(f).name for f in result.files) == sorted(
        p.name for p in path.rglob(f"*_{t}.parquet"))
    assert rows(path) == before
    assert validate_files(MetadataTable(HudiTable.open(str(path)))).ok


def test_a_compaction_with_a_live_heartbeat_is_left_alone(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / f"{V9}.zip", tmp_path / "t")
    t, partial = crash_after_first_file(path)
    heartbeat = path / ".hoodie" / ".heartbeat" / t
    heartbeat.parent.mkdir(parents=True, exist_ok=True)
    heartbeat.write_bytes(b"")  # its job is alive
    snapshot = tree_snapshot(path)
    with pytest.raises(RollbackRefused, match="heartbeat is alive"):
        HudiTable.open(str(path)).maintenance(writers_stopped=True).run_compaction()
    assert tree_snapshot(path) == snapshot and partial[0].exists()


def test_a_requested_compaction_left_by_a_crash_runs_from_its_plan(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    before = rows(path)
    plan = HudiTable.open(str(path)).maintenance().compact(dry_run=False)
    assert plan.instant is not None
    result = HudiTable.open(str(path)).maintenance().run_compaction(instant=plan.instant.requested_time)
    assert result.rolled_back is None and rows(path) == before
    with pytest.raises(CompactionRefused, match="no pending compaction"):
        HudiTable.open(str(path)).maintenance().run_compaction()
    assert COMPACTION not in {i.action for i in HudiTable.open(str(path)).timeline.pending()}
