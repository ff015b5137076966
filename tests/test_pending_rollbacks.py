"""Pending rollbacks finished as Hudi finishes them (timeline/pending_rollbacks.py): of a write,
of a pending compaction (reverts to requested), of a pending log compaction (its instant files
go), of an instant whose files are gone already; refused when none is pending or its writer is
still running; and `rollback_table_service`, an inflight table service rolled back (the metadata
table's part first). Hand-made timelines (`Lake`), and copies of real tables with a metadata table."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.helpers import stuck_compaction
from tests.helpers import FIXTURES, Lake, unzip_table
from tests.mdt.helpers import add_v6_metadata_table, compact_metadata_table_after
from timeline import CleanlineError, HudiTable, transition
from timeline.instant import COMPACTION, DELTA_COMMIT, LOG_COMPACTION, REPLACE_COMMIT, ROLLBACK, Instant, State
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import update_for_commit
from timeline.metadata.records import CommitMetadata, RollbackMetadata, RollbackPlan
from timeline.metadata.written import by_partition, commit_metadata, write_stat
from timeline.pending_rollbacks import finish_rollback, rollback_table_service
from timeline.rollback import RollbackRefused, plan_rollback
from timeline.storage import MemoryStorage

T = [f"2026110100{i:02d}00000" for i in range(10)]
P = "city=sf"


def lake() -> Lake:
    made = Lake(MemoryStorage(), "/t", version=8)
    made.commit(T[0], {P: [made.base_file(P, "a", T[0])]})
    return made


def pending_rollback(made: Lake, raw: dict) -> Instant:
    return transition.request(HudiTable.load(made.storage, "/t"), ROLLBACK, raw)


def states_of(made: Lake, time: str) -> list[tuple[str, State]]:
    return sorted((i.action, i.state) for i in HudiTable.load(made.storage, "/t").timeline if i.requested_time == time)


def rolled_back(made: Lake, rollback: Instant) -> RollbackMetadata:
    table = HudiTable.load(made.storage, "/t")
    (done,) = [i for i in table.timeline.rollbacks().completed() if i.requested_time == rollback.requested_time]
    return table.read(done, RollbackMetadata)


def beat(made: Lake, time: str) -> None:
    made.storage.write(f"/t/.hoodie/.heartbeat/{time}", b"")  # its writer is alive


def failed_write_with_a_pending_rollback() -> tuple[Lake, str, HudiTable, Instant, Instant]:
    """An inflight commit at T[1] writing one base file, and a requested rollback of it, planned
    as Hudi plans it: the lake, the file, the table as loaded before the rollback was requested,
    the failed write and the pending rollback."""
    made = lake()
    written = made.base_file(P, "b", T[1])
    made.commit(T[1], {P: [written]}, state=State.INFLIGHT)
    table = HudiTable.load(made.storage, "/t")
    (failed,) = table.timeline.pending()
    return made, written, table, failed, pending_rollback(made, plan_rollback(table, failed).plan.to_raw())


def test_pending_rollbacks_refused_when_none_is_pending() -> None:
    made = lake()
    made.commit(T[1], {P: [made.base_file(P, "b", T[1])]}, state=State.INFLIGHT)
    with pytest.raises(RollbackRefused, match=f"no pending rollback of {T[1]}"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [("commit", State.INFLIGHT)]


def test_pending_rollbacks_write_is_finished_from_its_plan() -> None:
    made, written, table, failed, pending = failed_write_with_a_pending_rollback()
    done = finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert (done.requested_time, done.action, done.state) == (pending.requested_time, ROLLBACK, State.COMPLETED)
    assert states_of(made, T[1]) == []
    assert not made.storage.exists(f"/t/{P}/{written}")
    assert rolled_back(made, pending).commits_rollback == (T[1],)


def test_pending_rollbacks_write_still_running_is_refused() -> None:
    made, written, _, _, _ = failed_write_with_a_pending_rollback()
    beat(made, T[1])
    with pytest.raises(RollbackRefused, match="still being written"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert made.storage.exists(f"/t/{P}/{written}")


def test_pending_rollbacks_instant_gone_is_rebuilt_from_the_plan() -> None:
    made, written, table, failed, pending = failed_write_with_a_pending_rollback()
    for status in table.timeline.files_of(failed).values():
        made.storage.delete(status.path)  # the rollback deleted the write's instant files, then died
    beat(made, T[1])  # a gone instant has no writer to wait for
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert not made.storage.exists(f"/t/{P}/{written}")
    metadata = rolled_back(made, pending)
    assert [(i.time, i.action) for i in metadata.instants_rollback] == [(T[1], "commit")]


def test_pending_rollbacks_instant_gone_without_its_action_is_a_deltacommit() -> None:
    made = lake()
    pending = pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": ""},
                                      "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert [(i.time, i.action) for i in rolled_back(made, pending).instants_rollback] == [(T[1], DELTA_COMMIT)]


def test_pending_rollbacks_compaction_reverts_to_requested() -> None:
    made = lake()
    made.schedule_compaction(T[1], [(P, "a", T[0])], state=State.INFLIGHT)
    pending = pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": COMPACTION},
                                      "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [(COMPACTION, State.REQUESTED)]
    assert [(i.time, i.action) for i in rolled_back(made, pending).instants_rollback] == [(T[1], COMPACTION)]


def test_pending_rollbacks_compaction_still_running_is_refused() -> None:
    made = lake()
    made.schedule_compaction(T[1], [(P, "a", T[0])], state=State.INFLIGHT)
    pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": COMPACTION},
                            "RollbackRequests": [], "version": 1})
    beat(made, T[1])
    with pytest.raises(RollbackRefused, match="still being written"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [(COMPACTION, State.INFLIGHT)]


def test_pending_rollbacks_log_compaction_instant_files_go() -> None:
    made = lake()
    plan = {"operations": [], "version": 2}
    made.instant_file(Instant(T[1], LOG_COMPACTION, State.REQUESTED), plan)
    made.instant_file(Instant(T[1], LOG_COMPACTION, State.INFLIGHT))
    pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": LOG_COMPACTION},
                            "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == []


def test_pending_rollbacks_write_follows_the_writers_failed_writes_policy() -> None:
    """validateRollbackCommitSequence applies under EAGER only: the writers' options decide."""
    made = lake()
    written = made.base_file(P, "b", T[1])
    made.commit(T[1], {P: [written]}, state=State.INFLIGHT)
    made.commit(T[2], {P: [made.base_file(P, "c", T[2])]})
    table = HudiTable.load(made.storage, "/t")
    (failed,) = table.timeline.pending()
    pending_rollback(made, plan_rollback(table, failed).plan.to_raw())
    with pytest.raises(RollbackRefused, match=f"found commits after {T[1]}"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])  # the table's policy: EAGER
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1], options={"hoodie.clean.failed.writes.policy": "LAZY"})
    assert states_of(made, T[1]) == [] and not made.storage.exists(f"/t/{P}/{written}")


def test_pending_rollbacks_v6_clustering_replacecommit_reverts_to_requested() -> None:
    """A table-version-6 replacecommit whose plan is a clustering keeps its plan
    (HoodieTable.rollbackInflightClustering), as a clustering does."""
    made = Lake(MemoryStorage(), "/t", version=6)
    made.commit(T[0], {P: [made.base_file(P, "a", T[0])]})
    made.instant_file(Instant(T[1], REPLACE_COMMIT, State.REQUESTED), {"operationType": "cluster"})
    made.instant_file(Instant(T[1], REPLACE_COMMIT, State.INFLIGHT))
    pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": REPLACE_COMMIT},
                            "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [(REPLACE_COMMIT, State.REQUESTED)]


def meta_table(tmp_path: Path) -> tuple[Path, HudiTable, Instant]:
    """v9_txns_simple_meta whose latest write's instant files are gone while a pending rollback
    of it waits (as BaseHoodieTableServiceClient.rollback finds a rollback that died midway)."""
    path = unzip_table(FIXTURES / "sample_table" / "cow" / "v9_txns_simple_meta.zip", tmp_path)
    table = HudiTable.open(str(path))
    target = table.timeline.writes().completed().last()
    assert target is not None
    transition.request(table, ROLLBACK, plan_rollback(table, target).plan.to_raw())
    for status in table.timeline.files_of(target).values():
        table.storage.delete(status.path)
    return path, table.reload(), target


def test_pending_rollbacks_instant_gone_rolls_the_metadata_table_back(tmp_path: Path) -> None:
    path, table, target = meta_table(tmp_path)
    t = target.requested_time
    assert t in {i.requested_time for i in MetadataTable(table).mdt.timeline}
    done = finish_rollback(table, t)
    mdt = MetadataTable(table.reload())
    assert t not in {i.requested_time for i in mdt.mdt.timeline}
    assert [i.requested_time for i in mdt.mdt.timeline.rollbacks().completed()] == [done.requested_time]
    assert not [p for p in (path / ".hoodie" / "metadata").rglob(f"*{t}*")
                if ".hoodie" not in p.relative_to(path / ".hoodie" / "metadata").parts]
    assert table.inspect.validate_metadata_table().ok


def test_pending_rollbacks_instant_gone_refused_once_the_metadata_table_compacted_it(tmp_path: Path) -> None:
    """HoodieBackedTableMetadataWriter.validateRollback, before anything is deleted."""
    path, table, target = meta_table(tmp_path)
    compact_metadata_table_after(path, table, target.requested_time)
    files = sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    with pytest.raises(CleanlineError, match=f"compacted {target.requested_time}"):
        finish_rollback(table.reload(), target.requested_time)
    assert sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts) == files


def test_pending_rollbacks_instant_gone_v6_metadata_table_lists_the_log_files_left(tmp_path: Path) -> None:
    """0.14/0.15: the metadata table's deltacommit at the rollback's time lists the log files the
    rollback leaves (its rollback blocks), from the partitions' rollback metadata."""
    path = unzip_table(FIXTURES / "quickstart_trips_table" / "mor" / "avro" / "v6_trips_8i1u.zip", tmp_path)
    table = add_v6_metadata_table(path)
    target = table.timeline.writes().completed().last()
    assert target is not None
    transition.request(table, ROLLBACK, plan_rollback(table, target).plan.to_raw())
    for status in table.timeline.files_of(target).values():
        table.storage.delete(status.path)
    done = finish_rollback(table.reload(), target.requested_time)
    table.reload()
    rollback = table.read(done, RollbackMetadata)
    left = {n.rpartition("/")[2] for m in rollback.partitions.values()
            for n in [*m.rollback_log_files, *m.log_files_from_failed_commit]}
    assert left  # merge-on-read: rollback blocks
    listed = {n for files in MetadataTable(table).files().values() for n in files}
    assert left <= listed
    assert table.inspect.validate_metadata_table().ok


# rollback_table_service: an inflight compaction, log compaction or clustering rolled back as
# Hudi's rollbackInflightTableService does (timeline/doctor/stuck.py's repair)

def inflight_compaction(made: Lake) -> str:
    """An inflight compaction at T[1] over the file group "a", dead after writing its base file."""
    made.schedule_compaction(T[1], [(P, "a", T[0])], state=State.INFLIGHT)
    return made.base_file(P, "a", T[1])


def test_table_service_rollback_finishes_a_pending_rollback_of_it() -> None:
    """getPendingRollbackInfo(..., false): a compaction with a pending rollback is finished from
    that rollback, no second one requested."""
    made = lake()
    written = inflight_compaction(made)
    table = HudiTable.load(made.storage, "/t")
    pending = pending_rollback(made, plan_rollback(table, table.timeline.find(T[1]), table_service=True).plan.to_raw())
    done = rollback_table_service(HudiTable.load(made.storage, "/t"), T[1])
    assert (done.requested_time, done.action, done.state) == (pending.requested_time, ROLLBACK, State.COMPLETED)
    assert [i.requested_time for i in HudiTable.load(made.storage, "/t").timeline.rollbacks()] == [
        pending.requested_time]
    assert states_of(made, T[1]) == [(COMPACTION, State.REQUESTED)]
    assert not made.storage.exists(f"/t/{P}/{written}")


def test_table_service_rollback_finishes_a_pending_rollback_under_the_writers_options() -> None:
    """A pending rollback of a write asked by name is finished as a write's is: the writers'
    failed-writes policy decides Hudi's sequence rule (validateRollbackCommitSequence, EAGER only)."""
    made, written, _, _, pending = failed_write_with_a_pending_rollback()
    made.commit(T[2], {P: [made.base_file(P, "c", T[2])]})
    with pytest.raises(RollbackRefused, match=f"found commits after {T[1]}"):
        rollback_table_service(HudiTable.load(made.storage, "/t"), T[1])  # the table's policy: EAGER
    done = rollback_table_service(HudiTable.load(made.storage, "/t"), T[1],
                                  options={"hoodie.clean.failed.writes.policy": "LAZY"})
    assert done.requested_time == pending.requested_time
    assert states_of(made, T[1]) == [] and not made.storage.exists(f"/t/{P}/{written}")


def test_table_service_rollback_refused_without_the_instant_word_for_word() -> None:
    made = lake()
    table = HudiTable.load(made.storage, "/t")
    with pytest.raises(RollbackRefused) as refused:
        rollback_table_service(table, T[1])
    assert str(refused.value) == (f"{table.uri}: no inflight compaction, log compaction or clustering {T[1]} "
                                  "on the active timeline")


def test_table_service_rollback_refuses_a_requested_service() -> None:
    """A requested compaction wrote nothing: a writer runs it."""
    made = lake()
    made.schedule_compaction(T[1], [(P, "a", T[0])])
    with pytest.raises(RollbackRefused, match=f"no inflight compaction, log compaction or clustering {T[1]}"):
        rollback_table_service(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [(COMPACTION, State.REQUESTED)]
    assert not list(HudiTable.load(made.storage, "/t").timeline.rollbacks())


def test_table_service_rollback_refuses_a_write() -> None:
    """An inflight write is the failed-writes rollback's, not a table service's."""
    made = lake()
    written = made.base_file(P, "b", T[1])
    made.commit(T[1], {P: [written]}, state=State.INFLIGHT)
    with pytest.raises(RollbackRefused, match=f"no inflight compaction, log compaction or clustering {T[1]}"):
        rollback_table_service(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [("commit", State.INFLIGHT)] and made.storage.exists(f"/t/{P}/{written}")


def test_table_service_rollback_requests_its_plan() -> None:
    """The rollback's requested file holds its HoodieRollbackPlan (what a killed run resumes from):
    the compaction's base file, planned as plan_rollback(table_service=True) plans it."""
    made = lake()
    written = inflight_compaction(made)
    table = HudiTable.load(made.storage, "/t")
    planned = plan_rollback(table, table.timeline.find(T[1]), table_service=True).plan
    done = rollback_table_service(table, T[1])
    assert table.reload().read(done, RollbackPlan, State.REQUESTED) == planned
    assert [[f.rpartition("/")[2] for f in r.files_to_delete] for r in planned.requests] == [[written]]
    assert states_of(made, T[1]) == [(COMPACTION, State.REQUESTED)]


MOR_META = FIXTURES / "sample_table" / "mor" / "avro" / "v9_txns_simple_meta.zip"
STUCK = "20261101000000000"  # later than the fixture's instants


def stuck_compaction_in_the_metadata_table(tmp_path: Path) -> tuple[Path, HudiTable, Path]:
    """v9_txns_simple_meta (merge-on-read) with an inflight compaction at STUCK that died after
    writing its base file and the metadata table's completed deltacommit of it (Hudi writes the
    MDT before completing the data-table instant): the lake, the table, the partial file."""
    path = unzip_table(MOR_META, tmp_path)
    _, (partial,) = stuck_compaction(path, STUCK)
    table = HudiTable.open(str(path))
    partition = partial.parent.relative_to(path).as_posix()
    stat = write_stat(file_id=partial.name.split("_")[0], path=f"{partition}/{partial.name}", prev_commit=STUCK,
                      partition_path=partition, file_size_in_bytes=partial.stat().st_size)
    update_for_commit(MetadataTable(table), STUCK, CommitMetadata.from_raw(
        commit_metadata(by_partition([stat]), "compact", None, compacted=True)))
    assert MetadataTable(table.reload()).mdt.timeline.completed().find(STUCK) is not None
    return path, table, partial


def test_table_service_rollback_rolls_the_metadata_table_back(tmp_path: Path) -> None:
    """The metadata table's deltacommit of the compaction is rolled back at the rollback's time
    (BaseRollbackActionExecutor writes the MDT first, as for a write)."""
    path, table, partial = stuck_compaction_in_the_metadata_table(tmp_path)
    done = rollback_table_service(table, STUCK)
    assert not partial.exists()
    mdt = MetadataTable(table.reload())
    assert STUCK not in {i.requested_time for i in mdt.mdt.timeline}
    assert [i.requested_time for i in mdt.mdt.timeline.rollbacks().completed()] == [done.requested_time]
    assert not [p for p in (path / ".hoodie" / "metadata").rglob(f"*{STUCK}*")
                if ".hoodie" not in p.relative_to(path / ".hoodie" / "metadata").parts]
    assert [(i.action, i.state) for i in table.timeline if i.requested_time == STUCK] == [(COMPACTION, State.REQUESTED)]
    assert table.inspect.validate_metadata_table().ok


def test_table_service_rollback_refused_once_the_metadata_table_compacted_it(tmp_path: Path) -> None:
    """HoodieBackedTableMetadataWriter.validateRollback, before anything is deleted or requested."""
    path, table, partial = stuck_compaction_in_the_metadata_table(tmp_path)
    compact_metadata_table_after(path, table, STUCK)
    files = sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    with pytest.raises(CleanlineError, match=f"compacted {STUCK}"):
        rollback_table_service(table.reload(), STUCK)
    assert partial.exists()
    assert sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts) == files
    assert not list(table.reload().timeline.rollbacks())
