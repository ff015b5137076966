"""The rollback plan (timeline/rollback.py's plan_rollback and pending_rollback_of) on hand-made
timelines: what Hudi's BaseRollbackPlanActionExecutor plans from markers or from a listing, and
a pending rollback resumed from its own plan."""

from __future__ import annotations

import time

import pytest

from tests.helpers import TOKEN, Lake
from timeline import HudiTable
from timeline.files import log_file_name
from timeline.instant import Instant, State
from timeline.metadata import avro
from timeline.metadata.records import InstantRef, RollbackPlan, RollbackRequest
from timeline.rollback import (
    UNKNOWN_WRITE_TOKEN,
    RollbackRefused,
    check_not_running,
    execute_rollback_plan,
    pending_rollback_of,
    plan_rollback,
    preview_failed_write,
    preview_failed_writes,
    preview_rollback_failed_writes,
    rollback,
    rollback_failed_write,
    rollback_failed_writes,
    rollback_in_metadata_table,
)
from timeline.storage import MemoryStorage
from timeline.storage.arrow import LocalStorage

T = [f"2026110100{i:02d}00000" for i in range(20)]


def mor(version: int, partition: str = "city=sf") -> Lake:
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="MERGE_ON_READ")
    lake.commit(T[0], {partition: [lake.base_file(partition, "g", T[0]), lake.base_file(partition, "h", T[0])]})
    return lake


def markers(lake: Lake, t: str, *entries: str) -> None:
    """A timeline-server marker folder of the write at `t`."""
    lake.storage.write(f"/t/.hoodie/.temp/{t}/MARKERS.type", b"TIMELINE_SERVER_BASED")
    lake.storage.write(f"/t/.hoodie/.temp/{t}/MARKERS0", "".join(f"{e}\n" for e in entries).encode())


def test_rollback_plan_of_v6_appends_marks_the_log_files_and_skips_those_never_written() -> None:
    """MarkerBasedRollbackStrategy on table version 6: an APPEND marker's log file is not
    deleted but gets a rollback command block (a request with the file id, the log's base
    instant and logBlocksToBeDeleted {path: size}); a CREATE marker's file is deleted; a log
    file named by a marker but absent from storage is skipped, the next one is still marked. The
    partition path is nested and its value holds ".marker.": the marker is split at its last
    ".marker." and its last "/"."""
    p = "city=a.marker.b/day=1"
    lake = mor(6, p)
    never = log_file_name("g", T[0], 1, TOKEN)  # its marker was written, the file never was
    log = lake.log_file(p, "h", T[0], size=33)
    created = lake.base_file(p, "k", T[1], size=44)
    lake.commit(T[1], {}, state=State.INFLIGHT)
    markers(lake, T[1], f"{p}/{never}.marker.APPEND", f"{p}/{log}.marker.APPEND", f"{p}/{created}.marker.CREATE")
    table = HudiTable.load(lake.storage, "/t")
    target = table.timeline.find(T[1])
    preview = plan_rollback(table, target)
    assert preview.instant == target
    uri = lake.storage.uri(f"/t/{p}/{log}")
    assert preview.logs_to_mark == ((p, uri, 33),)
    assert preview.files_to_delete == ((p, f"/t/{p}/{created}", 44),)
    assert preview.plan.requests == (
        RollbackRequest(p, files_to_delete=(lake.storage.uri(f"/t/{p}/{created}"),)),
        RollbackRequest(p, "h", T[0], log_blocks_to_delete={uri: 33}))
    assert preview.plan.instant_to_rollback == InstantRef(T[1], "deltacommit")
    raw = preview.plan.to_raw()
    assert raw["version"] == 1


@pytest.mark.parametrize("version", [8, 9])
def test_rollback_plan_of_v8_appends_deletes_the_log_files(version: int) -> None:
    """Table version 8+ (MarkerBasedRollbackStrategy.getRollbackRequestForAppend): a log file
    written by the failed delta commit carries the commit's own time and is deleted, not marked."""
    p = "city=sf"
    lake = mor(version)
    log = lake.log_file(p, "g", T[1], size=21)
    lake.commit(T[1], {}, state=State.INFLIGHT)
    markers(lake, T[1], f"{p}/{log}.marker.APPEND")
    table = HudiTable.load(lake.storage, "/t")
    preview = plan_rollback(table, table.timeline.find(T[1]))
    assert preview.files_to_delete == ((p, f"/t/{p}/{log}", 21),) and preview.logs_to_mark == ()


@pytest.mark.parametrize("version", [8, 9])
def test_rollback_plan_of_a_completed_v8_delta_commit_deletes_its_log_files(version: int) -> None:
    """ListingBasedRollbackStrategy on table version 8+: a completed delta commit's log files
    carry its own time and are deleted; only version 6 marks the logs a delta commit appended to."""
    p = "city=sf"
    lake = mor(version)
    log = lake.log_file(p, "g", T[1], size=21)
    lake.commit(T[1], {p: [log]})
    table = HudiTable.load(lake.storage, "/t")
    preview = plan_rollback(table, table.timeline.find(T[1]))
    assert preview.files_to_delete == ((p, f"/t/{p}/{log}", 21),) and preview.logs_to_mark == ()


def test_rollback_plan_of_a_completed_write_ignores_left_over_markers() -> None:
    """BaseRollbackPlanActionExecutor: markers are used only for an inflight instant
    (shouldRollbackUsingMarkers ... && instantToRollback.isInflight()); a completed write is
    rolled back from a listing, whatever marker folder is left."""
    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    earlier = lake.base_file(p, "g", T[0])
    lake.commit(T[0], {p: [earlier]})
    written = lake.base_file(p, "h", T[1])
    lake.commit(T[1], {p: [written]})
    markers(lake, T[1], f"{p}/{earlier}.marker.MERGE")
    table = HudiTable.load(lake.storage, "/t")
    preview = plan_rollback(table, table.timeline.find(T[1]))
    assert [path for _, path, _ in preview.files_to_delete] == [f"/t/{p}/{written}"]


def test_rollback_plan_of_a_table_service_is_refused_outside_a_restore() -> None:
    """Cleanline rolls back writes only; a pending compaction is rolled back only by a restore
    (RestorePlanActionExecutor plans it), whose plan_rollback(for_restore=True) accepts it."""
    lake = mor(8)
    compaction = lake.schedule_compaction(T[1], [("city=sf", "g", T[0])])
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(RollbackRefused) as refused:
        plan_rollback(table, compaction)
    assert str(refused.value) == (f"{table.uri}: compaction {T[1]} is not a write Cleanline rolls back "
                                  "(compaction and clustering plans are kept)")
    assert plan_rollback(table, compaction, for_restore=True).instant == compaction
    # started (inflight): still refused unless asked as the table service's rollback
    lake.instant_file(Instant(T[1], "compaction", State.INFLIGHT))
    table = HudiTable.load(lake.storage, "/t")
    inflight = table.timeline.find(T[1])
    assert inflight is not None and inflight.is_inflight
    with pytest.raises(RollbackRefused, match="is not a write Cleanline rolls back"):
        plan_rollback(table, inflight)
    assert plan_rollback(table, inflight, table_service=True).instant == inflight


def test_pending_rollback_is_previewed_and_resumed_from_its_own_plan() -> None:
    """BaseHoodieTableServiceClient.getPendingRollbackInfo: a pending rollback of the instant
    (found by its plan's instantToRollback, requested or inflight) is what runs, so the preview
    shows its plan and rollback() finishes that rollback instant, not a new one; a pending
    rollback of another instant is not taken for it."""
    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    kept = lake.base_file(p, "h", T[1])
    planned = lake.base_file(p, "k", T[1])
    lake.commit(T[1], {}, state=State.INFLIGHT)
    plan = RollbackPlan(instant_to_rollback=InstantRef(T[1], "commit"),
                        requests=(RollbackRequest(p, files_to_delete=(lake.storage.uri(f"/t/{p}/{planned}"),)),),
                        version=1)
    other = RollbackPlan(instant_to_rollback=InstantRef(T[0], "commit"), requests=(), version=1)
    lake.instant_file(Instant(T[2], "rollback", State.REQUESTED), other.to_raw())
    lake.instant_file(Instant(T[3], "rollback", State.REQUESTED), plan.to_raw())
    lake.instant_file(Instant(T[3], "rollback", State.INFLIGHT))  # started: its inflight file is empty
    table = HudiTable.load(lake.storage, "/t")
    assert pending_rollback_of(table, T[0]) is not None and pending_rollback_of(table, T[5]) is None
    found = pending_rollback_of(table, T[1])
    assert found is not None and found[0].requested_time == T[3] and found[1].requests == plan.requests
    preview = plan_rollback(table, table.timeline.find(T[1]))
    assert preview.plan.requests == plan.requests and preview.instant == table.timeline.find(T[1])
    assert [path for _, path, _ in preview.files_to_delete] == [lake.storage.uri(f"/t/{p}/{planned}")]
    done = rollback(table, T[1])
    assert done.requested_time == T[3]
    assert not lake.storage.exists(f"/t/{p}/{planned}") and lake.storage.exists(f"/t/{p}/{kept}")
    meta = avro.decode(lake.storage.read(HudiTable.load(lake.storage, "/t").timeline.path_of(done)), path="rb")
    assert meta["commitsRollback"] == [T[1]]


def test_v6_rollback_block_is_the_next_log_version_and_a_rerun_finds_it() -> None:
    """HoodieMergeOnReadRollbackActionExecutor on table version 6 (stores that cannot append):
    the ROLLBACK command block for the delta commit goes into the next version of its log file,
    above every version there (another writer's later version included); a re-run of the plan (a
    rollback killed after writing the block) finds its block and writes no other."""
    from timeline.logformat import command_block

    p = "city=sf"
    lake = mor(6)
    log = lake.log_file(p, "h", T[0], size=33)
    inserted = lake.base_file(p, "n", T[1])  # a delta commit's inserts go to a new base file
    lake.commit(T[1], {p: [log, inserted]})
    later = lake.log_file(p, "h", T[0], version=2)  # another writer's later version
    table = HudiTable.load(lake.storage, "/t")
    target = table.timeline.find(T[1])
    plan = plan_rollback(table, target).plan
    block = f"/t/{p}/{log_file_name('h', T[0], 3, UNKNOWN_WRITE_TOKEN)}"
    for _ in range(2):
        content = execute_rollback_plan(table, T[5], plan, target)
        assert content.partitions[p].rollback_log_files == {lake.storage.uri(block): len(command_block(T[5], T[1]))}
        assert content.partitions[p].log_files_from_failed_commit == {lake.storage.uri(f"/t/{p}/{log}"): 33}
    assert content.partitions[p].success_delete_files == (lake.storage.uri(f"/t/{p}/{inserted}"),)
    names = sorted(s.name for s in lake.storage.list(f"/t/{p}") if s.name.startswith(".h_"))
    assert names == sorted([log, later, block.rsplit("/", 1)[1]])
    assert lake.storage.read(block) == command_block(T[5], T[1])


def test_a_write_whose_heartbeat_is_alive_at_the_given_time_is_not_rolled_back() -> None:
    """HoodieHeartbeatClient.isHeartbeatExpired at the time given (now_ms): a heartbeat written
    just now is expired an hour later, and alive at its own time."""


    lake = mor(8)
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.storage.write(f"/t/.hoodie/.heartbeat/{T[1]}", b"")
    table = HudiTable.load(lake.storage, "/t")
    target = table.timeline.find(T[1])
    now = int(time.time() * 1000)
    check_not_running(table, target, now_ms=now + 3_600_000)
    lake.storage.set_mtime(f"/t/.hoodie/.heartbeat/{T[1]}", 5000)
    with pytest.raises(RollbackRefused) as refused:
        check_not_running(table, target, now_ms=6000)
    assert str(refused.value) == (f"{table.uri}: deltacommit {T[1]} is still being written (its heartbeat is alive); "
                                  "wait until its writer finishes or its heartbeat expires")


def test_rollback_of_a_v8_clustering_keeps_its_plan_and_an_unknown_time_is_refused() -> None:
    """HoodieTable.rollbackInflightClustering on table version 8+ (action "clustering"): a
    pending rollback of the inflight attempt (a restore's, killed) is finished by rollback():
    the attempt's file is deleted and the clustering reverts to requested, its plan kept for a
    writer to run again. A time with no write on the active timeline is refused."""
    from timeline import transition

    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    cluster = {"operationType": "cluster", "version": 1, "clusteringPlan": {"inputGroups": [], "version": 1}}
    lake.instant_file(Instant(T[1], "clustering", State.REQUESTED), cluster)
    lake.instant_file(Instant(T[1], "clustering", State.INFLIGHT))
    half = lake.base_file(p, "c", T[1])
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(RollbackRefused) as refused:
        rollback(table, T[7])
    assert str(refused.value) == f"{table.uri}: no write {T[7]} on the active timeline"
    planned = plan_rollback(table, table.timeline.find(T[1]), for_restore=True).plan
    transition.request(table, "rollback", planned.to_raw())
    rollback(table.reload(), T[1])
    left = [(i.requested_time, i.action, i.state) for i in table.reload().timeline if i.requested_time == T[1]]
    assert left == [(T[1], "clustering", State.REQUESTED)]
    assert not lake.storage.exists(f"/t/{p}/{half}")


def test_failed_writes_previewed_and_rolled_back_newest_first_a_live_one_left_alone() -> None:
    """BaseHoodieTableServiceClient.getInstantsToRollback / rollbackFailedWrites under EAGER:
    every pending write is a failed one except one whose heartbeat is alive (its writer runs
    it); they go newest first (validateRollbackCommitSequence), so previewed one by one the older
    is refused until the newer is gone, previewed together both go. One write is rolled back by
    name only if it is a failed write now."""


    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    files = {t: lake.base_file(p, f"w{n}", t, size=10 * n) for n, t in enumerate(T[1:4], 1)}
    for t in T[1:4]:
        lake.commit(t, {}, state=State.INFLIGHT)
    now = 1_000_000
    for t, age_ms in ((T[1], 60_500), (T[2], 500), (T[3], 500)):
        for status in HudiTable.load(lake.storage, "/t").timeline.files_of(
                HudiTable.load(lake.storage, "/t").timeline.find(t)).values():
            lake.storage.set_mtime(status.path, now - age_ms)
    lake.storage.write(f"/t/.hoodie/.heartbeat/{T[1]}", b"")
    lake.storage.set_mtime(f"/t/.hoodie/.heartbeat/{T[1]}", now - 5_000)  # alive: touched 5 s ago
    table = HudiTable.load(lake.storage, "/t")
    uri = table.uri
    rows = preview_failed_writes(table, now_ms=now)
    assert [(r.instant.requested_time, r.live, r.age_seconds) for r in rows] == [
        (T[3], False, 0), (T[2], False, 0), (T[1], True, 5)]
    assert all(type(r.age_seconds) is int for r in rows)
    clock = int(time.time() * 1000)
    for t in T[2:4]:
        for status in table.timeline.files_of(table.timeline.find(t)).values():
            lake.storage.set_mtime(status.path, clock - 90_000)
    ages = [r.age_seconds for r in preview_failed_writes(HudiTable.load(lake.storage, "/t"))
            if r.instant.requested_time in T[2:4]]
    assert len(ages) == 2 and all(90 <= a <= 3600 for a in ages)  # now: the clock
    newest, older, live = rows
    assert newest.refusal == "" and newest.preview is not None
    assert newest.preview.files_to_delete == ((p, f"/t/{p}/{files[T[3]]}", 30),)
    assert older.preview is None and older.refusal == (
        f"{uri}: found pending writes after {T[2]} ({T[3]}); roll back the newer ones first. Hudi's rule "
        "(validateRollbackCommitSequence, failed-writes policy EAGER): pending writes are rolled back newest first, "
        f"so roll back {T[3]} first, then this one.")
    assert live.preview is None and live.refusal == (
        "its heartbeat is alive (touched 5 s ago): its writer is still running it")
    assert preview_failed_write(table, T[3], now_ms=now).files_to_delete == newest.preview.files_to_delete
    refused = f"{uri}: {T[1]} is not a failed write under the table's failed-writes policy (completed writes are " \
              "undone by a restore to a savepoint)"
    for call in (preview_failed_write, rollback_failed_write):
        with pytest.raises(RollbackRefused) as caught:
            call(table, T[1], now_ms=now)
        assert str(caught.value) == refused
    together = preview_rollback_failed_writes(table, now_ms=now)
    assert [(r.instant.requested_time, r.bytes_to_delete) for r in together] == [(T[3], 30), (T[2], 20)]
    done = rollback_failed_writes(table, now_ms=now)
    assert len(done) == 2 and all(i.is_completed for i in done)
    assert not lake.storage.exists(f"/t/{p}/{files[T[3]]}") and not lake.storage.exists(f"/t/{p}/{files[T[2]]}")
    assert lake.storage.exists(f"/t/{p}/{files[T[1]]}")
    assert [i.requested_time for i in HudiTable.load(lake.storage, "/t").timeline.pending().instants] == [T[1]]
    later = now + 3_600_000  # its heartbeat expired: now a failed write, rolled back by name
    assert rollback_failed_write(HudiTable.load(lake.storage, "/t"), T[1], now_ms=later).is_completed
    assert not lake.storage.exists(f"/t/{p}/{files[T[1]]}")


def test_failed_writes_under_the_writers_lazy_policy_go_despite_later_commits() -> None:
    """Under the writers' LAZY policy (their options over hoodie.properties) a failed write is one
    whose heartbeat expired, and BaseRollbackActionExecutor.validateRollbackCommitSequence does not
    hold: previewed and rolled back with those options, it goes although a commit completed after
    it."""

    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    failed = lake.base_file(p, "f", T[1])
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.commit(T[2], {p: [lake.base_file(p, "h", T[2])]})
    lazy = {"hoodie.clean.failed.writes.policy": "LAZY"}
    table = HudiTable.load(lake.storage, "/t")
    assert [r.instant.requested_time for r in preview_rollback_failed_writes(table, options=lazy)] == [T[1]]
    (row,) = preview_failed_writes(table, options=lazy)
    assert row.refusal == "" and row.preview is not None
    assert preview_failed_write(table, T[1], options=lazy).files_to_delete == row.preview.files_to_delete
    assert [i.is_completed for i in rollback_failed_writes(table, options=lazy)] == [True]
    assert not lake.storage.exists(f"/t/{p}/{failed}")
    never = {"hoodie.clean.failed.writes.policy": "NEVER"}  # Hudi rolls back no failed write by itself
    pending = lake.base_file(p, "n", T[5])
    lake.commit(T[5], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    assert preview_failed_writes(table, options=never) == []
    for call in (preview_failed_write, rollback_failed_write):
        with pytest.raises(RollbackRefused, match="is not a failed write"):
            call(table, T[5], options=never)
    assert lake.storage.exists(f"/t/{p}/{pending}")
    rollback(table, T[5])
    again = lake.base_file(p, "f", T[3])
    lake.commit(T[3], {}, state=State.INFLIGHT)
    lake.commit(T[4], {p: [lake.base_file(p, "i", T[4])]})
    assert rollback_failed_write(HudiTable.load(lake.storage, "/t"), T[3], options=lazy).is_completed
    assert not lake.storage.exists(f"/t/{p}/{again}")


def test_pending_rollback_of_a_v6_log_is_previewed_with_its_log_blocks_and_sizes() -> None:
    """A pending rollback's own plan is what runs (getPendingRollbackInfo), so the preview shows
    it: each file it deletes with its size on storage (0 when gone already) and each log file
    that gets a rollback command block, with the size the plan records."""
    p = "city=sf"
    lake = mor(6)
    log = lake.log_file(p, "h", T[0], size=33)
    written = lake.base_file(p, "k", T[1], size=44)
    lake.commit(T[1], {}, state=State.INFLIGHT)
    uri = lake.storage.uri
    plan = RollbackPlan(instant_to_rollback=InstantRef(T[1], "deltacommit"), requests=(
        RollbackRequest(p, files_to_delete=(uri(f"/t/{p}/{written}"), uri(f"/t/{p}/gone_0-1-0_{T[1]}.parquet"))),
        RollbackRequest(p, "h", T[0], log_blocks_to_delete={uri(f"/t/{p}/{log}"): 33})), version=1)
    lake.instant_file(Instant(T[3], "rollback", State.REQUESTED), plan.to_raw())
    table = HudiTable.load(lake.storage, "/t")
    preview = plan_rollback(table, table.timeline.find(T[1]))
    assert preview.files_to_delete == ((p, uri(f"/t/{p}/{written}"), 44),
                                       (p, uri(f"/t/{p}/gone_0-1-0_{T[1]}.parquet"), 0))
    assert preview.logs_to_mark == ((p, uri(f"/t/{p}/{log}"), 33),)


def test_metadata_table_rollback_is_found_again_on_a_rerun_and_skipped_when_it_never_saw_the_write(
        tmp_path) -> None:
    """HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata) on table version 8+: the
    MDT deltacommit of the rolled-back write is rolled back at the data-table rollback's time; a
    re-run (a data-table rollback resumed after the MDT's completed) finds that MDT rollback and
    writes nothing; a failed write the MDT never saw leaves the MDT as it is."""
    from tests.helpers import FIXTURES, fake_failed_write, unzip_table
    from timeline.mdt.reader import MetadataTable
    from timeline.metadata.records import RollbackMetadata

    lake = unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", tmp_path / "t")
    table = HudiTable.open(str(lake))
    target = table.timeline.writes().completed().instants[-1].requested_time
    done = rollback(table, target)
    mdt = MetadataTable(table.reload())
    (mdt_rollback,) = mdt.mdt.timeline.rollbacks().completed()
    named = mdt.mdt.read(mdt_rollback, RollbackPlan, State.REQUESTED).instant_to_rollback
    assert named is not None and named.time == target  # what a killed run resumes from
    assert mdt.mdt.read(mdt_rollback, RollbackMetadata).commits_rollback == (target,)
    instants = list(mdt.mdt.timeline)
    again = rollback_in_metadata_table(MetadataTable(table), target, done.requested_time)
    assert again == mdt_rollback and list(MetadataTable(table.reload()).mdt.timeline) == instants
    failed = "20990101000000000"
    written = fake_failed_write(lake, failed, markers=False)
    rollback(HudiTable.open(str(lake)), failed)
    assert not any(f.exists() for f in written)
    assert list(MetadataTable(HudiTable.open(str(lake))).mdt.timeline) == instants
    assert HudiTable.open(str(lake)).inspect.validate_metadata_table().ok


def test_metadata_table_rollback_killed_after_its_target_went_is_finished_from_its_plan(tmp_path) -> None:
    """BaseHoodieTableServiceClient.rollback on the metadata table (table version 8+): an MDT
    rollback killed after it deleted its deltacommit's state files is finished from its pending
    plan (getPendingRollbackInfo), the deltacommit reconstructed as inflight: what the plan names
    goes and the rollback completes at its own time."""
    from tests.helpers import FIXTURES, unzip_table
    from timeline import transition
    from timeline.mdt.reader import MetadataTable

    lake = unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", tmp_path / "t")
    table = HudiTable.open(str(lake))
    target_time = table.timeline.writes().completed().instants[-1].requested_time
    mdt_table = MetadataTable(table).mdt
    target = mdt_table.timeline.find(target_time)
    assert target is not None and target.action == "deltacommit"
    plan = plan_rollback(mdt_table, target).plan
    assert plan.requests
    rollback_time = table.new_instant_time()
    transition.write_state(mdt_table, Instant(rollback_time, "rollback", State.REQUESTED), plan.to_raw())
    for status in mdt_table.timeline.files_of(target).values():
        mdt_table.storage.delete(status.path)  # the killed run got this far
    done = rollback_in_metadata_table(MetadataTable(table.reload()), target_time, rollback_time)
    assert done is not None and done.is_completed and done.requested_time == rollback_time
    mdt = MetadataTable(table.reload()).mdt
    assert target_time not in {i.requested_time for i in mdt.timeline}
    assert not [p for p in (lake / ".hoodie" / "metadata").rglob(f"*{target_time}*")
                if ".hoodie" not in p.relative_to(lake / ".hoodie" / "metadata").parts]


V6_COW = "sample_table/cow/v6_simplekeygen_nonhivestyle"  # INSERT, INSERT


def _v6_with_mdt(tmp_path):  # type: ignore[no-untyped-def]
    from tests.helpers import FIXTURES, unzip_table
    from tests.mdt.helpers import add_v6_metadata_table

    lake = unzip_table(FIXTURES / f"{V6_COW}.zip", tmp_path / "t")
    add_v6_metadata_table(lake)
    return lake, HudiTable.open(str(lake))


def test_v6_metadata_table_rollback_keeps_its_plan_and_is_found_again_on_a_rerun(tmp_path) -> None:
    """0.14/0.15 HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata): the MDT's own
    rollback of the rolled-back deltacommit at R + "006" is requested with its HoodieRollbackPlan
    (what a killed run resumes from); a re-run finds it completed and writes nothing."""
    from timeline.mdt.reader import MetadataTable
    from timeline.metadata.records import RollbackPlan as Plan

    lake, table = _v6_with_mdt(tmp_path)
    target = table.timeline.writes().completed().instants[-1].requested_time
    done = rollback(table, target)
    mdt = MetadataTable(table.reload()).mdt
    (mdt_rollback,) = mdt.timeline.rollbacks().completed().instants
    assert mdt_rollback.requested_time == done.requested_time + "006"
    named = mdt.read(mdt_rollback, Plan, State.REQUESTED).instant_to_rollback
    assert named is not None and named.time == target
    instants = list(mdt.timeline)
    again = rollback_in_metadata_table(MetadataTable(table), target, done.requested_time, {})
    assert again == mdt_rollback and list(MetadataTable(table.reload()).mdt.timeline) == instants


def test_v6_metadata_table_rollback_killed_after_its_target_went_is_finished(tmp_path) -> None:
    """0.14/0.15 on the metadata table: the MDT rollback at R + "006", killed after it deleted the
    deltacommit's state files, is finished from its pending plan (getPendingRollbackInfo), the
    deltacommit taken as completed: a ROLLBACK command block for it, the rollback completed."""
    from timeline import transition
    from timeline.logformat import BlockType, read_blocks
    from timeline.mdt.reader import MetadataTable
    from timeline.metadata.records import RollbackMetadata

    lake, table = _v6_with_mdt(tmp_path)
    target_time = table.timeline.writes().completed().instants[-1].requested_time
    mdt_table = MetadataTable(table).mdt
    target = mdt_table.timeline.find(target_time)
    assert target is not None and target.is_completed
    rollback_time = table.new_instant_time()
    plan = plan_rollback(mdt_table, target).plan
    transition.write_state(mdt_table, Instant(rollback_time + "006", "rollback", State.REQUESTED), plan.to_raw())
    for status in mdt_table.timeline.files_of(target).values():
        mdt_table.storage.delete(status.path)  # the killed run got this far
    done = rollback_in_metadata_table(MetadataTable(table.reload()), target_time, rollback_time, {})
    assert done is not None and done.is_completed and done.requested_time == rollback_time + "006"
    mdt = MetadataTable(table.reload()).mdt
    assert mdt.read(done, RollbackMetadata).commits_rollback == (target_time,)
    assert mdt.timeline.completed().find(rollback_time) is not None  # the deltacommit at R, written first
    folder = lake / ".hoodie" / "metadata" / "files"
    commands = [b for p in sorted(folder.glob(".files-*.log.*")) for b in read_blocks(p.read_bytes(), path=str(p))
                if b.block_type is BlockType.COMMAND]
    assert commands


def test_v6_pending_metadata_table_deltacommit_of_a_failed_write_is_removed_not_rolled_back(tmp_path) -> None:
    """0.14/0.15: a pending MDT deltacommit of the rolled-back write is not rolled back by the
    data table's rollback (the MDT's rollbackFailedWrites would): Cleanline removes it first; then
    the deltacommit at R, and no MDT rollback at R + "006"."""
    from tests.helpers import fake_failed_write
    from timeline.mdt.reader import MetadataTable

    lake, table = _v6_with_mdt(tmp_path)
    failed = "20990101000000000"
    written = fake_failed_write(lake, failed, markers=True)
    folder = lake / ".hoodie" / "metadata" / ".hoodie"
    for name in (f"{failed}.deltacommit.requested", f"{failed}.deltacommit.inflight"):
        (folder / name).write_bytes(b"")
    table.reload()
    assert MetadataTable(table).mdt.timeline.find(failed) is not None
    done = rollback(table, failed)
    mdt = MetadataTable(table.reload()).mdt
    assert failed not in {i.requested_time for i in mdt.timeline}
    assert mdt.timeline.completed().find(done.requested_time) is not None
    assert not mdt.timeline.rollbacks().completed().filter(lambda i: i.requested_time == done.requested_time + "006")
    assert not any(f.exists() for f in written)


def test_v6_metadata_table_rollback_refused_once_the_metadata_table_compacted_it(tmp_path) -> None:
    """0.14/0.15 validateRollback in the metadata table's own part (where no data-table rollback
    checked first: a pending rollback finished, a restore): a write at or before the MDT's latest
    compaction (its time carries the "001" suffix) is refused, nothing in the MDT changes."""
    from timeline import CleanlineError
    from timeline.mdt.reader import MetadataTable

    lake, table = _v6_with_mdt(tmp_path)
    target = table.timeline.writes().completed().instants[-1].requested_time
    folder = lake / ".hoodie" / "metadata" / ".hoodie"
    compaction = target + "001"
    for name in (f"{compaction}.compaction.requested", f"{compaction}.compaction.inflight"):
        (folder / name).write_bytes(b"")
    (folder / f"{compaction}.commit").write_bytes(b"{}")
    mdt_files = sorted((p, p.stat().st_size) for p in (lake / ".hoodie" / "metadata").rglob("*") if p.is_file())
    with pytest.raises(CleanlineError, match=f"compacted {target} at {compaction}"):
        rollback_in_metadata_table(MetadataTable(table.reload()), target, "20990101000000000", {})
    assert sorted((p, p.stat().st_size) for p in (lake / ".hoodie" / "metadata").rglob("*") if p.is_file()) == mdt_files


def test_v6_pending_metadata_table_deltacommit_with_a_pending_rollback_is_finished_from_its_plan(tmp_path) -> None:
    """0.14/0.15: a pending MDT deltacommit of the rolled-back write whose MDT rollback is pending
    already is not removed first: that rollback is finished from its own plan
    (getPendingRollbackInfo), at its own time, and a log file the plan does not name stays (its
    blocks, of an instant gone from the timeline, are skipped: readers list none of its files)."""
    from tests.helpers import fake_failed_write
    from timeline import transition
    from timeline.logformat import HeaderKey, read_blocks
    from timeline.mdt.reader import MetadataTable
    from timeline.mdt.writer import update_for_commit
    from timeline.metadata.records import CommitMetadata, RollbackMetadata
    from timeline.metadata.written import by_partition, commit_metadata, write_stat

    lake, table = _v6_with_mdt(tmp_path)
    failed = "20990101000000000"
    written = fake_failed_write(lake, failed, markers=True)
    stats = [write_stat(file_id=p.name.split("_")[0], path=p.relative_to(lake).as_posix(),
                        partition_path=p.parent.relative_to(lake).as_posix(), file_size_in_bytes=p.stat().st_size)
             for p in written]
    update_for_commit(MetadataTable(table), failed, CommitMetadata.from_raw(
        commit_metadata(by_partition(stats), "UPSERT", None)))
    folder = lake / ".hoodie" / "metadata"
    (folder / ".hoodie" / f"{failed}.deltacommit").unlink()  # the MDT deltacommit died before completing
    (log,) = [p for p in (folder / "files").glob(".files-*.log.*")
              if {b.header.get(HeaderKey.INSTANT_TIME) for b in read_blocks(p.read_bytes(), path=str(p))} == {failed}]
    mdt_table = MetadataTable(table.reload()).mdt
    target = mdt_table.timeline.find(failed)
    assert target is not None and target.is_pending
    plan = plan_rollback(mdt_table, target).plan
    pending = Instant("20990101000000100", "rollback", State.REQUESTED)
    transition.write_state(mdt_table, pending, plan.to_raw())
    done = rollback_in_metadata_table(MetadataTable(table.reload()), failed, "20990101000000200", {})
    assert done is not None and (done.requested_time, done.state) == (pending.requested_time, State.COMPLETED)
    mdt = MetadataTable(table.reload())
    assert mdt.mdt.read(done, RollbackMetadata).commits_rollback == (failed,)
    assert failed not in {i.requested_time for i in mdt.mdt.timeline}
    assert mdt.mdt.timeline.completed().find("20990101000000200") is not None  # the deltacommit at R
    assert log.exists()
    listed = {n for files in mdt.files().values() for n in files}
    assert not {p.name for p in written} & listed


def test_a_completed_write_with_a_pending_rollback_is_finished_by_name() -> None:
    """BaseHoodieTableServiceClient.rollback resumes a pending rollback of an instant whatever
    the instant is (getPendingRollbackInfo): a completed write whose rollback was requested and
    died is no failed write, yet rolled back by name its rollback is finished."""
    from timeline import transition

    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    written = lake.base_file(p, "h", T[1])
    lake.commit(T[1], {p: [written]})
    table = HudiTable.load(lake.storage, "/t")
    pending = transition.request(table, "rollback", plan_rollback(table, table.timeline.find(T[1])).plan.to_raw())
    assert rollback_failed_write(table.reload(), T[1]).requested_time == pending.requested_time
    assert not lake.storage.exists(f"/t/{p}/{written}")


def test_rollback_of_a_completed_commit_deletes_only_what_its_metadata_names_partitions_of() -> None:
    """ListingBasedRollbackStrategy.fetchFilesFromCommitMetadata: a completed commit's files are
    looked for in the partitions its commit metadata names; a file stamped with its time in
    another partition (no write stat names it) is not the commit's and stays."""
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {"city=sf": [lake.base_file("city=sf", "g", T[0])]})
    written = lake.base_file("city=sf", "h", T[1])
    stray = lake.base_file("city=ny", "x", T[1])
    lake.commit(T[1], {"city=sf": [written]})
    table = HudiTable.load(lake.storage, "/t")
    preview = plan_rollback(table, table.timeline.find(T[1]))
    assert [path for _, path, _ in preview.files_to_delete] == [f"/t/city=sf/{written}"]
    rollback(table, T[1])
    assert lake.storage.exists(f"/t/city=ny/{stray}") and not lake.storage.exists(f"/t/city=sf/{written}")


def test_rollback_of_a_completed_commit_keeps_a_file_of_its_time_its_stats_do_not_name() -> None:
    """ListingBasedRollbackStrategy.fetchFilesFromInstant: a completed copy-on-write commit whose
    metadata names an operation (checkCommitMetadataCompleted) deletes only the files its write
    stats name (fetchFilesFromCommitMetadata); a stray file stamped with its time in the same
    partition is kept, as Hudi keeps it, for the orphan repair."""
    p = "city=sf"
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    written = lake.base_file(p, "h", T[1])
    stray = lake.base_file(p, "x", T[1])
    lake.commit(T[1], {p: [written]})
    table = HudiTable.load(lake.storage, "/t")
    assert [path for _, path, _ in plan_rollback(table, table.timeline.find(T[1])).files_to_delete] == [
        f"/t/{p}/{written}"]
    rollback(table, T[1])
    assert lake.storage.exists(f"/t/{p}/{stray}") and not lake.storage.exists(f"/t/{p}/{written}")


@pytest.mark.parametrize("operation", ["", "UNKNOWN"])
def test_rollback_of_a_completed_commit_without_an_operation_lists_every_partition(operation: str) -> None:
    """checkCommitMetadataCompleted is false for commit metadata whose operation is UNKNOWN (or
    absent, Hudi's default): the files of the commit's time are listed in every partition
    (fetchFilesFromListFiles), not taken from its write stats."""
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {"city=sf": [lake.base_file("city=sf", "g", T[0])]})
    written = lake.base_file("city=sf", "h", T[1])
    other = lake.base_file("city=ny", "x", T[1])
    lake.commit(T[1], {"city=sf": [written]}, operation=operation)
    table = HudiTable.load(lake.storage, "/t")
    assert sorted(path for _, path, _ in plan_rollback(table, table.timeline.find(T[1])).files_to_delete) == [
        f"/t/city=ny/{other}", f"/t/city=sf/{written}"]


@pytest.mark.parametrize("version", [6, 8])
def test_rollback_of_a_pending_write_without_markers_lists_every_partition(version: int) -> None:
    """ListingBasedRollbackStrategy.getRollbackRequests: a pending write rolled back without
    markers is looked for in every partition (FSUtils.getAllPartitionPaths), whatever partitions
    its inflight workload profile names: a file of its time in another partition is its too."""
    lake = Lake(MemoryStorage(), "/t", version=version)
    lake.commit(T[0], {"city=sf": [lake.base_file("city=sf", "g", T[0])]})
    named = lake.base_file("city=sf", "h", T[1])
    elsewhere = lake.base_file("city=ny", "x", T[1])
    lake.instant_file(Instant(T[1], "commit", State.REQUESTED))
    lake.instant_file(Instant(T[1], "commit", State.INFLIGHT),
                      lake.commit_metadata({"city=sf": [named]}, None, "UPSERT", time=T[1]))
    table = HudiTable.load(lake.storage, "/t")
    assert sorted(path for _, path, _ in plan_rollback(table, table.timeline.find(T[1])).files_to_delete) == [
        f"/t/city=ny/{elsewhere}", f"/t/city=sf/{named}"]


@pytest.mark.parametrize("version", [8, 9])
def test_rollback_of_a_completed_delta_commit_lists_every_partition(version: int) -> None:
    """fetchFilesFromInstant goes by commit metadata only on copy-on-write: a completed
    merge-on-read delta commit's files carrying its time are listed in every partition, a
    partition its stats do not name included."""
    lake = mor(version)
    log = lake.log_file("city=sf", "g", T[1], size=21)
    elsewhere = lake.base_file("city=ny", "x", T[1], size=5)
    lake.commit(T[1], {"city=sf": [log]})
    table = HudiTable.load(lake.storage, "/t")
    assert sorted(plan_rollback(table, table.timeline.find(T[1])).files_to_delete) == [
        ("city=ny", f"/t/city=ny/{elsewhere}", 5), ("city=sf", f"/t/city=sf/{log}", 21)]


def test_rollback_records_a_file_it_could_not_delete_as_failed_and_goes_on(tmp_path) -> None:
    """BaseRollbackHelper.deleteFiles: a file that cannot be deleted is reported in the
    partition's `failedDeleteFiles`, the others are deleted and the rollback completes (a file
    already gone counts as deleted). Here a planned file was replaced by a folder."""
    base = str(tmp_path / "t")
    p = "city=sf"
    lake = Lake(LocalStorage(), base, version=8)
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    stuck, gone, deleted = (lake.base_file(p, f"{g}", T[1]) for g in ("h", "i", "j"))
    lake.commit(T[1], {p: [stuck, gone, deleted]})
    table = HudiTable.load(lake.storage, base)
    target = table.timeline.find(T[1])
    plan = plan_rollback(table, target).plan
    (tmp_path / "t" / p / stuck).unlink()
    (tmp_path / "t" / p / stuck).mkdir()
    (tmp_path / "t" / p / stuck / "x").write_bytes(b"x")
    (tmp_path / "t" / p / gone).unlink()
    metadata = execute_rollback_plan(table, T[2], plan, target)
    (partition,) = metadata.partitions.values()
    uri = lake.storage.uri
    assert partition.failed_delete_files == (uri(f"{base}/{p}/{stuck}"),)
    assert sorted(partition.success_delete_files) == sorted([uri(f"{base}/{p}/{gone}"), uri(f"{base}/{p}/{deleted}")])
    assert not (tmp_path / "t" / p / deleted).exists() and (tmp_path / "t" / p / stuck / "x").exists()
