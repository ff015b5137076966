"""The metadata table's own compaction (timeline/services/mdt.py) and why it does not run, on a
real Hudi 1.x merge-on-read table with a metadata table (v8_trips_8i3u1d) whose timelines are then
changed by hand: HoodieBackedTableMetadataWriter.validateTimelineBeforeSchedulingCompaction and
compactIfNecessary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from timeline import HudiTable, metadata
from timeline.instant import Instant, State, moment_of
from timeline.services import CompactionWhy, ReasonKind

TABLE = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
MDT_LATEST_DELTA_COMMIT = "20251220210130911"
MDT_LAST_COMPACTION = "20251220210130942"


def why(path: Path, **options: str) -> CompactionWhy:
    table = HudiTable.open(str(path))
    return table.inspect.why_not_compacting(options or None, now=moment_of("20251221000000000", "UTC"))


def mdt_kinds(answer: CompactionWhy) -> list[ReasonKind]:
    return [r.kind for r in answer.reasons if r.kind.name.startswith("METADATA_TABLE")]


def test_mdt_compaction_state_of_a_real_table(fixture_lake: dict[str, Path]) -> None:
    state = HudiTable.open(str(fixture_lake[TABLE])).inspect.table_services().metadata_table
    assert state is not None
    assert (state.last_compaction, state.latest_delta_commit) == (MDT_LAST_COMPACTION, MDT_LATEST_DELTA_COMMIT)
    assert state.delta_commits == 1 and state.max_delta_commits == 10 and not state.due
    assert state.pending == () and state.blocking_instants == ()


def test_mdt_trigger_not_met_until_enough_delta_commits(fixture_lake: dict[str, Path]) -> None:
    answer = why(fixture_lake[TABLE])
    (reason,) = [r for r in answer.reasons if r.kind is ReasonKind.METADATA_TABLE_TRIGGER_NOT_MET]
    assert reason.setting == "hoodie.metadata.compact.max.delta.commits" and not reason.blocking
    assert "1 delta commits" in reason.why and reason.change.startswith("9 more")
    assert mdt_kinds(why(fixture_lake[TABLE], **{"hoodie.metadata.compact.max.delta.commits": "1"})) == []


def test_mdt_compaction_blocked_by_a_pending_data_table_instant(table_copy: Callable[[str], Path]) -> None:
    """apache/hudi #11535: a data-table write pending at or before the metadata table's latest
    delta commit keeps the metadata table from compacting; one after it does not."""
    path = table_copy(TABLE)
    timeline = path / ".hoodie" / "timeline"
    (timeline / "20251220210130900.deltacommit.requested").write_bytes(b"")
    answer = why(path, **{"hoodie.metadata.compact.max.delta.commits": "1"})
    (reason,) = [r for r in answer.reasons if r.kind is ReasonKind.METADATA_TABLE_BLOCKED]
    assert reason.instant == Instant("20251220210130900", "deltacommit", State.REQUESTED)
    assert reason.rule == "HoodieBackedTableMetadataWriter.validateTimelineBeforeSchedulingCompaction"
    assert "rollback --failed" in reason.change
    (timeline / "20251220210130900.deltacommit.requested").unlink()
    # committed on the metadata table, failed on the data table: the same time is pending (findInstantsBeforeOrEquals)
    done = timeline / f"{MDT_LATEST_DELTA_COMMIT}_20251220210131755.deltacommit"
    kept = done.read_bytes()
    done.unlink()
    (reason,) = [r for r in why(path, **{"hoodie.metadata.compact.max.delta.commits": "1"}).reasons
                 if r.kind is ReasonKind.METADATA_TABLE_BLOCKED]
    assert reason.instant == Instant(MDT_LATEST_DELTA_COMMIT, "deltacommit", State.INFLIGHT)
    done.write_bytes(kept)
    (timeline / "20251220210131999.deltacommit.requested").write_bytes(b"")  # after the MDT's latest delta commit
    assert mdt_kinds(why(path, **{"hoodie.metadata.compact.max.delta.commits": "1"})) == []


def test_mdt_compaction_waits_for_its_own_pending_compaction(table_copy: Callable[[str], Path]) -> None:
    path = table_copy(TABLE)
    folder = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    pending = Instant("20251220210131900", "compaction", State.REQUESTED)
    (folder / pending.file_name(2)).write_bytes(metadata.encode({"operations": [], "version": 2},
                                                                action="compaction", state=State.REQUESTED, layout=2))
    answer = why(path, **{"hoodie.metadata.compact.max.delta.commits": "1"})
    assert mdt_kinds(answer) == [ReasonKind.METADATA_TABLE_PENDING_COMPACTION]
    assert answer.reasons[-1].instant == pending
    state = HudiTable.open(str(path)).inspect.table_services().metadata_table
    assert state is not None and [p.instant for p in state.pending] == [pending] and state.blocked
