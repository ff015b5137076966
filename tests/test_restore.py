"""Restore to a savepoint on real tables: hudi-rs then reads what it read as of the savepoint."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import retained_files, rows
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.metadata import avro
from timeline.restore import RestoreRefused, preview_restore, restore
from timeline.savepoint import create_savepoint

TABLES = [
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/cow/v9_txns_simple_nometa",
    "sample_table/mor/avro/v9_txns_simple_nometa",
    "sample_table/mor/avro/v9_nonpartitioned_rollback",
]


def savepoint_target(table: HudiTable) -> str:
    """A commit with writes after it: the second completed write, or the first of two."""
    writes = [i for i in table.timeline.commits().completed() if i.action in ("commit", "deltacommit")]
    return writes[1 if len(writes) > 2 else 0].requested_time


@pytest.mark.parametrize("table_id", TABLES)
def test_restore_reads_as_the_savepoint(table_copy, table_id: str) -> None:
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    k = savepoint_target(table)
    expected = rows(path, k)
    drop = table.config.metadata_table_enabled
    if drop:
        from timeline.mdt import drop_metadata_table
        drop_metadata_table(table)
    create_savepoint(table, k)
    preview = preview_restore(table, k)
    later = [i.requested_time for i in table.timeline.writes() if i.requested_time > k]
    assert sorted(i.requested_time for i in preview.instants) == sorted(later)
    started = time.monotonic()
    done = restore(table, k)
    took_ms = (time.monotonic() - started) * 1000
    after = HudiTable.open(str(path))
    assert [i for i in after.timeline.writes() if i.requested_time > k] == []
    assert not after.timeline.rollbacks().filter(lambda i: i.requested_time > k)
    assert rows(path) == expected
    for file in retained_files(after, "0"):
        assert file.exists(), file
    meta = avro.decode(Path(after.timeline.path_of(after.timeline.restores().last())).read_bytes(), path="r")  # type: ignore[arg-type]
    assert meta["startRestoreTime"] == done.requested_time and meta["version"] == 1
    assert 0 < meta["timeTakenInMillis"] <= took_ms
    assert sorted(meta["instantsToRollback"]) == sorted(later)
    assert set(meta["hoodieRestoreMetadata"]) == set(later)


def test_restore_refuses_a_later_savepoint_and_a_pending_clean(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    commits = [i.requested_time for i in table.timeline.commits().completed()]
    create_savepoint(table, commits[1])
    create_savepoint(table, commits[3])
    with pytest.raises(RestoreRefused, match=f"savepoint {commits[3]} is later"):
        restore(table, commits[1])
    with pytest.raises(RestoreRefused, match="no completed savepoint"):
        restore(table, commits[2])


def test_restore_still_works_after_an_aggressive_clean(table_copy) -> None:
    path = table_copy("sample_table/mor/avro/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    k = savepoint_target(table)
    expected = rows(path, k)
    create_savepoint(table, k)
    for config in (CleanConfig(commits_retained=1),
                   CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)):
        table = HudiTable.open(str(path))
        plan = plan_clean(table, config)
        if not plan.is_empty:
            schedule_clean(table, plan, config, force=True)
            run_pending_cleans(table)
    restore(HudiTable.open(str(path)), k)
    assert rows(path) == expected


def test_restore_and_rollback_cli_preview_confirm_and_run(table_copy) -> None:
    import json
    import subprocess
    import sys

    from tests.helpers import tree_snapshot

    cleanline = str(Path(sys.executable).with_name("cleanline"))
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    run = lambda *a, stdin="": subprocess.run([cleanline, *a], input=stdin, capture_output=True, text=True,  # noqa: E731
                                              timeout=60)
    commits = [i.requested_time for i in HudiTable.open(str(path)).timeline.commits().completed()]
    k = commits[2]
    expected = rows(path, k)
    assert run("savepoint", "create", str(path), "--instant", k).returncode == 0
    before = tree_snapshot(path)
    preview = json.loads(run("restore", str(path), "--savepoint", k, "--preview", "--json").stdout)
    assert {p["instant"]["requestedTime"] for p in preview["instantsToRollback"]} == {t for t in commits if t > k}
    assert preview["bytesToDelete"] == sum(v["bytes"] for v in preview["perPartition"].values()) > 0
    declined = run("restore", str(path), "--savepoint", k, stdin="no\n")
    assert declined.returncode == 2 and "cancelled" in declined.stderr
    assert tree_snapshot(path) == before
    done = run("restore", str(path), "--savepoint", k, "--yes")
    assert done.returncode == 0, done.stderr
    assert rows(path) == expected
    last = HudiTable.open(str(path)).timeline.commits().completed().last()
    assert last is not None and last.requested_time == k
    refused = run("rollback", str(path), "--instant", k, "--yes")
    assert refused.returncode == 2 and "savepointed commit" in refused.stderr
    older = run("rollback", str(path), "--instant", commits[1], "--preview", "--json")
    assert older.returncode == 2 and "found commits after" in older.stderr  # validateRollbackCommitSequence
    assert f"first delete the savepoint after it ({k}" in older.stderr  # the rule and the way forward
    assert f"create a savepoint of {commits[0]}" in older.stderr and f"--instant {k}`" in older.stderr
    assert run("rollback", str(path), "--failed").stdout.strip() == "no failed writes"


def test_restore_rolls_back_a_pending_compaction_after_the_savepoint() -> None:
    from tests.helpers import Lake
    from timeline.instant import State
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    times = [f"2026110100{i:02d}00000" for i in range(6)]
    base = lake.base_file("p=1", "g", times[0])
    lake.commit(times[0], {"p=1": [base]})
    log = lake.log_file("p=1", "g", times[1])
    lake.commit(times[1], {"p=1": [log]})
    lake.schedule_compaction(times[2], [("p=1", "g", times[0])], state=State.INFLIGHT)
    half = lake.base_file("p=1", "g", times[2])  # written by the running compaction
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, times[1])
    preview = preview_restore(table, times[1])
    assert [i.requested_time for i in preview.instants] == [times[2]]
    restore(table, times[1])
    after = HudiTable.load(lake.storage, "/t")
    assert not after.timeline.pending_compactions()
    assert not lake.storage.exists(f"/t/p=1/{half}") and lake.storage.exists(f"/t/p=1/{log}")


@pytest.mark.parametrize("version", [6, 8])
def test_restore_rolls_back_pending_clusterings_first_then_the_writes_after_the_savepoint_newest_first(
        version: int) -> None:
    """RestorePlanActionExecutor: pending clusterings after the savepoint, newest first, then the
    other writes after it, newest first: v6 by requested time, v8 pending ones first and then by
    completion time (a write requested before the savepoint's commit and completed after it goes)."""
    from tests.helpers import Lake, T
    from timeline.instant import Instant, State
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=version)
    p = "city=sf"
    for t in T[:5]:
        lake.commit(t, {p: [lake.base_file(p, f"g{t[-7:-5]}", t)]})
    early = "20261101000030000"  # requested between T0 and T1, completed after T3
    lake.commit(early, {p: [lake.base_file(p, "early", early)]}, completion=T[3][:-3] + "500")
    cluster = {"operationType": "cluster", "version": 1, "clusteringPlan": {"inputGroups": [], "version": 1}}
    lake.instant_file(Instant(T[5], "clustering" if version == 8 else "replacecommit", State.REQUESTED), cluster)
    lake.instant_file(Instant(T[7], "clustering" if version == 8 else "replacecommit", State.REQUESTED), cluster)
    lake.commit(T[6], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, T[1])
    preview = preview_restore(table, T[1])
    expected = [T[7], T[5], T[6], T[4], T[3]] + ([early] if version == 8 else []) + [T[2]]
    assert [i.requested_time for i in preview.instants] == expected
    assert [r.instant.requested_time for r in preview.rollbacks] == expected
    assert preview.metadata_table == ""
    gone = [t for t in expected if t in (T[2], T[3], T[4], early)]
    assert preview.per_partition() == {p: (len(gone), 100 * len(gone))}
    assert preview.bytes_to_delete == 100 * len(gone)


KEPT = ("column_stats", "files", "record_index")
DROPPED = ("partition_stats", "secondary_index_merchant_idx", "secondary_index_txn_date_idx")


def mdt_fixture(table_copy) -> tuple[Path, HudiTable, str, str]:
    """A v9 table with a metadata table: an early write (not after the MDT's oldest compaction),
    a late one (after it, not the latest), and the compaction's time."""
    from timeline.mdt.reader import MetadataTable

    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    compaction = next(i for i in MetadataTable(table).mdt.timeline.completed() if i.action == "commit").requested_time
    writes = [i.requested_time for i in table.timeline.commits().completed() if i.action == "commit"]
    return path, table, max(t for t in writes if t < compaction), next(t for t in writes if t > compaction
                                                                       and t != writes[-1])


def test_restore_deletes_the_metadata_table_where_hudi_does(table_copy) -> None:
    """BaseHoodieWriteClient.restoreToSavepoint: a savepoint not after the MDT's oldest
    compaction deletes the MDT first; the preview says so and why."""
    from timeline.mdt.reader import MetadataTable

    path, table, early, _ = mdt_fixture(table_copy)
    compaction = next(i for i in MetadataTable(table).mdt.timeline.completed() if i.action == "commit").requested_time
    create_savepoint(table, early)
    assert preview_restore(table, early).metadata_table == (
        f"The metadata table is deleted first, as Apache Hudi does here (the savepoint {early} is not after the "
        f"metadata table's oldest compaction {compaction}); Hudi writers rebuild it.")
    restore(table, early)
    table.reload()
    assert not (path / ".hoodie" / "metadata").exists() and not table.config.metadata_partitions
    assert not [i for i in table.timeline.writes() if i.requested_time > early]


@pytest.mark.parametrize(("completed", "inflight"), [
    (KEPT + DROPPED[:2], DROPPED[2:]),
    (("files", *DROPPED[:2]), ("column_stats", "record_index", DROPPED[2])),  # indexes still being built
    (KEPT, ()),
], ids=["built", "building", "nothing-dropped"])
def test_restore_previews_and_restores_the_metadata_table_as_hudi_does(
        table_copy, completed: tuple[str, ...], inflight: tuple[str, ...]) -> None:
    """BaseHoodieWriteClient.restoreToSavepoint with a savepoint after the MDT's oldest
    compaction: the preview says the metadata table is restored with the table and which
    partitions go (dropIndexOnRestore); the restore drops them from the table's config (completed
    and inflight) and storage, rolls back the MDT's later instants and syncs it at a later time."""
    from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config
    from timeline.mdt.reader import MetadataTable
    from timeline.mdt.writer import MetadataTableUnsupported
    from timeline.restore import restore_metadata_table

    path, table, _, late = mdt_fixture(table_copy)
    update_config(table.storage, table.base, {MDT_PARTITIONS: ",".join(completed),
                                              MDT_PARTITIONS_INFLIGHT: ",".join(inflight)})
    create_savepoint(table.reload(), late)
    dropped = [p for p in (*completed, *inflight) if p not in KEPT]
    assert preview_restore(table, late).metadata_table == (
        "The metadata table is restored with the table, as Apache Hudi does: its instants after the savepoint are "
        "rolled back and a deltacommit brings its file listing to what storage holds"
        + (f"; its {', '.join(dropped)} partition(s) are deleted (Hudi rebuilds them)" if dropped else "") + ".")
    mdt = MetadataTable(table)
    later_mdt = {i.requested_time for i in mdt.mdt.reload().timeline if i.requested_time > late}
    assert later_mdt
    done = restore(table, late)
    table.reload()
    assert (table.config.metadata_partitions, table.config.metadata_partitions_inflight) == (
        tuple(p for p in completed if p in KEPT), tuple(p for p in inflight if p in KEPT))
    folders = {p.name for p in (path / ".hoodie" / "metadata").iterdir() if not p.name.startswith(".")}
    assert set(KEPT) <= folders and not folders & set(dropped)
    timeline = MetadataTable(table).mdt.timeline
    assert timeline.restores().completed() and timeline.completed().find(late) is not None
    assert not later_mdt & {i.requested_time for i in timeline.writes()}
    (sync,) = [i for i in timeline.writes() if i.requested_time > late]
    assert sync.is_completed and sync.requested_time > done.requested_time
    assert table.inspect.validate_metadata_table().ok
    with pytest.raises(MetadataTableUnsupported) as refused:
        restore_metadata_table(MetadataTable(table), "20200101000000000", table.new_instant_time())
    assert str(refused.value) == f"{table.uri}: the metadata table has no completed instant 20200101000000000"



def test_restore_on_merge_on_read_v8_goes_by_completion_time_and_compactions_by_requested_time() -> None:
    """RestorePlanActionExecutor on table version 8+ (RestoreInstantComparatorFactory): a
    deltacommit requested before the savepointed one is rolled back only if it completed after
    it did; a compaction on merge-on-read is compared by requested time; pending writes come
    first, newest first, then the completed ones by completion time, newest first."""
    from tests.helpers import Lake, T
    from timeline.instant import State
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    p = "city=sf"
    lake.commit(T[0], {p: [lake.base_file(p, "g", T[0])]})
    before, straddling, compaction = "20261101000030000", "20261101000040000", "20261101000050000"
    lake.commit(before, {p: [lake.base_file(p, "b", before)]}, completion=T[1][:-3] + "500")
    lake.commit(straddling, {p: [lake.base_file(p, "s", straddling)]}, completion=T[2][:-3] + "500")
    lake.schedule_compaction(compaction, [(p, "g", T[0])])
    lake.complete_compaction(compaction, {p: [lake.base_file(p, "g", compaction)]}, completion=T[3][:-3] + "500")
    lake.commit(T[1], {p: [lake.base_file(p, "one", T[1])]})  # completes at T1 + 999 ms
    for t in T[2:4]:
        lake.commit(t, {p: [lake.base_file(p, f"w{t[-7:-5]}", t)]})
    for t in T[4:6]:
        lake.commit(t, {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, T[1])
    preview = preview_restore(table, T[1])
    assert preview.savepoint == T[1]
    assert [i.requested_time for i in preview.instants] == [T[5], T[4], T[3], T[2], straddling]
    done = restore(table, T[1])
    after = HudiTable.load(lake.storage, "/t")
    plan = avro.decode(lake.storage.read(after.timeline.path_of(done, State.REQUESTED)), path="plan")
    assert (plan["savepointToRestoreTimestamp"], plan["version"]) == (T[1], 2)
    assert [i["commitTime"] for i in plan["instantsToRollback"]] == [T[5], T[4], T[3], T[2], straddling]
    left = after.timeline.writes()
    assert [i.requested_time for i in left] == [T[0], before, compaction, T[1]]


@pytest.mark.parametrize("partitioned", [True, False])
def test_restore_verification_names_missing_files_and_unexpected_base_files(partitioned: bool) -> None:
    """verify_restore: files the savepoint holds that are gone, and base files of the latest slices
    it does not hold (a slice of log files only has none), named with their partition."""
    from tests.helpers import Lake, T
    from timeline.restore import verify_restore
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ", partitioned=partitioned)
    p = "city=sf" if partitioned else ""
    for t in T[:2]:
        lake.commit(t, {p: [lake.base_file(p, "g", t)]})
    create_savepoint(HudiTable.load(lake.storage, "/t"), T[1])
    assert verify_restore(HudiTable.load(lake.storage, "/t"), T[1]).verified
    lake.commit(T[2], {p: [lake.base_file(p, "h", T[2]), lake.log_file(p, "k", T[2])]})
    lake.storage.delete(f"{lake.partition_path(p)}/g_0-1-0_{T[1]}.parquet")
    check = verify_restore(HudiTable.load(lake.storage, "/t"), T[1])
    shown = f"{p}/" if p else ""
    assert (check.savepoint, check.verified) == (T[1], False)
    assert check.missing == (f"{shown}g_0-1-0_{T[1]}.parquet",)
    assert check.unexpected == (f"{shown}g_0-1-0_{T[0]}.parquet", f"{shown}h_0-1-0_{T[2]}.parquet")


def test_restore_refusals_say_why_before_anything_changes() -> None:
    """BaseHoodieWriteClient.restoreToSavepoint's preconditions and Cleanline's own: a pending
    clean, a pending restore to another savepoint, archival beyond savepoints, savepointed files
    gone (the first five named)."""
    from tests.helpers import Lake, T
    from timeline.config import update_config
    from timeline.instant import Instant, State
    from timeline.metadata.records import InstantRef, RestorePlan
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8)
    p = "city=sf"
    for t in T[:3]:
        lake.commit(t, {p: [lake.base_file(p, f"g{i}", t) for i in range(6)]})
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, T[1])
    create_savepoint(table, T[0])
    uri = table.uri

    def refusal() -> str:
        with pytest.raises(RestoreRefused) as refused:
            restore(HudiTable.load(lake.storage, "/t"), T[1])
        return str(refused.value)

    with pytest.raises(RestoreRefused) as later:
        restore(HudiTable.load(lake.storage, "/t"), T[0])
    assert str(later.value) == (f"{uri}: savepoint {T[1]} is later than {T[0]}; delete it first (Hudi cannot roll back "
                                "a savepointed commit)")
    clean = Instant(T[3], "clean", State.REQUESTED)
    lake.instant_file(clean, {"earliestInstantToRetain": None, "policy": "KEEP_LATEST_COMMITS", "version": 2,
                              "filesToBeDeletedPerPartition": {}, "filePathsToBeDeletedPerPartition": {},
                              "partitionsToBeDeleted": [], "lastCompletedCommitTimestamp": "", "extraMetadata": None})
    assert refusal() == f"{uri}: clean {T[3]} is pending; run it first"
    lake.storage.delete(f"{lake.timeline_folder}/{clean.file_name(lake.layout)}")
    other = RestorePlan(instants_to_rollback=(InstantRef(T[2], "commit"),), savepoint=T[0], version=2)
    pending = Instant(T[4], "restore", State.REQUESTED)
    lake.instant_file(pending, other.to_raw())
    assert refusal() == f"{uri}: restore {T[4]} to savepoint {T[0]} is pending; finish it first"
    lake.storage.delete(f"{lake.timeline_folder}/{pending.file_name(lake.layout)}")
    update_config(lake.storage, "/t", {"hoodie.archive.beyond.savepoint": "true"})
    assert refusal() == (f"{uri}: hoodie.archive.beyond.savepoint is on; commits after the savepoint may be "
                         "archived, so Hudi does not restore")
    update_config(lake.storage, "/t", {"hoodie.archive.beyond.savepoint": "false"})
    lake.commit(T[5], {}, state=State.INFLIGHT)
    lake.storage.write(f"/t/.hoodie/.heartbeat/{T[5]}", b"")  # its writer is still at it
    assert refusal() == (f"{uri}: commit {T[5]} is still being written (its heartbeat is alive); wait until its "
                         "writer finishes or its heartbeat expires; the restore would roll it back under its writer")
    lake.storage.set_mtime(f"/t/.hoodie/.heartbeat/{T[5]}", 0)
    for i in range(6):
        lake.storage.delete(f"/t/{p}/g{i}_0-1-0_{T[1]}.parquet")
    shown = ", ".join(f"{p}/g{i}_0-1-0_{T[1]}.parquet" for i in range(5))
    assert refusal() == (f"{uri}: savepoint {T[1]} holds 6 file(s) that no longer exist ({shown}, ...); restoring "
                         "would not give the table as of the savepoint")
    with pytest.raises(RestoreRefused, match=f"savepoint {T[1]} holds 6 file"):
        preview_restore(HudiTable.load(lake.storage, "/t"), T[1])
    assert [i.requested_time for i in HudiTable.load(lake.storage, "/t").timeline.writes()] == [*T[:3], T[5]]


def test_restore_resumes_a_pending_restore_and_reports_only_what_it_rolled_back() -> None:
    """BaseRestoreActionExecutor: a pending restore to the same savepoint is resumed from its plan
    (its requested file; the inflight one is empty); an instant already gone was rolled back by
    the interrupted run ("Ignoring already rolledback instant") and is not in the metadata; a
    pending clustering the plan names may have completed as a replacecommit since; a pending
    rollback the run left is resumed, not planned again; rollback instants after the savepoint are
    removed, an earlier one stays."""
    from tests.helpers import Lake, T
    from timeline.instant import Instant, State
    from timeline.metadata.records import InstantRef, RestorePlan
    from timeline.rollback import plan_rollback
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8)
    p = "city=sf"
    for t in T[:3]:
        lake.commit(t, {p: [lake.base_file(p, f"g{t[-7:-5]}", t)]})
    lake.commit(T[3], {p: [lake.base_file(p, "c", T[3])]}, replaced={p: ["g02"]})  # the clustering, completed
    lake.commit(T[4], {p: [lake.base_file(p, "g04", T[4])]})
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, T[1])
    early_rollback = "20261101000010000"  # a rollback before the savepoint: not the restore's
    lake.instant_file(Instant(early_rollback, "rollback", State.REQUESTED))
    left_over = Instant(T[6], "rollback", State.REQUESTED)  # the interrupted run's rollback of T2
    lake.instant_file(left_over, plan_rollback(table, table.timeline.find(T[2]), for_restore=True).plan.to_raw())
    plan = RestorePlan(instants_to_rollback=(InstantRef(T[4], "commit"), InstantRef(T[3], "clustering"),
                                             InstantRef(T[2], "commit")), savepoint=T[1], version=2)
    resumed = Instant(T[5], "restore", State.REQUESTED)
    lake.instant_file(resumed, plan.to_raw())
    lake.instant_file(Instant(T[5], "restore", State.INFLIGHT))  # started: its inflight file is empty
    for status in table.reload().timeline.files_of(table.timeline.find(T[4])).values():
        lake.storage.delete(status.path)  # the interrupted run rolled T4 back
    done = restore(HudiTable.load(lake.storage, "/t"), T[1])
    assert done.requested_time == T[5]
    after = HudiTable.load(lake.storage, "/t")
    meta = avro.decode(lake.storage.read(after.timeline.path_of(after.timeline.restores().last())), path="r")
    assert (meta["startRestoreTime"], meta["instantsToRollback"], set(meta["hoodieRestoreMetadata"])) == (
        T[5], [T[3], T[2]], {T[3], T[2]})
    assert meta["hoodieRestoreMetadata"][T[2]][0]["startRollbackTime"] == T[6]
    assert [i.requested_time for i in after.timeline.writes()] == T[:2]
    assert not lake.storage.exists(f"/t/{p}/c_0-1-0_{T[3]}.parquet")
    assert [i.requested_time for i in after.timeline.rollbacks()] == [early_rollback]


def test_restore_refused_names_every_missing_file_up_to_five_without_a_partition() -> None:
    """Cleanline's own check: with five savepointed files gone on a non-partitioned table, all
    five are named, bare, and nothing is left out."""
    from tests.helpers import Lake, T
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8, partitioned=False)
    for t in T[:2]:
        lake.commit(t, {"": [lake.base_file("", f"g{i}", t) for i in range(5)]})
    create_savepoint(HudiTable.load(lake.storage, "/t"), T[0])
    names = [f"g{i}_0-1-0_{T[0]}.parquet" for i in range(5)]
    for name in names:
        lake.storage.delete(f"/t/{name}")
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(RestoreRefused) as refused:
        restore(table, T[0])
    assert str(refused.value) == (f"{table.uri}: savepoint {T[0]} holds 5 file(s) that no longer exist "
                                  f"({', '.join(names)}); restoring would not give the table as of the savepoint")


def test_restore_restores_the_metadata_table_even_when_nothing_follows_the_point(table_copy) -> None:
    """HoodieBackedTableMetadataWriter.update(HoodieRestoreMetadata) calls restoreToInstant on the
    metadata table whatever follows the point: RestorePlanActionExecutor.execute writes the plan
    even when it is empty, and BaseRestoreActionExecutor.finishRestore then deletes the MDT's
    rollback instants after the point. The latest MDT deltacommit as the point: an empty restore
    completes on the MDT and a pending rollback after the point is gone."""
    from timeline.instant import Instant, State
    from timeline.mdt.reader import MetadataTable
    from timeline.restore import restore_metadata_table

    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    mdt = MetadataTable(table)
    point = max((i for i in mdt.mdt.timeline.completed() if i.action == "deltacommit"),
                key=lambda i: i.completion_time or "")
    assert not [i for i in mdt.mdt.timeline if (i.completion_time or "") > (point.completion_time or "")]
    stray = table.new_instant_time()
    folder = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    (folder / f"{stray}.rollback.requested").write_bytes(b"")
    assert mdt.mdt.reload().timeline.rollbacks().find(stray) is not None
    sync = restore_metadata_table(MetadataTable(table), point.requested_time, table.new_instant_time())
    timeline = MetadataTable(table.reload()).mdt.timeline
    (done,) = timeline.restores().instants
    assert done.is_completed
    plan = avro.decode((folder / f"{done.requested_time}.restore.requested").read_bytes(), path="plan")
    assert (plan["savepointToRestoreTimestamp"], plan["instantsToRollback"]) == (point.requested_time, [])
    assert not timeline.rollbacks() and not (folder / f"{stray}.rollback.requested").exists()
    assert sync is not None and sync.is_completed and timeline.completed().find(sync.requested_time)
    assert Instant(stray, "rollback", State.REQUESTED) not in timeline.instants
    assert table.inspect.validate_metadata_table().ok


def _lake_with_writes_after_a_savepoint() -> tuple[HudiTable, str, list[str]]:
    """A v8 table: four commits, a savepoint on the second."""
    from tests.helpers import Lake, T
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8)
    p = "city=sf"
    for t in T[:4]:
        lake.commit(t, {p: [lake.base_file(p, f"g{t[-7:-5]}", t)]})
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, T[1])
    return table.reload(), T[1], T[2:4]


def test_restore_requests_each_rollback_with_its_plan() -> None:
    """BaseRestoreActionExecutor rolls each planned instant back through
    BaseRollbackPlanActionExecutor.requestRollback: its `<r>.rollback.requested` holds the
    HoodieRollbackPlan naming the instant (what a restore killed part-way resumes from,
    getPendingRollbackInfo); the rollbacks are never completed and are removed once the restore is."""
    from timeline.instant import State
    from timeline.metadata.records import RollbackPlan
    from timeline.restore import restore_to

    table, savepoint_time, later = _lake_with_writes_after_a_savepoint()
    seen: dict[str, str] = {}

    def check(restore_time: str) -> None:
        for rollback in table.reload().timeline.rollbacks():
            assert rollback.is_pending
            plan = table.read(rollback, RollbackPlan, State.REQUESTED)
            assert plan.instant_to_rollback is not None and plan.requests
            seen[plan.instant_to_rollback.time] = plan.instant_to_rollback.action

    restore_to(table, table.timeline.savepoints().find(savepoint_time), after_rollbacks=check)
    assert seen == dict.fromkeys(later, "commit")
    assert not table.reload().timeline.rollbacks()


def test_restore_time_taken_is_its_own_duration_in_milliseconds() -> None:
    """BaseRestoreActionExecutor.execute: timeTakenInMillis is the restore's HoodieTimer
    (restoreTimer.endTimer()), started as the restore starts and read once its rollbacks and the
    metadata table's part are done. A metadata table's part that takes three seconds: the time
    recorded is that long from the call, to the millisecond."""
    from timeline.restore import restore_to

    table, savepoint_time, _ = _lake_with_writes_after_a_savepoint()
    marks: list[float] = []

    def slow(restore_time: str) -> None:
        time.sleep(3)
        marks.append(time.monotonic())

    called = time.monotonic()
    done = restore_to(table, table.timeline.savepoints().find(savepoint_time), after_rollbacks=slow)
    took = (marks[0] - called) * 1000
    meta = avro.decode(table.storage.read(table.reload().timeline.path_of(done)), path="r")
    assert took - 50 <= meta["timeTakenInMillis"] <= took + 1
