"""Stale pending writes and table services (timeline/doctor/stale.py), on copies of real tables
damaged as apache/hudi #9193 and #9213 describe: a crashed write's inflight instant and its files
without markers, a clean scheduled and never run."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.doctor.helpers import OLD, age_tree, clustering_plan, round_trip
from tests.helpers import fake_failed_write, rows
from tests.mdt.helpers import compact_metadata_table_after
from timeline import CleanConfig, HudiTable, metadata, transition
from timeline.clean.executor import schedule_clean
from timeline.clean.planner import plan_clean
from timeline.config import update_config
from timeline.doctor import DoctorSettings, RepairInvalidated, RepairUnavailable, diagnose, plan_repair, run_repair
from timeline.doctor.findings import NO_REPAIR
from timeline.doctor.stale import StaleEvidence
from timeline.instant import CLUSTERING, COMPACTION, DELTA_COMMIT, ROLLBACK, Instant, State
from timeline.metadata.records import InstantRef
from timeline.rollback import plan_rollback

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
V9_MOR = "sample_table/mor/avro/v9_txns_simple_nometa"
KIND = "stale-pending"


LAZY = DoctorSettings(options={"hoodie.clean.failed.writes.policy": "LAZY"})  # as the writers are given it
INCLUDE = DoctorSettings(include_ingestion_commits=True)


def test_stale_crashed_write_without_markers_is_rolled_back_and_reads_the_same(table_copy) -> None:
    """Under the writers' LAZY policy (their options, not hoodie.properties) a stale commit
    without a heartbeat (expired) is offered and rolled back."""
    path = table_copy(V9_COW)
    before = rows(path)
    written = fake_failed_write(path, OLD, markers=False)
    sizes = sorted((str(f), f.stat().st_size) for f in written)
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, settings=LAZY)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, StaleEvidence)
    assert (evidence.instant, evidence.action, evidence.state, evidence.role) == (OLD, "commit", "INFLIGHT", "write")
    assert evidence.heartbeat == "none" and evidence.markers is False
    assert (evidence.files, evidence.bytes) == (2, sum(size for _, size in sizes))
    assert finding.repairable and evidence.age_seconds > 3 * 3600
    # the preview names exactly the rollback and the files it deletes, with their bytes
    assert [c.key for c in plan.changes] == [("rollback", OLD), *(("delete", p) for p, _ in sizes)]
    assert sorted((c.target, c.bytes) for c in plan.changes if c.action == "delete") == sizes
    assert plan.bytes == evidence.bytes
    assert result.ok and not result.skipped and {c.key for c in result.done} == {c.key for c in plan.changes}
    assert not any(f.exists() for f in written)
    assert after == []  # healthy: no stale write, and no orphan left behind
    assert HudiTable.open(str(path)).timeline.find(OLD) is None
    assert rows(path) == before


def test_stale_threshold_and_live_heartbeat(table_copy) -> None:
    path = table_copy(V9_COW)
    fake_failed_write(path, OLD, markers=True)
    age_tree(path)
    table = HudiTable.open(str(path))
    requested = datetime(2026, 11, 1, tzinfo=UTC)  # the instant's time (the container runs in UTC)
    assert diagnose(table, kinds=[KIND], now=requested + timedelta(hours=2)) == []  # younger than 180 minutes
    (finding,) = diagnose(table, kinds=[KIND], now=requested + timedelta(hours=4))
    assert isinstance(finding.evidence, StaleEvidence) and finding.evidence.markers is True
    heartbeat = path / ".hoodie" / ".heartbeat" / OLD
    heartbeat.parent.mkdir(parents=True, exist_ok=True)
    heartbeat.write_bytes(b"")  # touched now: its writer is alive
    assert diagnose(table, kinds=[KIND]) == []
    gone = time.time() - 600
    os.utime(heartbeat, (gone, gone))  # expired (60 s x 2)
    (finding,) = diagnose(table, kinds=[KIND])
    assert isinstance(finding.evidence, StaleEvidence) and finding.evidence.heartbeat.startswith("expired")


def test_stale_pending_clean_is_finished_from_its_plan(table_copy) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    table = HudiTable.open(str(path))
    config = CleanConfig(commits_retained=1)
    planned = plan_clean(table, config)
    assert planned.files_to_delete
    clean = schedule_clean(table, planned, config)  # scheduled, never run: its writer died
    assert clean is not None
    settings = DoctorSettings(stale_after=timedelta(0))
    found, plan, result, after = round_trip(path, KIND, settings=settings)
    (finding,) = found
    assert isinstance(finding.evidence, StaleEvidence) and finding.evidence.role == "clean"
    assert plan.changes[0].key == ("run clean", clean.requested_time)
    assert {c.target for c in plan.changes if c.action == "delete"} == {d.path for d in planned.files_to_delete}
    assert plan.bytes == planned.bytes_to_delete
    assert result.ok and len(result.done) == len(plan.changes)
    assert not any(Path(d.path.removeprefix("file:")).exists() for d in planned.files_to_delete)
    assert HudiTable.open(str(path)).timeline.cleans().completed().last().requested_time == clean.requested_time
    assert [f for f in after if f.kind == KIND] == []
    assert rows(path) == before


def test_stale_table_service_offers_no_repair(table_copy) -> None:
    path = table_copy("sample_table/mor/avro/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    piece = table.file_system_view().latest_slices()[0]
    plan = {"operations": [{"baseInstantTime": piece.base_instant_time, "fileId": piece.file_id,
                            "partitionPath": piece.partition, "deltaFilePaths": [log.name for log in piece.log_files],
                            "dataFilePath": piece.base_file.name if piece.base_file else None}], "version": 2}
    requested = Instant(OLD, COMPACTION, State.REQUESTED)
    data = metadata.encode(plan, action=COMPACTION, state=State.REQUESTED, layout=2)
    (Path(table.timeline.folder) / requested.file_name(2)).write_bytes(data)
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, StaleEvidence) and finding.evidence.role == "table service"
    assert not finding.repairable and finding.repair == (
        f"{NO_REPAIR}a Hudi writer must run the requested compaction {OLD} (run_compaction, run_clustering): it "
        "has not started, so nothing of it is left to roll back")
    with pytest.raises(RepairUnavailable, match="no repair Cleanline runs"):
        plan_repair(HudiTable.open(str(path)), KIND)


def test_stale_write_with_a_pending_rollback_is_finished_by_that_rollback(table_copy) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    written = fake_failed_write(path, OLD, markers=True)
    table = HudiTable.open(str(path))
    (failed,) = [i for i in table.timeline.pending() if i.requested_time == OLD]
    pending = transition.request(table, ROLLBACK, plan_rollback(table, failed).plan.to_raw())  # then the writer died
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, settings=DoctorSettings(stale_after=timedelta(0)))
    assert sorted((f.evidence.instant, f.evidence.role) for f in found  # type: ignore[attr-defined]
                  ) == [(OLD, "write"), (pending.requested_time, "rollback")]
    assert [c.key for c in plan.changes if c.action == "rollback"] == [("rollback", OLD)]  # planned once
    assert result.ok and not any(f.exists() for f in written)
    done = HudiTable.open(str(path)).timeline.rollbacks().completed()
    assert [i.requested_time for i in done] == [pending.requested_time]  # the pending rollback, finished
    assert [f for f in after if f.kind == KIND] == []
    assert rows(path) == before


def test_stale_rollback_refused_when_it_would_delete_more_than_previewed(table_copy) -> None:
    path = table_copy(V9_COW)
    written = fake_failed_write(path, OLD, markers=False)
    age_tree(path)
    plan = plan_repair(HudiTable.open(str(path)), KIND, settings=INCLUDE)
    late = written[0].with_name(written[0].name.replace("9-9-9", "7-7-7"))
    shutil.copy(written[0], late)  # found by the listing-based rollback now, never previewed
    with pytest.raises(RepairInvalidated, match="did not preview"):
        run_repair(HudiTable.open(str(path)), plan, settings=INCLUDE, dry_run=False)
    assert all(f.exists() for f in [*written, late])  # nothing changed
    assert HudiTable.open(str(path)).timeline.find(OLD) is not None


def test_stale_writes_are_rolled_back_newest_first_in_one_repair(table_copy) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    older = fake_failed_write(path, OLD, markers=False)
    newer = fake_failed_write(path, "20261102000000000", markers=True)
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, settings=INCLUDE)
    assert any("include_ingestion_commits" in n for n in plan.notes)  # the operator's word, on the record
    assert [f.evidence.instant for f in found] == ["20261102000000000", OLD]  # type: ignore[attr-defined]
    assert all(f.repairable for f in found)  # the older one goes once the newer one is gone (Hudi's order)
    assert [c.target for c in plan.changes if c.action == "rollback"] == ["20261102000000000", OLD]
    assert result.ok and not any(f.exists() for f in [*older, *newer])
    done = HudiTable.open(str(path)).timeline.rollbacks().completed()
    assert len(done) == 2 and after == []
    assert rows(path) == before


def _pending_deltacommit(path: Path, hours: float) -> str:
    """A delta commit requested `hours` ago and inflight since (its writer keeps no heartbeat)."""
    time_ = (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y%m%d%H%M%S000")  # the table's zone is UTC
    folder = Path(HudiTable.open(str(path)).timeline.folder)
    for state in (State.REQUESTED, State.INFLIGHT):
        (folder / Instant(time_, DELTA_COMMIT, state).file_name(2)).write_bytes(b"")
    return time_


@pytest.mark.parametrize("policy", ["EAGER", "NEVER"])
def test_stale_ingestion_commit_not_offered_under_eager_or_never(table_copy, policy: str) -> None:
    """A 4-hour-old inflight delta commit with no heartbeat: under EAGER its writer keeps none
    (BaseHoodieWriteClient.startCommit heartbeats only under LAZY), so it may still be running;
    Hudi's cleanup_stale_inflight_commits leaves ingestion commits alone, and NEVER rolls back
    nothing. The finding stays, with no repair. The operator's include_ingestion_commits opens
    it under EAGER only; the writers' options (not hoodie.properties) saying LAZY open it too."""
    path = table_copy(V9_MOR)
    time_ = _pending_deltacommit(path, 4)
    given = {"hoodie.clean.failed.writes.policy": policy}
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND], settings=DoctorSettings(options=given))
    assert isinstance(finding.evidence, StaleEvidence) and finding.evidence.instant == time_
    assert finding.evidence.role == "write" and not finding.repairable and policy in finding.repair
    with pytest.raises(RepairUnavailable):
        plan_repair(HudiTable.open(str(path)), KIND, settings=DoctorSettings(options=given))
    opted = DoctorSettings(options=given, include_ingestion_commits=True)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND], settings=opted)
    assert finding.repairable is (policy == "EAGER")
    lazy = DoctorSettings(options={"hoodie.clean.failed.writes.policy": "LAZY"})
    update_config(HudiTable.open(str(path)).storage, str(path), {"hoodie.clean.failed.writes.policy": policy})
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND], settings=lazy)  # the writers' options win
    assert finding.repairable and finding.repair.startswith("roll back deltacommit")
    assert [c.key for c in plan_repair(HudiTable.open(str(path)), KIND, settings=lazy).changes] == [
        ("rollback", time_)]


def _pending_clustering(path: Path, time_: str) -> tuple[Instant, list[Path]]:
    """A clustering (table version 9: action clustering) planned over the first file slice,
    started (inflight) and dead after writing one base file; its markers name that file."""
    table = HudiTable.open(str(path))
    piece = table.file_system_view().latest_slices()[0]
    assert piece.base_file is not None
    plan = clustering_plan(piece)
    folder = Path(table.timeline.folder)
    requested = Instant(time_, CLUSTERING, State.REQUESTED)
    (folder / requested.file_name(2)).write_bytes(
        metadata.encode(plan, action=CLUSTERING, state=State.REQUESTED, layout=2))
    (folder / Instant(time_, CLUSTERING, State.INFLIGHT).file_name(2)).write_bytes(b"")
    partition = path / piece.partition if piece.partition else path
    name = f"c0ffee00-0000-0000-0000-000000000000-0_0-1-0_{time_}.parquet"
    shutil.copy(partition / piece.base_file.name, partition / name)
    marker = path / ".hoodie" / ".temp" / time_ / piece.partition / f"{name}.marker.CREATE"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_bytes(b"")
    return Instant(time_, CLUSTERING, State.INFLIGHT), [partition / name]


def test_stale_pending_rollback_of_a_clustering_keeps_its_plan(table_copy) -> None:
    """A rollback of an inflight clustering that died midway is finished as
    HoodieTable.rollbackInflightClustering finishes it: the files its plan names go, the
    clustering reverts to requested with its plan kept (a Hudi writer runs it again), and the
    clustering itself stays a finding no Cleanline repair touches."""
    path = table_copy(V9_COW)
    before = rows(path)
    clustering, written = _pending_clustering(path, OLD)
    table = HudiTable.open(str(path))
    requested = Path(table.timeline.folder) / Instant(OLD, CLUSTERING, State.REQUESTED).file_name(2)
    plan_bytes = requested.read_bytes()
    pending = transition.request(table, ROLLBACK, plan_rollback(table, clustering, for_restore=True).plan.to_raw())
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, settings=DoctorSettings(stale_after=timedelta(0)))
    roles = {f.evidence.instant: (f.evidence.role, f.repairable) for f in found}  # type: ignore[attr-defined]
    assert roles == {OLD: ("table service", False), pending.requested_time: ("rollback", True)}
    assert [c.key for c in plan.changes] == [("rollback", OLD), ("delete", f"file:{written[0]}")]
    assert plan.changes[0].detail == (f"roll back clustering {OLD}: 1 files (listed below), its inflight file and "
                                      "markers (it reverts to requested, its plan kept)")
    assert result.ok and not written[0].exists()
    table = HudiTable.open(str(path))
    assert [i.requested_time for i in table.timeline.rollbacks().completed()] == [pending.requested_time]
    (left,) = [i for i in table.timeline if i.requested_time == OLD]
    assert (left.action, left.state) == (CLUSTERING, State.REQUESTED) and requested.read_bytes() == plan_bytes
    assert not (path / ".hoodie" / ".temp" / OLD).exists()
    assert [(f.evidence.instant, f.repairable) for f in after if f.kind == KIND] == [(OLD, False)]  # type: ignore[attr-defined]
    assert rows(path) == before


def test_stale_pending_rollback_of_a_compaction_reverts_it_to_requested(table_copy) -> None:
    """HoodieTable.rollbackInflightCompaction: a pending rollback of an inflight compaction is
    finished (once offered, then refused: `rollback` knew no compaction) and the compaction
    reverts to requested, its plan kept."""
    path = table_copy(V9_MOR)
    table = HudiTable.open(str(path))
    piece = table.file_system_view().latest_slices()[0]
    compaction_plan = {"operations": [{"baseInstantTime": piece.base_instant_time, "fileId": piece.file_id,
                                       "partitionPath": piece.partition,
                                       "deltaFilePaths": [log.name for log in piece.log_files],
                                       "dataFilePath": piece.base_file.name if piece.base_file else None}],
                       "version": 2}
    folder = Path(table.timeline.folder)
    requested = folder / Instant(OLD, COMPACTION, State.REQUESTED).file_name(2)
    requested.write_bytes(metadata.encode(compaction_plan, action=COMPACTION, state=State.REQUESTED, layout=2))
    (folder / Instant(OLD, COMPACTION, State.INFLIGHT).file_name(2)).write_bytes(requested.read_bytes())
    rollback_plan = {"instantToRollback": {"commitTime": OLD, "action": COMPACTION}, "RollbackRequests": [],
                     "version": 1}
    pending = transition.request(HudiTable.open(str(path)), ROLLBACK, rollback_plan)
    age_tree(path)
    settings = DoctorSettings(stale_after=timedelta(0))
    plan = plan_repair(HudiTable.open(str(path)), KIND, settings=settings)
    assert [c.key for c in plan.changes] == [("rollback", OLD)]
    result = run_repair(HudiTable.open(str(path)), plan, settings=settings, dry_run=False)
    assert result.ok and not result.failed
    table = HudiTable.open(str(path))
    assert [i.requested_time for i in table.timeline.rollbacks().completed()] == [pending.requested_time]
    (left,) = [i for i in table.timeline if i.requested_time == OLD]
    assert (left.action, left.state) == (COMPACTION, State.REQUESTED) and requested.exists()


def test_stale_pending_rollback_whose_instant_is_gone_is_finished(table_copy) -> None:
    """BaseHoodieTableServiceClient.rollback: a pending rollback whose instant's files are gone
    already (it died after deleting them) is finished from its plan, the instant reconstructed;
    Cleanline used to refuse it."""
    path = table_copy(V9_COW)
    before = rows(path)
    written = fake_failed_write(path, OLD, markers=True)
    table = HudiTable.open(str(path))
    (failed,) = [i for i in table.timeline.pending() if i.requested_time == OLD]
    pending = transition.request(table, ROLLBACK, plan_rollback(table, failed).plan.to_raw())
    for status in table.timeline.files_of(failed).values():
        os.unlink(status.path)  # the rollback deleted the write's instant files, then died
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, settings=DoctorSettings(stale_after=timedelta(0)))
    (finding,) = found
    assert isinstance(finding.evidence, StaleEvidence) and finding.evidence.role == "rollback"
    assert finding.repairable and "gone already" in finding.repair
    assert {c.target for c in plan.changes if c.action == "delete"} == {f"file:{f}" for f in written}
    assert result.ok and not any(f.exists() for f in written)
    done = HudiTable.open(str(path)).timeline.rollbacks().completed()
    assert [i.requested_time for i in done] == [pending.requested_time]
    assert [f for f in after if f.kind == KIND] == []
    assert rows(path) == before


# Hand-made timelines (a day old, no heartbeat: stale under the default 180 minutes).

T = [f"2026110100{i:02d}00000" for i in range(20)]
P = "city=sf"
LAZY_OPTIONS = {"hoodie.clean.failed.writes.policy": "LAZY"}


def _lake(version: int = 8, table_type: str = "COPY_ON_WRITE"):  # type: ignore[no-untyped-def]
    from tests.helpers import Lake
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=version, table_type=table_type)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    return lake


@pytest.mark.parametrize("requested", [False, True], ids=["write", "its-pending-rollback"])
def test_stale_write_is_rolled_back_under_the_writers_policy_given(requested: bool) -> None:
    """The repair rolls back (or finishes the pending rollback of) a stale write with the
    writers' options: under their LAZY policy Hudi's validateRollbackCommitSequence does not hold
    (BaseRollbackActionExecutor checks it only under EAGER), so a stale write with a later
    completed commit goes, although hoodie.properties says nothing (EAGER)."""
    from timeline.instant import ROLLBACK as ROLLBACK_ACTION

    lake = _lake()
    written = lake.base_file(P, "h", T[1])
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.commit(T[2], {P: [lake.base_file(P, "i", T[2])]})
    table = HudiTable.load(lake.storage, "/t")
    if requested:
        transition.request(table, ROLLBACK_ACTION, plan_rollback(table, table.timeline.find(T[1])).plan.to_raw())
    settings = DoctorSettings(options=LAZY_OPTIONS)
    plan = plan_repair(HudiTable.load(lake.storage, "/t"), KIND, settings=settings)
    result = run_repair(HudiTable.load(lake.storage, "/t"), plan, settings=settings, dry_run=False)
    assert result.ok and not result.failed
    assert not lake.storage.exists(f"/t/{P}/{written}")
    assert HudiTable.load(lake.storage, "/t").timeline.find(T[1]) is None


def test_stale_write_plan_lists_its_rollback_its_files_and_its_v6_log_blocks() -> None:
    """The repair plan of a stale v6 merge-on-read delta commit, in full: the rollback (no bytes
    itself), each file it deletes with its bytes, each log file that gets a rollback command block
    (HoodieMergeOnReadRollbackActionExecutor on version 6)."""
    from timeline.doctor.findings import Change
    from timeline.files import log_file_name

    lake = _lake(6, "MERGE_ON_READ")
    log = lake.log_file(P, "g", T[0], size=33)
    created = lake.base_file(P, "k", T[1], size=44)
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.storage.write(f"/t/.hoodie/.temp/{T[1]}/{P}/{log}.marker.APPEND", b"")
    lake.storage.write(f"/t/.hoodie/.temp/{T[1]}/{P}/{created}.marker.CREATE", b"")
    assert log == log_file_name("g", T[0], 1, log.rsplit("_", 1)[1])
    plan = plan_repair(HudiTable.load(lake.storage, "/t"), KIND, settings=DoctorSettings(options=LAZY_OPTIONS))
    assert list(plan.changes) == [
        Change("rollback", T[1], 0, f"roll back deltacommit {T[1]}: 1 files (listed below), its instant files and "
                                    "markers"),
        Change("delete", f"/t/{P}/{created}", 44, f"written by {T[1]}"),
        Change("rollback block", lake.storage.uri(f"/t/{P}/{log}"), 33,
               f"a rollback command block for {T[1]} after this log file")]


@pytest.mark.parametrize("policy", ["EAGER", "NEVER"])
def test_stale_write_held_back_by_the_policy_says_why_in_full(policy: str) -> None:
    """BaseHoodieWriteClient.startCommit heartbeats only under LAZY; getInstantsToRollback rolls
    back nothing under NEVER: the finding's repair says so, and how to go on."""
    lake = _lake()
    lake.commit(T[1], {}, state=State.INFLIGHT)
    settings = DoctorSettings(options={"hoodie.clean.failed.writes.policy": policy})
    (finding,) = diagnose(HudiTable.load(lake.storage, "/t"), kinds=[KIND], settings=settings)
    held = ("the writers' failed-writes policy is NEVER (hoodie.clean.failed.writes.policy): Hudi never rolls "
            "back a failed write by itself; once its writer is known gone, roll it back by name (cleanline "
            f"rollback PATH --instant {T[1]})") if policy == "NEVER" else (
        "under the EAGER failed-writes policy Hudi writers keep no heartbeat (BaseHoodieWriteClient.startCommit "
        "starts one only under LAZY), so a writer still running this commit looks the same as a dead one. Like "
        "Hudi's cleanup_stale_inflight_commits, the doctor leaves ingestion commits alone unless told to include "
        "them (include_ingestion_commits, `cleanline doctor --repair stale-pending --include-ingestion-commits`): "
        "that drops the write of any writer still running it")
    assert not finding.repairable and finding.repair.endswith(held)


@pytest.mark.parametrize("case", ["present", "gone", "nothing"])
def test_stale_pending_rollback_names_the_instant_its_plan_names(case: str) -> None:
    """BaseHoodieTableServiceClient.rollback/getPendingRollbackInfo: a stale pending rollback
    (inflight: its requested file holds the plan) is finished from its plan, of the instant it
    names: on the timeline still, or gone already (reconstructed as inflight with the plan's
    action); a plan naming no instant is left to a Hudi writer."""
    from timeline.doctor.findings import NO_REPAIR
    from timeline.instant import ROLLBACK as ROLLBACK_ACTION
    from timeline.metadata.records import RollbackPlan

    lake = _lake()
    lake.base_file(P, "h", T[1])
    lake.commit(T[1], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    target = table.timeline.find(T[1])
    plan = plan_rollback(table, target).plan if case != "nothing" else RollbackPlan(version=1)
    pending = Instant(T[5], ROLLBACK_ACTION, State.INFLIGHT)  # requested long ago, then started
    lake.instant_file(Instant(T[5], ROLLBACK_ACTION, State.REQUESTED), plan.to_raw())
    lake.instant_file(pending)
    table.reload()
    if case == "gone":
        for status in table.timeline.files_of(target).values():
            lake.storage.delete(status.path)
    settings = DoctorSettings(options=LAZY_OPTIONS, stale_after=timedelta(0))
    found = diagnose(HudiTable.load(lake.storage, "/t"), kinds=[KIND], settings=settings)
    (finding,) = [f for f in found if f.evidence.instant == pending.requested_time]  # type: ignore[attr-defined]
    r = pending.requested_time
    assert finding.repair == {
        "present": f"finish rollback {r} of commit {T[1]} from its plan",
        "gone": (f"finish rollback {r} of commit {T[1]} from its plan (the instant's files are gone already: only "
                 "what the plan names is deleted, as BaseHoodieTableServiceClient.rollback finishes it)"),
        "nothing": f"{NO_REPAIR}rollback {r}'s plan names no instant; a Hudi writer must finish or remove it"}[case]


def test_stale_pending_clean_plan_lists_its_files_with_their_bytes_and_its_partitions(tmp_path: Path) -> None:
    """CleanActionExecutor.runPendingClean finishes a clean from its plan: the repair lists the
    clean run, every file of filePathsToBeDeletedPerPartition with its bytes (0 when gone
    already) and every partition of partitionsToBeDeleted."""
    from tests.helpers import Lake
    from timeline.doctor.findings import Change
    from timeline.metadata.records import CleanerPlan, CleanFileInfo
    from timeline.storage.arrow import LocalStorage

    base = str(tmp_path / "t")
    lake = Lake(LocalStorage(), base, version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1], size=70)]})
    old = lake.storage.uri(f"{base}/{P}/g_0-1-0_{T[0]}.parquet")
    gone = lake.storage.uri(f"{base}/{P}/x_0-1-0_{T[0]}.parquet")
    plan = CleanerPlan(earliest_instant_to_retain=InstantRef(T[1], "commit"), last_completed_commit=T[1],
                       policy="KEEP_LATEST_COMMITS", files={P: (CleanFileInfo(P, old), CleanFileInfo(P, gone))},
                       partitions_to_delete=("city=ny",))
    lake.instant_file(Instant(T[2], "clean", State.REQUESTED), plan.to_raw())
    repair = plan_repair(HudiTable.open(base), KIND, settings=DoctorSettings(options=LAZY_OPTIONS))
    by = f"planned by clean {T[2]}"
    assert list(repair.changes) == [
        Change("run clean", T[2], 0, f"finish clean {T[2]}: the 2 files its plan names (listed below)"),
        Change("delete", old, 100, by), Change("delete", gone, 0, by), Change("delete partition", "city=ny", 0, by)]


def test_stale_repair_skips_what_is_no_longer_stale_and_runs_the_rest_in_order() -> None:
    """The repair re-diagnoses each planned instant under the lock before it changes anything:
    stale writes someone else rolled back meanwhile, and a stale clean someone else finished, are
    skipped ("no longer a stale pending instant"), and the older writes after them are still
    rolled back (newest first); the plan's notes say in which order."""
    from timeline.clean.executor import run_pending_cleans
    from timeline.metadata.records import CleanerPlan, CleanFileInfo
    from timeline.rollback import rollback

    lake = _lake()
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1])]})
    old = lake.storage.uri(f"/t/{P}/g_0-1-0_{T[0]}.parquet")
    plan = CleanerPlan(earliest_instant_to_retain=InstantRef(T[1], "commit"), last_completed_commit=T[1],
                       policy="KEEP_LATEST_COMMITS", files={P: (CleanFileInfo(P, old),)})
    writes = (T[3], T[4], T[6], T[7])
    written = {t: lake.base_file(P, f"w{t[-7:-5]}", t) for t in writes}
    for t in writes:
        lake.commit(t, {}, state=State.INFLIGHT)
    lake.instant_file(Instant(T[5], "clean", State.REQUESTED), plan.to_raw())
    settings = DoctorSettings(options=LAZY_OPTIONS)
    approved = plan_repair(HudiTable.load(lake.storage, "/t"), KIND, settings=settings)
    assert approved.notes == ("writes are rolled back newest first, as Hudi's rollbackFailedWrites does",)
    heads = [c.key for c in approved.changes if c.action in ("rollback", "run clean")]
    assert heads == [("rollback", T[7]), ("rollback", T[6]), ("run clean", T[5]), ("rollback", T[4]),
                     ("rollback", T[3])]
    table = HudiTable.load(lake.storage, "/t")
    for t in (T[7], T[6]):  # another run got there first
        rollback(table.reload(), t, options=LAZY_OPTIONS)
    run_pending_cleans(table.reload(), instant=T[5])
    result = run_repair(HudiTable.load(lake.storage, "/t"), approved, settings=settings, dry_run=False)
    assert (result.table, result.kind, result.failed) == (table.uri, KIND, ())
    gone = (T[7], T[6], T[5])
    mine = [c.key for c in approved.changes if c.target in gone or c.detail.endswith(gone)]
    skipped = {c.key: why for c, why in result.skipped}
    assert set(skipped) == set(mine) and set(skipped.values()) == {"no longer a stale pending instant"}
    assert {c.key for c in result.done} == {c.key for c in approved.changes} - set(mine)
    assert not any(lake.storage.exists(f"/t/{P}/{written[t]}") for t in writes)
    assert not [t for t in writes if HudiTable.load(lake.storage, "/t").timeline.find(t) is not None]


def test_stale_clean_repair_runs_only_the_clean_it_planned() -> None:
    """CleanActionExecutor.runPendingClean for the stale clean the approved plan names, at its own
    instant, its plan read from its requested file (CleanerUtils.getCleanerPlan; this one died
    once inflight, its inflight file empty): a clean scheduled since (not stale, not in the plan)
    stays pending."""
    from timeline.metadata.records import CleanerPlan, CleanFileInfo

    lake = _lake()
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1])]})
    old = lake.storage.uri(f"/t/{P}/g_0-1-0_{T[0]}.parquet")
    plan = CleanerPlan(earliest_instant_to_retain=InstantRef(T[1], "commit"), last_completed_commit=T[1],
                       policy="KEEP_LATEST_COMMITS", files={P: (CleanFileInfo(P, old),)})
    lake.instant_file(Instant(T[2], "clean", State.REQUESTED), plan.to_raw())
    lake.instant_file(Instant(T[2], "clean", State.INFLIGHT))
    approved = plan_repair(HudiTable.load(lake.storage, "/t"), KIND)
    assert [c.key for c in approved.changes] == [("run clean", T[2]), ("delete", old)]
    newer_clean = HudiTable.load(lake.storage, "/t").new_instant_time()
    lake.instant_file(Instant(newer_clean, "clean", State.REQUESTED), plan.to_raw())
    result = run_repair(HudiTable.load(lake.storage, "/t"), approved, dry_run=False)
    assert result.ok and {c.key for c in result.done} == {c.key for c in approved.changes}
    cleans = HudiTable.load(lake.storage, "/t").timeline.cleans()
    assert cleans.completed().find(T[2]) is not None and cleans.pending().find(newer_clean) is not None
    assert not lake.storage.exists(f"/t/{P}/g_0-1-0_{T[0]}.parquet")


def test_stale_write_whose_rollback_fails_is_reported_failed_with_why(table_copy) -> None:
    """A stale write the repair approved whose rollback Hudi refuses when it runs
    (HoodieBackedTableMetadataWriter.validateRollback: the metadata table compacted past the
    write's deltacommit since) is reported failed with the refusal, nothing of it deleted."""

    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    target = table.timeline.writes().completed().last()
    assert target is not None
    (path / ".hoodie" / "timeline" / target.file_name(2)).unlink()  # died after its MDT deltacommit
    age_tree(path)
    settings = DoctorSettings(options={"hoodie.clean.failed.writes.policy": "LAZY"})
    approved = plan_repair(HudiTable.open(str(path)), KIND, settings=settings)
    assert [c.key for c in approved.changes if c.action == "rollback"] == [("rollback", target.requested_time)]
    compact_metadata_table_after(path, table, target.requested_time)
    files = sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    result = run_repair(HudiTable.open(str(path)), approved, settings=settings, dry_run=False)
    assert not result.ok and result.done == () and result.skipped == ()
    assert [c for c, _ in result.failed] == list(approved.changes)
    (why,) = {why for _, why in result.failed}
    assert "compacted" in why and target.requested_time in why
    assert sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts) == files


def test_stale_plan_notes_the_operators_word_on_ingestion_commits() -> None:
    """include_ingestion_commits (Hudi's cleanup_stale_inflight_commits' option, which its
    documentation calls dangerous): the plan records the operator's word in its notes."""
    lake = _lake()
    lake.commit(T[1], {}, state=State.INFLIGHT)
    approved = plan_repair(HudiTable.load(lake.storage, "/t"), KIND, settings=INCLUDE)
    assert approved.notes == (
        "writes are rolled back newest first, as Hudi's rollbackFailedWrites does",
        "include_ingestion_commits: the operator's word that stale commits and delta commits may be rolled back "
        "although their writers keep no heartbeat; a writer still running one loses its write (Hudi's "
        "cleanup_stale_inflight_commits calls this dangerous)")


def test_stale_v6_clustering_is_a_table_service_and_its_rollback_keeps_its_plan() -> None:
    """Table version 6: a pending replacecommit whose requested plan is a clustering is a table
    service (ClusteringUtils.isClusteringInstant), not a write; the stale rollback of it is
    finished as HoodieTable.rollbackInflightClustering does, its plan kept; the stale rollback of
    a write removes the write's instant files."""
    from tests.helpers import Lake
    from timeline.instant import ROLLBACK as ROLLBACK_ACTION
    from timeline.instant import Instant as Inst
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    cluster = {"operationType": "cluster", "version": 1, "extraMetadata": {}, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"g_0-1-0_{T[0]}.parquet", "fileId": "g", "partitionPath": P,
                                     "deltaFilePaths": [], "version": 1}], "metrics": {}, "numOutputFileGroups": 1,
                         "version": 1}], "version": 1, "extraMetadata": {}, "preserveHoodieMetadata": True,
        "strategy": {"strategyClassName": "x", "strategyParams": {}, "version": 1}}}
    lake.instant_file(Inst(T[1], "replacecommit", State.REQUESTED), cluster)
    lake.instant_file(Inst(T[1], "replacecommit", State.INFLIGHT))
    half = lake.base_file(P, "c", T[1])
    lake.base_file(P, "w", T[2])
    lake.commit(T[2], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    for t, at in ((T[2], T[5]), (T[1], T[6])):  # requested long ago, as every instant here
        lake.instant_file(Inst(at, ROLLBACK_ACTION, State.REQUESTED),
                          plan_rollback(table.reload(), table.timeline.find(t), for_restore=True).plan.to_raw())
    settings = DoctorSettings(options=LAZY_OPTIONS, stale_after=timedelta(0))
    found = diagnose(HudiTable.load(lake.storage, "/t"), kinds=[KIND], settings=settings)
    roles = {f.evidence.instant: f.evidence.role for f in found}  # type: ignore[attr-defined]
    assert (roles[T[1]], roles[T[2]]) == ("table service", "write")
    repairs = {(f.evidence.instant, f.evidence.role): f.repair for f in found}  # type: ignore[attr-defined]
    (r1,) = [i for (i, role) in repairs if role == "rollback" and "rollbackInflightClustering" in repairs[(i, role)]]
    assert repairs[(r1, "rollback")] == (
        f"finish rollback {r1} of replacecommit {T[1]} from its plan, then revert it to requested with its plan kept "
        "(HoodieTable.rollbackInflightCompaction / rollbackInflightClustering)")
    assert repairs[(T[1], "table service")] == (  # its pending rollback is the repair (stuck-table-service leaves it)
        f"none: finish the pending rollback of replacecommit {T[1]} (its stale-pending rollback finding), which "
        "leaves it requested with its plan")
    (r2,) = [i for (i, role) in repairs if role == "rollback" and i != r1]
    assert repairs[(T[2], "write")] == f"finish rollback {r2} of commit {T[2]} from its plan"
    approved = plan_repair(HudiTable.load(lake.storage, "/t"), KIND, settings=settings)
    details = {c.target: c.detail for c in approved.changes if c.action == "rollback"}
    assert details == {
        T[2]: f"roll back commit {T[2]}: 1 files (listed below), its instant files and markers",
        T[1]: f"roll back replacecommit {T[1]}: 1 files (listed below), its inflight file and markers (it reverts "
              "to requested, its plan kept)"}
    assert run_repair(HudiTable.load(lake.storage, "/t"), approved, settings=settings, dry_run=False).ok
    left = [(i.requested_time, i.action, i.state) for i in HudiTable.load(lake.storage, "/t").timeline
            if i.requested_time in (T[1], T[2])]
    assert left == [(T[1], "replacecommit", State.REQUESTED)] and not lake.storage.exists(f"/t/{P}/{half}")


def test_stale_restore_and_other_actions_are_left_to_their_tools_and_the_threshold_is_inclusive() -> None:
    """HoodieTimelineCleanupUtil.inflightWriteCommitsOlderThan: pending since the threshold or
    longer (180 minutes by default, to the second) is stale. A stale pending restore is re-run or
    finished by a Hudi writer, any other action (here a savepoint) too; a replacecommit whose plan
    does not decode is "other" (nothing is rolled back). The evidence names when it was
    requested, its age and its files' bytes (an empty file counts 0)."""
    from datetime import UTC, datetime

    from timeline.metadata.records import RestorePlan

    lake = _lake()
    lake.instant_file(Instant(T[1], "restore", State.REQUESTED),
                      RestorePlan(instants_to_rollback=(), savepoint=T[0], version=2).to_raw())
    lake.instant_file(Instant(T[2], "savepoint", State.INFLIGHT))
    lake.storage.write(f"/t/.hoodie/timeline/{T[3]}.replacecommit.requested", b"not avro")
    empty = lake.base_file(P, "e", T[4], size=0)
    lake.commit(T[4], {}, state=State.INFLIGHT)
    lake.commit("19700101000000000", {}, state=State.REQUESTED)  # requested at the epoch itself
    table = HudiTable.load(lake.storage, "/t")
    settings = DoctorSettings(options=LAZY_OPTIONS)
    requested = datetime(2026, 11, 1, 0, 4, tzinfo=UTC)  # T[4]
    at = requested + timedelta(hours=3)  # exactly 180 minutes later: stale
    found = {f.evidence.instant: f  # type: ignore[attr-defined]
             for f in diagnose(table, kinds=[KIND], now=at, settings=settings)}
    write = found[T[4]]
    assert isinstance(write.evidence, StaleEvidence)
    assert (write.evidence.requested_at, write.evidence.age_seconds) == ("2026-11-01T00:04:00+00:00", 10800)
    assert (write.evidence.files, write.evidence.bytes) == (1, 0) and empty
    assert write.summary == f"commit {T[4]} has been inflight for 3.0 hours with no live heartbeat"
    assert write.why == ("A pending instant no writer runs holds back cleaning and archival (the earliest commit to "
                         "retain stops before it) and keeps its partial files on storage.")
    epoch = found["19700101000000000"].evidence
    assert isinstance(epoch, StaleEvidence) and epoch.requested_at == "1970-01-01T00:00:00+00:00"
    restore = found[T[1]]
    assert (restore.evidence.role, restore.repair) == (  # type: ignore[attr-defined]
        "restore", "none: re-run the restore (cleanline restore --savepoint ...) or finish it with a Hudi writer")
    other = found[T[2]]
    assert (other.evidence.role, other.repair) == (  # type: ignore[attr-defined]
        "other", f"none: a Hudi writer must finish or roll back the pending savepoint {T[2]}")
    unreadable = found[T[3]]
    assert unreadable.evidence.role == "other"  # type: ignore[attr-defined]
    earlier = diagnose(table, kinds=[KIND], now=at - timedelta(seconds=1), settings=settings)
    assert T[4] not in {f.evidence.instant for f in earlier}  # type: ignore[attr-defined]
    later = diagnose(table, kinds=[KIND], now=at + timedelta(seconds=5), settings=settings)
    assert T[4] in {f.evidence.instant for f in later}  # type: ignore[attr-defined]
    long_after = diagnose(table, kinds=[KIND], now=requested + timedelta(seconds=360216), settings=settings)
    assert f"commit {T[4]} has been inflight for 100.1 hours with no live heartbeat" in {f.summary for f in long_after}


def test_stale_clean_repair_runs_the_clean_under_the_tables_lock(tmp_path: Path) -> None:
    """The stale clean is run with the table's lock held at its moments (CleanActionExecutor
    runs under the writers' lock: BaseHoodieTableServiceClient.clean takes it through the
    transaction manager): while a Hudi writer holds the filesystem lock the run waits its
    `wait_time_ms`, fails saying who holds it, and changes nothing: the clean stays pending and
    its file stays."""
    from tests.helpers import Lake
    from timeline.locks.filesystem import FILESYSTEM_BASED_LOCK_PROVIDER
    from timeline.metadata.records import CleanerPlan, CleanFileInfo
    from timeline.storage.arrow import LocalStorage

    base = str(tmp_path / "t")
    lake = Lake(LocalStorage(), base, version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1])]})
    old = f"{base}/{P}/g_0-1-0_{T[0]}.parquet"
    plan = CleanerPlan(earliest_instant_to_retain=InstantRef(T[1], "commit"), last_completed_commit=T[1],
                       policy="KEEP_LATEST_COMMITS", files={P: (CleanFileInfo(P, lake.storage.uri(old)),)})
    lake.instant_file(Instant(T[2], "clean", State.REQUESTED), plan.to_raw())
    settings = DoctorSettings(options={
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": FILESYSTEM_BASED_LOCK_PROVIDER, "hoodie.write.lock.wait_time_ms": "200"})
    approved = plan_repair(HudiTable.open(base), KIND, settings=settings)
    assert [c.key for c in approved.changes] == [("run clean", T[2]), ("delete", lake.storage.uri(old))]
    (tmp_path / "t" / ".hoodie" / "lock").write_bytes(b'{"lockThreadName":"hudi-writer"}')  # a Hudi writer's
    result = run_repair(HudiTable.open(base), approved, settings=settings, dry_run=False)
    assert not result.ok and result.done == () and "hudi-writer" in result.failed[0][1]
    assert Path(old).exists()
    assert HudiTable.open(base).timeline.cleans().pending().find(T[2]) is not None
