"""The planner, rule by rule, on hand-made v6 and v8 tables (hudi-format.md §7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import ROOT, Lake, T, rewrite_history
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanConfigError, CleanPolicy
from timeline.clean.planner import CleanPlan, plan_clean
from timeline.instant import Instant, State
from timeline.metadata import avro
from timeline.storage import MemoryStorage
from timeline.storage.arrow import LocalStorage

P, Q = "city=sf", "city=nyc"


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def version(request: pytest.FixtureRequest) -> int:
    return request.param


def plan(lake: Lake, **overrides: object) -> CleanPlan:
    return plan_clean(HudiTable.load(lake.storage, lake.base), CleanConfig().with_overrides(**overrides))


def decisions(result: CleanPlan) -> dict[str, tuple[bool, str]]:
    return {d.file_name: (d.delete, d.reason) for d in result.decisions}


def test_planner_keep_latest_commits_deletes_only_versions_superseded_before_the_window(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    names = rewrite_history(lake, T[:5])
    result = plan(lake, commits_retained=2)
    assert result.earliest_instant_to_retain is not None and result.earliest_instant_to_retain.requested_time == T[3]
    got = decisions(result)
    assert got[names[0]] == (True, f"older than the earliest retained commit {T[3]} and superseded by slice {T[2]}")
    assert got[names[1]][0] is True
    assert got[names[2]] == (False, f"latest version before the retained window (earliest retained commit {T[3]}): "
                                    "queries started before it may read it")
    assert got[names[3]] == (False, f"inside the retained window (at or after {T[3]})")
    assert got[names[4]] == (False, "latest version")
    assert result.bytes_to_delete == 200 and not result.partitions_to_delete
    assert {d.path for d in result.files_to_delete} == {f"memory://t/{P}/{n}" for n in names[:2]}


def test_planner_nothing_to_clean_says_why(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    rewrite_history(lake, T[:3])
    result = plan(lake, commits_retained=3)
    assert result.is_empty and result.decisions == ()
    assert result.notes == ("3 completed commits, not more than the 3 retained",)


def test_planner_savepoint_protects_its_files(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    names = rewrite_history(lake, T[:5])
    lake.savepoint(T[0], {P: [names[0]]})
    result = plan(lake, commits_retained=2)
    got = decisions(result)
    assert got[names[0]] == (False, f"savepoint {T[0]}")
    assert got[names[1]][0] is True
    assert result.savepointed_timestamps == (T[0],)
    assert result.to_record().to_raw()["extraMetadata"] == {"savepointed_timestamps": T[0]}


def test_planner_pending_compaction_protects_slices_from_its_base_instant(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="MERGE_ON_READ")
    b = [lake.base_file(P, "fg1", t) for t in (T[0], T[1])]
    lake.commit(T[0], {P: [b[0]]})
    lake.complete_compaction(T[1], {P: [b[1]]})
    logs = [lake.log_file(P, "fg1", T[1], version=n) if version == 6 else lake.log_file(P, "fg1", t)
            for n, t in ((1, T[2]), (2, T[3]))]
    for t, name in zip((T[2], T[3]), logs):
        lake.commit(t, {P: [name]})
    lake.schedule_compaction(T[4], [(P, "fg1", T[1])])
    for t in T[5:8]:
        lake.commit(t, {})
    result = plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    got = decisions(result)
    assert got[b[0]] == (True, "older than the 1 newest versions retained")
    assert got[b[1]] == (False, f"pending compaction {T[4]} reads this slice")
    assert all(got[name] == (False, f"pending compaction {T[4]} reads this slice") for name in logs)


def test_planner_mor_deletes_log_files_with_their_slice_and_cow_keeps_them() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    b0 = lake.base_file(P, "fg1", T[0])
    lake.commit(T[0], {P: [b0]})
    log0 = lake.log_file(P, "fg1", T[0])
    lake.commit(T[1], {P: [log0]})
    b2 = lake.base_file(P, "fg1", T[2])
    lake.complete_compaction(T[2], {P: [b2]})
    b3 = lake.base_file(P, "fg1", T[3])
    lake.complete_compaction(T[3], {P: [b3]})
    lake.commit(T[4], {})
    got = decisions(plan(lake, commits_retained=1))
    assert got[b0][0] is True and got[log0] == (True, got[b0][1])


def test_planner_v8_log_finishing_after_compaction_stays_with_the_new_slice() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b0 = lake.base_file(P, "fg1", T[0])
    lake.commit(T[0], {P: [b0]})
    early = lake.log_file(P, "fg1", T[1])
    lake.commit(T[1], {P: [early]})
    late = lake.log_file(P, "fg1", T[2])
    b3 = lake.base_file(P, "fg1", T[3])
    lake.schedule_compaction(T[3], [(P, "fg1", T[0])])
    lake.complete_compaction(T[3], {P: [b3]}, completion=T[3][:-3] + "500")
    lake.commit(T[2], {P: [late]}, completion=T[4])          # started before, finished after T3
    b5 = lake.base_file(P, "fg1", T[5])
    lake.complete_compaction(T[5], {P: [b5]})
    for t in T[6:9]:
        lake.commit(t, {})
    result = plan(lake, commits_retained=4)  # completed: T0 T1 T2 T3 T5 T6 T7 T8 -> ECTR T5
    assert result.earliest_instant_to_retain is not None and result.earliest_instant_to_retain.requested_time == T[5]
    got = decisions(result)
    assert got[b0][0] is True and got[early] == got[b0]
    assert got[late] == got[b3] and got[b3][0] is False  # b3's slice is the last before the window


def test_planner_replaced_groups_go_only_before_the_retained_window(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    old = lake.base_file(P, "old", T[0])
    lake.commit(T[0], {P: [old]})
    new = lake.base_file(P, "new", T[1])
    lake.commit(T[1], {P: [new]}, replaced={P: ["old"]}, operation="INSERT_OVERWRITE")
    late_old = lake.base_file(Q, "q-old", T[2])
    lake.commit(T[2], {Q: [late_old]})
    for t in T[3:6]:
        lake.commit(t, {})
    q_new = lake.base_file(Q, "q-new", T[6])
    lake.commit(T[6], {Q: [q_new]}, replaced={Q: ["q-old"]}, operation="INSERT_OVERWRITE")
    result = plan(lake, commits_retained=3)  # ECTR = T[4]
    got = decisions(result)
    assert got[old] == (True, f"file group replaced by replacecommit {T[1]}, "
                              f"before the earliest retained commit {T[4]}")
    assert got[late_old][0] is False and "inside the retained window" in got[late_old][1]


def test_planner_partition_with_only_replaced_groups_is_deleted(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    gone = lake.base_file(Q, "q1", T[0])
    lake.commit(T[0], {Q: [gone]})
    keep = lake.base_file(P, "p1", T[1])
    lake.commit(T[1], {P: [keep]}, replaced={Q: ["q1"]}, operation="DELETE_PARTITION")
    for t in T[2:6]:
        lake.commit(t, {})
    result = plan(lake, commits_retained=2)
    assert result.partitions_to_delete == (Q,)
    assert decisions(result)[gone][0] is True
    assert result.to_record().to_raw()["partitionsToBeDeleted"] == [Q]


def history_with_clean(lake: Lake, clean) -> None:
    """Q written at T0-T1 (one version per group, as a past clean left it), P at T2; a clean at
    T3 (set up by `clean`); P rewritten T4-T7."""
    rewrite_history(lake, T[:1], partition=Q, file_id="q1")
    rewrite_history(lake, T[1:2], partition=Q, file_id="q2")
    lake.commit(T[2], {P: [lake.base_file(P, "p", T[2])]})
    clean(lake)
    rewrite_history(lake, T[4:8], partition=P, file_id="p")


def test_planner_incremental_lists_only_partitions_written_since_the_last_clean(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    history_with_clean(lake, lambda lake: lake.clean(T[3], earliest_retained=T[2]))
    result = plan(lake, commits_retained=2)
    assert result.incremental and result.partitions_considered == (P,)
    full = plan(lake, commits_retained=2, incremental=False)
    assert not full.incremental and full.partitions_considered == (Q, P)
    assert sorted(d.file_name for d in result.files_to_delete) == sorted(d.file_name for d in full.files_to_delete)
    assert result.files_to_delete


def test_planner_incremental_reads_a_huge_commit_as_a_stream_with_the_same_partitions(
        version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits above STREAM_CHECK_BYTES are read for the incremental partitions as a stream (a
    200 MB commit is never decoded whole, also inside the console's sync); the plan is the same."""
    from timeline.clean import planner

    lake = Lake(MemoryStorage(), "/t", version=version)
    history_with_clean(lake, lambda lake: lake.clean(T[3], earliest_retained=T[2]))
    decoded = plan(lake, commits_retained=2)
    monkeypatch.setattr(planner, "STREAM_CHECK_BYTES", 0)  # every commit counts as huge
    streamed = plan(lake, commits_retained=2)
    assert streamed.incremental and streamed.partitions_considered == decoded.partitions_considered == (P,)
    assert streamed.files_to_delete == decoded.files_to_delete and streamed.files_to_delete


@pytest.mark.parametrize(("setup", "note"), [
    (lambda lake: None, "no earlier clean"),
    (lambda lake: lake.clean(T[3], earliest_retained=""), "kept no commit window"),
    (lambda lake: lake.clean(T[3], earliest_retained="20200101000000000"), "is archived"),
    (lambda lake: lake.clean(T[3], earliest_retained=T[2], savepointed=["20200101000000000"]),
     "savepoint 20200101000000000 was removed"),
])
def test_planner_falls_back_to_a_full_listing(setup, note: str) -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    history_with_clean(lake, setup)
    result = plan(lake, commits_retained=2)
    assert not result.incremental and result.partitions_considered == (Q, P)
    assert any(note in n for n in result.notes), result.notes


def test_planner_keep_latest_file_versions(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    names = rewrite_history(lake, T[:4])
    got = decisions(plan(lake, policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=2))
    assert [got[n][0] for n in names] == [True, True, False, False]
    assert got[names[2]] == (False, "version 2 of 2 retained")


def test_planner_by_hours_keeps_the_version_before_the_window() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "UTC"})
    hourly = [f"20261101{h:02d}0000000" for h in range(6)]
    names = rewrite_history(lake, hourly)
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)
    now = datetime(2026, 11, 1, 4, 0, tzinfo=UTC)  # cutoff 03:00 -> ECTR at 03:00
    result = plan_clean(HudiTable.load(lake.storage, "/t"), config, now=now)
    assert result.earliest_instant_to_retain is not None
    assert result.earliest_instant_to_retain.requested_time == hourly[3]
    assert sorted(d.file_name for d in result.files_to_delete) == names[:2]


def test_planner_by_hours_with_no_commit_in_the_window_deletes_nothing_and_says_why() -> None:
    """getEarliestCommitToRetain takes the first completed commit at or after the cutoff: with
    every commit older than the window there is none, and nothing is cleaned."""
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "UTC"})
    rewrite_history(lake, [f"20261101{h:02d}0000000" for h in range(6)])
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)
    result = plan_clean(HudiTable.load(lake.storage, "/t"), config, now=datetime(2026, 11, 2, 12, 0, tzinfo=UTC))
    assert result.earliest_instant_to_retain is None and not result.files_to_delete
    assert "no completed commit in the last 1 hours retained" in result.notes[0], result.notes


def test_planner_plan_serialises_as_hoodie_cleaner_plan_v2(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    rewrite_history(lake, T[:5])
    record = plan(lake, commits_retained=2).to_record().to_raw()
    data = avro.encode("HoodieCleanerPlan", record)
    assert avro.record_name(data) == "org.apache.hudi.avro.model.HoodieCleanerPlan"
    decoded = avro.decode(data, path="plan")
    assert decoded["version"] == 2 and decoded["policy"] == "KEEP_LATEST_COMMITS"
    assert decoded["earliestInstantToRetain"] == {"timestamp": T[3], "action": "commit", "state": "COMPLETED"}
    assert decoded["lastCompletedCommitTimestamp"] == T[4] and decoded["filesToBeDeletedPerPartition"] == {}
    assert [i["filePath"].rsplit("/", 1)[-1] for i in decoded["filePathsToBeDeletedPerPartition"][P]] == [
        d.file_name for d in plan(lake, commits_retained=2).files_to_delete]
    assert State.COMPLETED.name == "COMPLETED"


def test_planner_pending_clustering_protects_the_files_it_reads() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    names = rewrite_history(lake, T[:5])
    plan_record = {"operationType": "cluster", "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"{P}/{names[0]}", "deltaFilePaths": [], "fileId": "fg1",
                                     "partitionPath": P}], "numOutputFileGroups": 1}], "version": 1}}
    lake.instant_file(Instant(T[6], "clustering", State.REQUESTED), plan_record)
    got = decisions(plan(lake, commits_retained=1, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1))
    assert got[names[0]][0] is False and got[names[0]][1].startswith(f"pending clustering {T[6]} reads this file")
    assert got[names[1]][0] is True


def test_getFilesToCleanKeepingLatestVersions_counts_a_slice_a_pending_clustering_reads() -> None:
    """Hudi's CleanPlanner leaves only pending compactions out of the version count; a slice a
    pending clustering reads is counted (and, were it to go, kept by Cleanline's own rule)."""
    lake = Lake(MemoryStorage(), "/t", version=8)
    names = rewrite_history(lake, T[:5])
    plan_record = {"operationType": "cluster", "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"{P}/{names[4]}", "deltaFilePaths": [], "fileId": "fg1",
                                     "partitionPath": P}], "numOutputFileGroups": 1}], "version": 1}}
    lake.instant_file(Instant(T[6], "clustering", State.REQUESTED), plan_record)
    got = decisions(plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1))
    assert got[names[4]] == (False, "latest version")
    assert all(got[n][0] is True for n in names[:4])


def test_planner_pending_log_compaction_protects_slices_from_its_base_instant() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b0, b1 = lake.base_file(P, "fg1", T[0]), lake.base_file(P, "fg1", T[1])
    lake.commit(T[0], {P: [b0]})
    lake.complete_compaction(T[1], {P: [b1]})
    log = lake.log_file(P, "fg1", T[2])
    lake.commit(T[2], {P: [log]})
    plan_record = {"operations": [{"baseInstantTime": T[1], "fileId": "fg1", "partitionPath": P,
                                   "deltaFilePaths": [log], "dataFilePath": b1}], "version": 2}
    lake.instant_file(Instant(T[3], "logcompaction", State.REQUESTED), plan_record)
    got = decisions(plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1))
    assert got[b0] == (True, "older than the 1 newest versions retained")
    assert got[b1] == (False, f"pending log compaction {T[3]} reads this slice") == got[log]


def test_planner_copy_on_write_keeps_log_files_of_a_deleted_slice() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    b0 = lake.base_file(P, "fg1", T[0])
    stray = lake.log_file(P, "fg1", T[0])  # e.g. CDC logs with CDC off: Hudi leaves them
    lake.commit(T[0], {P: [b0, stray]})
    for t in T[1:4]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    got = decisions(plan(lake, commits_retained=1))
    assert got[b0][0] is True
    assert got[stray] == (False, "log file of a copy-on-write table: Hudi leaves it")


def test_planner_refuses_to_delete_bootstrap_sources_it_cannot_locate() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6, extra_props={"hoodie.bootstrap.base.path": "/source"})
    rewrite_history(lake, T[:4])
    with pytest.raises(CleanConfigError) as refused:
        plan(lake, commits_retained=1, delete_bootstrap_base_file=True)
    assert str(refused.value) == (
        "memory://t: hoodie.clean.delete.bootstrap.base.file is on, but Cleanline does not read the bootstrap index "
        "to find bootstrap source files; plan with it off (Hudi's default) to keep them")
    assert plan(lake, commits_retained=1).files_to_delete  # Hudi's default keeps bootstrap sources


def test_planner_by_hours_keeps_what_a_pending_compaction_reads_before_the_window() -> None:
    """The hours policy's window is not held back by pending instants (only KEEP_LATEST_COMMITS's
    is, HUDI-5341): a slice a pending compaction reads may fall before it, and stays."""
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b0 = lake.base_file(P, "fg1", T[0])
    lake.commit(T[0], {P: [b0]})
    log = lake.log_file(P, "fg1", T[1])
    lake.commit(T[1], {P: [log]})
    lake.schedule_compaction(T[2], [(P, "fg1", T[0])])
    for t in T[3:5]:
        lake.commit(t, {Q: [lake.base_file(Q, "fg2", t)]})
    now = datetime(2026, 11, 1, 1, 2, 30, tzinfo=UTC)  # one hour after 00:02:30: T3 is the first inside
    config = CleanConfig().with_overrides(policy="KEEP_LATEST_BY_HOURS", hours_retained=1)
    result = plan_clean(HudiTable.load(lake.storage, lake.base), config, now=now)
    assert result.earliest_instant_to_retain is not None and result.earliest_instant_to_retain.requested_time == T[3]
    got = decisions(result)
    assert got[b0] == got[log] == (False, f"pending compaction {T[2]} reads this slice")


def test_planner_keep_latest_file_versions_counts_a_pending_compaction_as_one_kept() -> None:
    """isFileGroupInPendingMajorOrMinorCompaction: keepVersions--, whatever the count."""
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    b = [lake.base_file(P, "fg1", t) for t in T[:3]]
    lake.commit(T[0], {P: [b[0]]})
    lake.complete_compaction(T[1], {P: [b[1]]})
    lake.complete_compaction(T[2], {P: [b[2]]})
    lake.schedule_compaction(T[3], [(P, "fg1", T[2])])
    got = decisions(plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=2))
    assert got[b[2]] == (False, f"pending compaction {T[3]} reads this slice")
    assert got[b[1]] == (False, "latest version")
    assert got[b[0]] == (True, "older than the 2 newest versions retained")


def test_planner_keep_latest_file_versions_keeps_a_savepointed_old_version() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    names = rewrite_history(lake, T[:4])
    lake.savepoint(T[4], {P: [names[0]]})
    got = decisions(plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=2))
    assert got[names[0]] == (False, f"savepoint {T[4]}")
    assert got[names[1]] == (True, "older than the 2 newest versions retained")


def replaced_history(lake: Lake) -> tuple[str, str]:
    """In P, group "old" (T0) replaced by an insert overwrite at T1 writing "new"; later commits
    T2-T5 write nothing. The old group's and the new group's base files."""
    old = lake.base_file(P, "old", T[0])
    lake.commit(T[0], {P: [old]})
    new = lake.base_file(P, "new", T[1])
    lake.commit(T[1], {P: [new]}, replaced={P: ["old"]}, operation="INSERT_OVERWRITE")
    for t in T[2:6]:
        lake.commit(t, {})
    return old, new


def test_planner_replaced_group_held_by_a_savepoint_stays(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    old, _ = replaced_history(lake)
    lake.savepoint(T[0], {P: [old]})
    result = plan(lake, commits_retained=2)
    assert decisions(result)[old] == (False, f"savepoint {T[0]}") and not result.files_to_delete


def test_planner_replaced_group_a_pending_compaction_reads_stays() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    old, _ = replaced_history(lake)
    lake.schedule_compaction(T[6], [(P, "old", T[0])])
    result = plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    assert decisions(result)[old] == (False, f"pending compaction {T[6]} reads this slice")
    assert not result.files_to_delete


def test_planner_replaced_group_under_keep_latest_file_versions_goes_with_its_partition(version: int) -> None:
    """With no retained window every replaced group goes (getReplacedFilesEligibleToClean with no
    earliest commit to retain), and a partition left with only replaced groups goes too."""
    lake = Lake(MemoryStorage(), "/t", version=version)
    old, new = replaced_history(lake)
    gone = lake.base_file(Q, "q1", T[6])
    lake.commit(T[6], {Q: [gone]})
    lake.commit(T[7], {}, replaced={Q: ["q1"]}, operation="DELETE_PARTITION")
    result = plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    got = decisions(result)
    assert got[old] == (True, f"file group replaced by replacecommit {T[1]}")
    assert got[gone] == (True, f"file group replaced by replacecommit {T[7]}")
    assert got[new] == (False, "latest version")
    assert result.partitions_to_delete == (Q,)


def test_planner_replaced_group_inside_the_window_says_which_commit_replaced_it(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    old, _ = replaced_history(lake)
    result = plan(lake, commits_retained=5)  # completed T0-T5: ECTR T1, the replacecommit itself
    assert decisions(result)[old] == (False, f"replaced by replacecommit {T[1]}, which is inside the retained "
                                             f"window (earliest retained commit {T[1]})")


def test_planner_partition_replaced_at_the_earliest_retained_commit_is_kept(version: int) -> None:
    """noSubsequentReplaceCommit: a replace at the earliest commit to retain (not only after it)
    keeps the partition and its files."""
    lake = Lake(MemoryStorage(), "/t", version=version)
    gone = lake.base_file(Q, "q1", T[0])
    lake.commit(T[0], {Q: [gone]})
    lake.commit(T[1], {P: [lake.base_file(P, "p1", T[1])]})
    lake.commit(T[2], {}, replaced={Q: ["q1"]}, operation="DELETE_PARTITION")
    for t in T[3:6]:
        lake.commit(t, {})
    result = plan(lake, commits_retained=4)  # completed T0-T5: ECTR T2
    assert result.earliest_instant_to_retain is not None and result.earliest_instant_to_retain.requested_time == T[2]
    assert decisions(result)[gone][0] is False and result.partitions_to_delete == ()
    later = plan(lake, commits_retained=3)  # ECTR T3: the replace is before the window
    assert decisions(later)[gone][0] is True and later.partitions_to_delete == (Q,)


def test_planner_plan_record_marks_no_file_as_a_bootstrap_base_file() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    b0 = lake.base_file(P, "fg1", T[0])
    lake.commit(T[0], {P: [b0]})
    log0 = lake.log_file(P, "fg1", T[0])
    lake.commit(T[1], {P: [log0]})
    for t in T[2:4]:
        lake.complete_compaction(t, {P: [lake.base_file(P, "fg1", t)]})
    lake.commit(T[4], {})
    record = plan(lake, commits_retained=1).to_record().to_raw()
    infos = record["filePathsToBeDeletedPerPartition"][P]
    assert {b0, log0} < {i["filePath"].rsplit("/", 1)[-1] for i in infos}
    assert [i["isBootstrapBaseFile"] for i in infos] == [False] * len(infos)


@pytest.mark.parametrize("partition", ["", "code=AX"])
def test_planner_paths_of_a_non_partitioned_table_and_of_an_odd_partition_name(partition: str) -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, partitioned=bool(partition))
    names = rewrite_history(lake, T[:4], partition=partition)
    result = plan(lake, commits_retained=1)
    folder = f"memory://t/{partition}/" if partition else "memory://t/"
    assert sorted(d.path for d in result.files_to_delete) == [folder + n for n in names[:2]]
    assert {d.partition for d in result.decisions} == {partition}


def test_planner_orders_partitions_by_name_whatever_their_files() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    rewrite_history(lake, T[:4], partition=Q)
    lake.storage.write(f"/t/{P}/.hoodie_partition_metadata", b"commitTime=0\n")  # a partition with no data file
    result = plan(lake, commits_retained=1)
    assert result.partitions_considered == (Q, P) and result.partitions_to_delete == (P,)


def test_planner_incremental_includes_a_commit_at_the_previous_window_start_and_not_one_at_the_new(
        version: int) -> None:
    """getPartitionPathsForIncrementalCleaning: commits from the previous earliest commit to
    retain (included) to the new one (excluded)."""
    lake = Lake(MemoryStorage(), "/t", version=version)
    rewrite_history(lake, T[:2], partition=Q, file_id="q1")   # Q updated at T1, the previous ECTR
    rewrite_history(lake, T[2:3], partition="city=la", file_id="la")
    lake.clean(T[3], earliest_retained=T[1])
    rewrite_history(lake, T[4:7], partition=P, file_id="p")
    rewrite_history(lake, T[7:8], partition="city=la", file_id="la")  # la updated at T7, the new ECTR
    lake.commit(T[8], {})
    result = plan(lake, commits_retained=2)  # completed T0-T2, T4-T8: ECTR T7
    assert result.earliest_instant_to_retain is not None and result.earliest_instant_to_retain.requested_time == T[7]
    assert result.incremental and result.partitions_considered == (Q, P)


def test_planner_incremental_streamed_commits_still_read_a_replacecommit_whole(
        version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replacecommit's replaced file groups are not in its write stats: it is decoded whole
    even when every commit counts as huge, and the partition it emptied is cleaned."""
    from timeline.clean import planner

    lake = Lake(MemoryStorage(), "/t", version=version)
    history_with_clean(lake, lambda lake: lake.clean(T[3], earliest_retained=T[2]))
    lake.commit(T[8], {}, replaced={Q: ["q1", "q2"]}, operation="DELETE_PARTITION")
    for t in T[9:12]:
        lake.commit(t, {})
    monkeypatch.setattr(planner, "STREAM_CHECK_BYTES", 0)
    result = plan(lake, commits_retained=2)
    assert result.incremental and result.partitions_considered == (Q, P) and result.partitions_to_delete == (Q,)


def test_planner_incremental_with_every_listed_savepoint_still_there(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    lake.savepoint(T[0][:-3] + "100", {})
    lake.savepoint(T[0][:-3] + "200", {})
    history_with_clean(lake, lambda lake: lake.clean(T[3], earliest_retained=T[2],
                                                     savepointed=[T[0][:-3] + "100", T[0][:-3] + "200"]))
    result = plan(lake, commits_retained=2)
    assert result.incremental and result.notes == (f"incremental: partitions written since {T[2]}",)
    assert result.savepointed_timestamps == (T[0][:-3] + "100", T[0][:-3] + "200")
    assert result.to_record().to_raw()["extraMetadata"] == {
        "savepointed_timestamps": f"{T[0][:-3]}100,{T[0][:-3]}200"}


@pytest.mark.parametrize(("incremental", "clean", "note"), [
    (False, True, "incremental planning is off: every partition is listed"),
    (True, False, "no earlier clean: every partition is listed"),
])
def test_planner_says_why_it_lists_every_partition(incremental: bool, clean: bool, note: str) -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    history_with_clean(lake, lambda lake: lake.clean(T[3], earliest_retained=T[2]) if clean else None)
    result = plan(lake, commits_retained=2, incremental=incremental)
    assert result.notes == (note,) and result.incremental is False


def test_planner_keep_latest_file_versions_has_no_window_and_no_incremental_note(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    history_with_clean(lake, lambda lake: lake.clean(T[3], earliest_retained=T[2]))
    result = plan(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    assert result.notes == () and result.incremental is False and result.partitions_considered == (Q, P)
    assert result.earliest_instant_to_retain is None and result.files_to_delete
    raw = result.to_record().to_raw()
    assert raw["earliestInstantToRetain"] is None and raw["extraMetadata"] == {}


def test_planner_header_names_the_table_its_last_commit_and_the_timeline_end() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    rewrite_history(lake, T[:4])
    lake.commit(T[5], {}, state=State.INFLIGHT)
    result = plan(lake, commits_retained=1)
    assert result.table == HudiTable.load(lake.storage, lake.base).uri
    assert result.last_completed_commit == T[3]
    assert result.timeline_end == T[5]  # after T3's completion, T3[:-3] + "999"


def test_planner_empty_table_has_no_last_commit_and_no_timeline_end() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    result = plan(lake, commits_retained=1)
    assert result.last_completed_commit == "" and result.timeline_end == "" and result.is_empty
    assert result.incremental is False and result.partitions_considered == ()


def test_planner_non_partitioned_table_records_no_savepoint_timestamps() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, partitioned=False)
    names = rewrite_history(lake, T[:4], partition="")
    lake.savepoint(T[0], {"": [names[0]]})
    result = plan(lake, commits_retained=1)
    assert result.savepointed_timestamps == () and result.to_record().to_raw()["extraMetadata"] == {}


def test_planner_notes_a_pending_clean() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    rewrite_history(lake, T[:4])
    lake.instant_file(Instant(T[4], "clean", State.REQUESTED), {
        "earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {}, "version": 2, "filePathsToBeDeletedPerPartition": {},
        "partitionsToBeDeleted": [], "extraMetadata": None})
    result = plan(lake, commits_retained=1)
    assert f"clean {T[4]} is still pending (requested): run it first" in result.notes


def test_planner_says_a_pending_write_holds_the_window() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "fg0", T[0])]}, state=State.INFLIGHT)
    rewrite_history(lake, T[1:6])
    result = plan(lake, commits_retained=2)
    assert result.earliest_instant_to_retain is None and result.is_empty
    assert result.notes[0] == "a pending write holds the retained window at the start of the timeline"


def test_planner_copy_on_write_table_with_cdc_deletes_log_files_with_their_slice() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6, extra_props={"hoodie.table.cdc.enabled": "true"})
    b0 = lake.base_file(P, "fg1", T[0])
    cdc = lake.log_file(P, "fg1", T[0])
    lake.commit(T[0], {P: [b0, cdc]})
    for t in T[1:4]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    got = decisions(plan(lake, commits_retained=1))
    assert got[cdc] == got[b0] and got[b0][0] is True


def test_planner_by_hours_notes_the_two_zones_cutoffs_and_uses_the_earlier(india_zone: None) -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "UTC"})
    rewrite_history(lake, [f"20261101{h:02d}0000000" for h in range(6)])
    now = datetime(2026, 11, 1, 4, 0, tzinfo=UTC)
    table = HudiTable.load(lake.storage, "/t")
    result = plan_clean(table, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1), now=now)
    assert result.notes == (
        "no earlier clean: every partition is listed",
        "the 1-hour cutoff is 20261101030000000 in the table's timeline zone (UTC) and 20261101083000000 in this "
        "process's zone, which stands in for the zone of Hudi's JVM (HoodieInstantTimeGenerator); the earlier, "
        "20261101030000000, is used",)
    other = plan_clean(table, CleanConfig(policy=CleanPolicy.KEEP_LATEST_COMMITS, commits_retained=1), now=now)
    assert other.notes == ("no earlier clean: every partition is listed",)


def test_planner_by_hours_in_one_zone_has_no_zone_note() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "LOCAL"})
    rewrite_history(lake, [f"20261101{h:02d}0000000" for h in range(6)])
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)
    result = plan_clean(HudiTable.load(lake.storage, "/t"), config, now=datetime.now(UTC))
    assert not any("cutoff" in n for n in result.notes), result.notes


def test_planner_by_hours_without_a_given_moment_reads_the_clock() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props={"hoodie.table.timeline.timezone": "UTC"})
    rewrite_history(lake, [f"20261101{h:02d}0000000" for h in range(4)])
    result = plan(lake, policy="KEEP_LATEST_BY_HOURS", hours_retained=1)  # every commit is days old by now
    assert result.earliest_instant_to_retain is None and result.decisions == ()


def test_planner_plan_is_invalidated_by_a_savepoint_or_a_rollback_made_after_it() -> None:
    """plan_invalidations, re-read under the table lock: a savepoint now holding a file the plan
    deletes, or a rollback requested after the plan was made, invalidates it."""
    from timeline.clean.planner import plan_invalidations

    lake = Lake(MemoryStorage(), "/t", version=8)
    names = rewrite_history(lake, T[:5])
    lake.instant_file(Instant(T[5], "rollback", State.REQUESTED), None)  # the last instant the plan saw
    made = plan(lake, commits_retained=2)
    assert made.timeline_end == T[5] and names[0] in {d.file_name for d in made.files_to_delete}
    assert plan_invalidations(HudiTable.load(lake.storage, lake.base), made) == []
    lake.savepoint(T[6], {P: [names[0]]})
    lake.instant_file(Instant(T[7], "rollback", State.REQUESTED), None)
    assert plan_invalidations(HudiTable.load(lake.storage, lake.base), made) == [
        f"{names[0]}: savepoint {T[6]}", f"rollback {T[7]} was requested after the plan was made"]


# The forked planning's line in `cleanline -v` (run in a fresh interpreter of this checkout: a
# test session has threads, and forking is refused beside them; the `cleanline` script would run
# the installed copy).
CLI = "import sys; from timeline.cli import main; sys.exit(main(sys.argv[1:]))"


def test_planner_forked_planning_tells_the_operator_how_many_folders_and_processes(tmp_path: Path) -> None:
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=6)
    for t in T[:3]:
        lake.commit(t, {p: [lake.base_file(p, "fg1", t)] for p in (P, Q)})
    told = subprocess.run([sys.executable, "-c", CLI, "-v", "clean", "plan", lake.base, "--json", "--retain-commits",
                           "1", "--allow-short-retention"], capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "CLEANLINE_LOCAL_PROCESSES": "3"})
    assert f"cleanline: file:{lake.base}: planned 2 folders in 2 processes\n" in told.stderr
    alone = plan_clean(HudiTable.open(lake.base), CleanConfig(commits_retained=1))
    assert json.loads(told.stdout)["filePathsToBeDeletedPerPartition"] == {
        p: [{"filePath": d.path, "isBootstrapBaseFile": False} for d in alone.files_to_delete if d.partition == p]
        for p in (Q, P)}


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "one-folder"])
def test_planner_several_processes_on_a_table_without_folders_to_deal_plan_it_in_this_one(
        tmp_path: Path, partitioned: bool) -> None:
    """A table on a local disk asked for several processes whose base has no folders to deal
    out (non-partitioned) or one is listed and planned here: the plan one process makes."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=6, partitioned=partitioned)
    where = P if partitioned else ""
    for t in T[:3]:
        lake.commit(t, {where: [lake.base_file(where, "fg1", t)]})
    table = HudiTable.open(lake.base)
    config = CleanConfig(commits_retained=1, incremental=False)
    alone = plan_clean(table, config)
    assert len(alone.files_to_delete) == 1 and alone.partitions_considered == (where,)
    assert plan_clean(table, config, processes=3) == alone


def test_planner_several_processes_plan_a_table_of_many_folders_as_one_does(tmp_path: Path) -> None:
    """A full plan of a local table asked of several processes: its folders dealt out in shares
    (share 0 planned here, the others in forked children, or all here as one share when this
    process may not fork), each share listed and planned, the shares' decisions unpacked in
    order: the plan one process makes, file by file, under both policies."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=6)
    partitions = [f"year={2020 + i % 5}/day={i:02d}" for i in range(15)]
    for n, t in enumerate(T[:3]):
        lake.commit(t, {p: [lake.base_file(p, f"fg{g}", t) for g in range(1 + n % 2)] for p in partitions})
    table = HudiTable.open(lake.base)
    for config in (CleanConfig(commits_retained=1, incremental=False),
                   CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1,
                               incremental=False)):
        alone = plan_clean(table, config)
        assert alone.files_to_delete and len(alone.partitions_considered) == 15
        assert plan_clean(table, config, processes=3) == alone
