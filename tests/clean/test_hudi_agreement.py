"""Cleanline decides as Apache Hudi does: each test is named after the Hudi method it follows
and runs on a hand-made timeline (hudi-format.md §7; tests/KNOWN_DIFFERENCES.md lists the
closed disagreements)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from tests.helpers import Lake, archive_instants
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import schedule_clean
from timeline.clean.planner import plan_clean
from timeline.instant import Instant, State
from timeline.metadata import avro
from timeline.storage import MemoryStorage

T = [f"2026110100{i:02d}00000" for i in range(20)]
P = "city=sf"


def test_getReplacedFilesEligibleToClean_keeps_a_replaced_slice_whose_log_is_savepointed() -> None:
    """isFileSliceExistInSavepointedFiles: any file of the slice, base or log. A v6 MOR
    log-only file group, savepointed, then replaced; a clean retaining 2 commits keeps it."""
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    log = lake.log_file(P, "fgL", T[1])
    lake.commit(T[1], {P: [log]})
    lake.savepoint(T[1], {P: [log]})
    new = lake.base_file(P, "fgN", T[2])
    lake.commit(T[2], {P: [new]}, replaced={P: ["fgL"]})
    for t in T[3:7]:
        lake.commit(t, {P: [lake.base_file(P, f"fg{t}", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    result = plan_clean(table, CleanConfig(commits_retained=2))
    (decision,) = [d for d in result.decisions if d.file_name == log]
    assert not decision.delete and decision.reason == f"savepoint {T[1]}"
    assert log not in {d.file_name for d in result.files_to_delete}


def test_prepareExtraMetadata_is_an_empty_map_without_savepoints() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    for t in T[:5]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=2)
    clean = schedule_clean(table, plan_clean(table, config), config)
    assert clean is not None
    content = avro.decode(lake.storage.read(table.timeline.path_of(clean)), path="requested")
    assert content["extraMetadata"] == {}


def test_requestClean_writes_nothing_for_a_plan_that_deletes_nothing() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    for t in T[:3]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=10)
    assert schedule_clean(table, plan_clean(table, config), config) is None
    assert not table.reload().timeline.cleans()


@pytest.mark.parametrize("version", [6, 8])
def test_getReplacedFilesEligibleToClean_keeps_a_savepointed_base_of_a_replaced_group(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    old = lake.base_file(P, "fgA", T[1])
    lake.commit(T[1], {P: [old]})
    lake.savepoint(T[1], {P: [old]})
    lake.commit(T[2], {P: [lake.base_file(P, "fgB", T[2])]}, replaced={P: ["fgA"]})
    for t in T[3:7]:
        lake.commit(t, {P: [lake.base_file(P, "fgB", t)]})
    result = plan_clean(HudiTable.load(lake.storage, lake.base), CleanConfig(commits_retained=2))
    assert old not in {d.file_name for d in result.files_to_delete}


@pytest.fixture
def process_zone(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Run with this process's local zone set by TZ (the zone a JVM would default to)."""
    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("zone, expected_ectr", [
    ("America/Anchorage", T[1]),   # UTC-9: the process's cutoff (01:00 UTC) is the earlier one
    ("Pacific/Kiritimati", T[10]), # UTC+14: the table's UTC cutoff is the earlier one
])
def test_getEarliestCommitToRetain_by_hours_takes_the_earlier_of_the_table_and_process_zone_cutoffs(
        process_zone, zone: str, expected_ectr: str) -> None:
    """CleanPlanner formats now - hours in the JVM's zone (HoodieInstantTimeGenerator); the
    table writes UTC instant times. Cleanline takes the earlier cutoff and says so."""
    process_zone(zone)
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "UTC"})
    times = ["20261101000000000", "20261101010000000", "20261101100000000", "20261101113000000"]
    for t in times:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    result = plan_clean(table, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=2), now=now)
    expected = {T[1]: times[1], T[10]: times[2]}[expected_ectr]
    assert result.earliest_instant_to_retain is not None
    assert result.earliest_instant_to_retain.requested_time == expected
    assert any("the earlier" in note and "20261101100000000" in note for note in result.notes)


def test_clean_cli_now_of_14_digits_is_that_second_exactly() -> None:
    from timeline.cli_clean import now_of

    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "UTC"})
    table = HudiTable.load(lake.storage, lake.base)
    assert now_of(table, "20261101120000") == datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert now_of(table, "20261101120000123").microsecond == 123000


def archive_v8(lake: Lake, instants: list[tuple[str, str, str]]) -> None:
    archive_instants(lake.storage, lake.timeline_folder, instants)


def test_getBaseInstantTime_places_an_archived_log_by_its_archived_completion_time() -> None:
    """HoodieFileGroup.getBaseInstantTime with CompletionTimeQueryViewV2: a log written before a
    compaction but completed after it belongs to the compacted slice, also once its delta
    commit is archived (the completion time then comes from the LSM history). Cleaning the
    old slice must not take it: its records are in no base file."""
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T[1])
    lake.commit(T[1], {P: [b1]}, completion=T[1][:-3] + "500")
    late = lake.log_file(P, "fg1", T[3])                   # delta commit T3...
    b4 = lake.base_file(P, "fg1", T[4])
    lake.schedule_compaction(T[4], [(P, "fg1", T[1])])
    lake.complete_compaction(T[4], {P: [b4]}, completion=T[4][:-3] + "500")
    lake.commit(T[3], {P: [late]}, completion=T[5])        # ...completes after compaction T4
    for t in T[6:12]:
        lake.commit(t, {"city=la": [lake.base_file("city=la", "other", t)]})
    archive_v8(lake, [(T[1], T[1][:-3] + "500", "deltacommit"), (T[3], T[5], "deltacommit"),
                      (T[4], T[4][:-3] + "500", "commit")])
    table = HudiTable.load(lake.storage, lake.base)
    (group,) = table.file_system_view().file_groups(P)
    assert [(s.base_instant_time, [log.name for log in s.log_files]) for s in group.slices] == [
        (T[4], [late]), (T[1], [])]
    result = plan_clean(table, CleanConfig(commits_retained=2))
    doomed = {d.file_name for d in result.files_to_delete}
    assert b1 in doomed and late not in doomed


def test_getBaseInstantTime_finds_an_archived_log_later_than_the_first_active_instant() -> None:
    """CompletionTimeQueryViewV2.load reads the archived instants from its cursor on: a delta
    commit archived while an older instant stays active (an indexing instant, which Hudi's
    archiver never moves) keeps its completion time, and its log its slice."""
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T[1])
    lake.commit(T[1], {P: [b1]}, completion=T[1][:-3] + "500")
    lake.instant_file(Instant(T[2], "indexing", State.COMPLETED, T[2][:-3] + "500"))  # stays active
    log = lake.log_file(P, "fg1", T[3])
    lake.commit(T[3], {P: [log]}, completion=T[3][:-3] + "500")
    b5 = lake.base_file(P, "fg1", T[5])
    lake.schedule_compaction(T[5], [(P, "fg1", T[1])])
    lake.complete_compaction(T[5], {P: [b5]}, completion=T[5][:-3] + "500")
    archive_v8(lake, [(T[3], T[3][:-3] + "500", "deltacommit")])
    (group,) = HudiTable.load(lake.storage, lake.base).file_system_view().file_groups(P)
    assert [(s.base_instant_time, [f.name for f in s.log_files]) for s in group.slices] == [
        (T[5], []), (T[1], [log])]


def test_getBaseInstantTime_puts_a_pending_log_in_the_newest_slice() -> None:
    """'the log file is still pending, it always belongs to the latest file slice'; readers do
    not see it (filterUncommittedLogs), the cleaner keeps it with that slice."""
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T[1])
    lake.commit(T[1], {P: [b1]})
    pending = lake.log_file(P, "fg1", T[2])
    lake.commit(T[2], {P: [pending]}, state=State.INFLIGHT)
    view = HudiTable.load(lake.storage, lake.base).file_system_view()
    (group,) = view.file_groups(P)
    assert [log.name for log in group.slices[0].log_files] == [pending]
    assert view.latest_slices(P)[0].log_files == ()


def test_latestSnapshotVersion_falls_back_to_the_highest_manifest() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    archive_v8(lake, [("20250101000000000", "20250101000000500", "commit")])
    lake.storage.delete(f"{lake.timeline_folder}/history/_version_")
    archived = load_archived_timeline(HudiTable.load(lake.storage, lake.base))
    assert [i.requested_time for i in archived] == ["20250101000000000"]


@pytest.mark.parametrize("version", [6, 8])
def test_getDeletePaths_partition_deletion_looks_at_groups_replaced_since_the_ectr(version: int) -> None:
    """CleanPlanner deletes a partition left with no file group when no group of it (still
    listed) was replaced at or after the earliest commit to retain (noSubsequentReplaceCommit);
    an insert_overwrite_table naming the partition with no file ids does not block it."""
    Q = "city=la"
    lake = Lake(MemoryStorage(), "/t", version=version)
    old = lake.base_file(Q, "fgQ", T[1])
    lake.commit(T[1], {Q: [old]})
    lake.commit(T[2], {P: [lake.base_file(P, "fgP", T[2])]}, replaced={Q: ["fgQ"]})
    for t in T[3:6]:
        lake.commit(t, {P: [lake.base_file(P, "fgP", t)]})
    lake.commit(T[6], {P: [lake.base_file(P, "fgP2", T[6])]}, replaced={Q: [], P: []})
    result = plan_clean(HudiTable.load(lake.storage, lake.base), CleanConfig(commits_retained=2))
    assert result.earliest_instant_to_retain is not None and result.earliest_instant_to_retain.requested_time == T[5]
    assert old in {d.file_name for d in result.files_to_delete}
    assert result.partitions_to_delete == (Q,)


def test_getPartitionPathsForIncrementalCleaning_skips_partitions_that_only_got_new_file_groups() -> None:
    """PR #18016 (getWritePartitionPathsWithExistingFileGroupsModified): after a clean, the
    next incremental plan lists the partitions where a commit updated or replaced an existing
    file group, not those that only received new ones."""
    Q = "city=la"
    lake = Lake(MemoryStorage(), "/t", version=8)
    for t in T[:4]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=2)
    from timeline.clean.executor import run_pending_cleans

    schedule_clean(table, plan_clean(table, config), config)
    run_pending_cleans(table)
    lake.commit(T[10], {Q: [lake.base_file(Q, "new1", T[10])]})          # insert only: a new file group
    lake.commit(T[11], {P: [lake.base_file(P, "fg1", T[11])]})            # an update of fg1
    lake.commit(T[12], {Q: [lake.base_file(Q, "new2", T[12])]})
    lake.commit(T[13], {P: [lake.base_file(P, "fg1", T[13])]})
    result = plan_clean(table.reload(), config)
    assert result.incremental and result.partitions_considered == (P,)


@pytest.mark.parametrize("version", [6, 8])
def test_BaseRestoreActionExecutor_skips_instants_an_interrupted_run_rolled_back(version: int) -> None:
    from timeline.instant import Instant
    from timeline.metadata.records import InstantRef
    from timeline.restore import _roll_back_for_restore, restore
    from timeline.savepoint import create_savepoint

    lake = Lake(MemoryStorage(), "/t", version=version)
    for t in T[:5]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    create_savepoint(table, T[2])
    entries = [{"commitTime": T[4], "action": "commit"}, {"commitTime": T[3], "action": "commit"}]
    pending = Instant(table.new_instant_time(), "restore", State.REQUESTED)
    lake.instant_file(pending, {"instantsToRollback": entries, "version": 2, "savepointToRestoreTimestamp": T[2]})
    lake.instant_file(Instant(pending.requested_time, "restore", State.INFLIGHT))
    # the run that was cut off
    assert _roll_back_for_restore(table.reload(), InstantRef.from_instant_info(entries[0])) is not None
    done = restore(table.reload(), T[2])
    assert done.requested_time == pending.requested_time
    content = table.read_instant(table.timeline.find(done.requested_time))
    assert content["instantsToRollback"] == [T[3]] and list(content["hoodieRestoreMetadata"]) == [T[3]]
    assert [i["commitTime"] for i in content["restoreInstantInfo"]] == [T[3]]
    assert not lake.storage.exists(f"/t/{P}/fg1_0-1-0_{T[4]}.parquet")


def test_convertFileStatusesToBaseFiles_counts_only_the_tables_base_format() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    stray = lake.data_file(P, f"fg9_0-1-0_{T[0]}.orc")  # named like a base file, but not the table's format
    lake.commit(T[0], {P: [lake.base_file(P, "fg1", T[0])]})
    for t in T[1:4]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t), lake.base_file(P, "fg9", t)]})
    result = plan_clean(HudiTable.load(lake.storage, lake.base), CleanConfig(commits_retained=1))
    assert stray not in {d.file_name for d in result.decisions}
    assert f"fg1_0-1-0_{T[0]}.parquet" in {d.file_name for d in result.files_to_delete}


def test_isFileSliceNeededForPendingMajorOrMinorCompaction_checks_both_plans() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    names = [lake.base_file(P, "fg1", t) for t in T[:4]]
    for t, name in zip(T[:4], names):
        lake.commit(t, {P: [name]}, action="commit")
    lake.schedule_compaction(T[10], [(P, "fg1", T[1])])       # reads slices from T1 on
    plan = {"operations": [{"baseInstantTime": T[3], "fileId": "fg1", "partitionPath": P,
                            "deltaFilePaths": [], "dataFilePath": names[3]}], "version": 2}
    lake.instant_file(Instant(T[11], "logcompaction", State.REQUESTED), plan)  # later plan, later base
    result = plan_clean(HudiTable.load(lake.storage, lake.base),
                        CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1))
    doomed = {d.file_name for d in result.files_to_delete}
    assert names[1] not in doomed and names[2] not in doomed


def test_getBaseInstantTime_real_table_with_archived_delta_commits_round_trip(table_copy) -> None:
    """A real v9 MOR table written by Hudi, its first delta commits moved to the LSM history:
    after an aggressive clean hudi-rs reads the latest snapshot and every retained instant with
    the rows it read before."""
    from tests.helpers import rows
    from timeline.clean.executor import run_pending_cleans

    path = table_copy("sample_table/mor/avro/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    first = table.timeline.completed().instants[:3]
    archive_instants(table.storage, table.timeline.folder,
                     [(i.requested_time, i.completion_time or "", i.action) for i in first])
    table.reload()
    assert [i.requested_time for i in load_archived_timeline(table)] == [i.requested_time for i in first]
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    retained = [i.requested_time for i in table.timeline.writes().completed()
                if plan.earliest_instant_to_retain
                and i.requested_time >= plan.earliest_instant_to_retain.requested_time]
    before = {t: rows(path, t) for t in retained}
    latest = rows(path)
    assert schedule_clean(table, plan, config) is not None
    run_pending_cleans(table)
    assert rows(path) == latest
    assert {t: rows(path, t) for t in retained} == before
