"""File-system view rules on hand-made timelines (hudi-format.md §6), v6 and v8 layouts."""

from __future__ import annotations

import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.instant import Instant, State
from timeline.storage import MemoryStorage

T1, T2, T3, T4, T5 = (f"2026110100000{i}000" for i in range(1, 6))
P = "city=sf"


def open_table(lake: Lake) -> HudiTable:
    return HudiTable.load(lake.storage, lake.base)


def slices(table: HudiTable, as_of: str | None = None) -> list[tuple[str, str | None, tuple[str, ...]]]:
    return sorted((s.base_instant_time, s.base_file.name if s.base_file else None,
                   tuple(log.name for log in s.log_files)) for s in table.file_system_view(as_of=as_of).latest_slices())


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def version(request: pytest.FixtureRequest) -> int:
    return request.param


def test_fsview_uncommitted_base_files_are_invisible(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]})
    b2 = lake.base_file(P, "fg1", T2)
    lake.commit(T2, {P: [b2]}, state=State.INFLIGHT)
    b3 = lake.base_file(P, "fg2", T3)
    lake.commit(T3, {P: [b3]}, state=State.REQUESTED)
    assert slices(open_table(lake)) == [(T1, b1, ())]


def test_fsview_newest_committed_slice_is_latest_and_all_slices_are_kept(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    names = [lake.base_file(P, "fg1", t) for t in (T1, T2, T3)]
    for t, name in zip((T1, T2, T3), names):
        lake.commit(t, {P: [name]})
    table = open_table(lake)
    assert slices(table) == [(T3, names[2], ())]
    (group,) = table.file_system_view().file_groups(P)
    assert [s.base_instant_time for s in group.slices] == [T3, T2, T1]


def test_fsview_as_of_shows_the_slice_of_that_time(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    b1, b2 = lake.base_file(P, "fg1", T1), lake.base_file(P, "fg1", T3)
    lake.commit(T1, {P: [b1]})
    lake.commit(T3, {P: [b2]})
    table = open_table(lake)
    assert slices(table, as_of=T2) == [(T1, b1, ())]
    assert slices(table, as_of=T3) == [(T3, b2, ())]
    assert slices(table, as_of="20250101000000000") == []


def test_fsview_files_older_than_the_active_timeline_count_as_committed(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    archived = lake.base_file(P, "fg0", "20200101000000000")  # its commit was archived
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]})
    assert (("20200101000000000", archived, ()) in slices(open_table(lake)))


def test_fsview_replaced_file_groups_disappear_from_or_after_the_replacecommit(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    old = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [old]})
    new = lake.base_file(P, "fg2", T2)
    lake.commit(T2, {P: [new]}, replaced={P: ["fg1"]}, operation="INSERT_OVERWRITE")
    table = open_table(lake)
    assert slices(table) == [(T2, new, ())]
    assert slices(table, as_of=T1) == [(T1, old, ())]
    groups = {g.file_id: g.replaced_by for g in table.file_system_view().all_file_groups(P)}
    assert groups == {"fg1": T2, "fg2": None}


def test_fsview_v6_log_files_belong_to_their_base_instant() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]})
    l1 = lake.log_file(P, "fg1", T1, version=1)
    l2 = lake.log_file(P, "fg1", T1, version=2)
    lake.commit(T2, {P: [l1, l2]})
    assert slices(open_table(lake)) == [(T1, b1, (l1, l2))]


def test_fsview_v8_log_joins_slice_by_completion_time() -> None:
    """A log whose delta commit started before a compaction but finished after it belongs to
    the compaction's new slice (HoodieFileGroup.addLogFile)."""
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]}, completion=T1[:-3] + "500")
    early = lake.log_file(P, "fg1", T2)            # delta commit T2 completes before T3
    lake.commit(T2, {P: [early]}, completion=T2[:-3] + "500")
    late = lake.log_file(P, "fg1", T3)             # delta commit T3 completes after compaction T4
    compacted = lake.base_file(P, "fg1", T4)
    lake.schedule_compaction(T4, [(P, "fg1", T1)])
    lake.complete_compaction(T4, {P: [compacted]}, completion=T4[:-3] + "500")
    lake.commit(T3, {P: [late]}, completion=T5)
    table = open_table(lake)
    assert slices(table) == [(T4, compacted, (late,))]
    (group,) = table.file_system_view().file_groups(P)
    assert [(s.base_instant_time, [log.name for log in s.log_files]) for s in group.slices] == [
        (T4, [late]), (T1, [early])]


def test_fsview_v8_logs_of_pending_delta_commits_are_hidden() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]})
    pending = lake.log_file(P, "fg1", T2)
    lake.commit(T2, {P: [pending]}, state=State.INFLIGHT)
    assert slices(open_table(lake)) == [(T1, b1, ())]


def test_fsview_pending_compaction_opens_a_new_slice_and_hides_its_base_file(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]})
    log_before = lake.log_file(P, "fg1", T1 if version == 6 else T2)
    lake.commit(T2, {P: [log_before]})
    lake.schedule_compaction(T3, [(P, "fg1", T1)], state=State.INFLIGHT)
    lake.base_file(P, "fg1", T3)  # being written by the running compaction
    table = open_table(lake)
    view = table.file_system_view()
    assert slices(table) == [(T3, None, ())]
    (group,) = view.file_groups(P)
    assert group.pending_compaction == T3
    assert [s.base_instant_time for s in group.slices] == [T3, T1]
    assert group.slices[1].log_files[0].name == log_before


def test_fsview_non_partitioned_table_has_the_empty_partition(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version, partitioned=False)
    b1 = lake.base_file("", "fg1", T1)
    lake.commit(T1, {"": [b1]})
    view = open_table(lake).file_system_view()
    assert view.partitions == [""]
    assert [s.partition for s in view.latest_slices()] == [""]


def test_fsview_nested_partitions_and_ignored_files(version: int) -> None:
    lake = Lake(MemoryStorage(), "/t", version=version)
    b1 = lake.base_file("2026/11/01", "fg1", T1)
    lake.data_file("2026/11/01", "README.txt")
    lake.data_file("2026/11/01", ".fg1_x.log.crc")
    lake.storage.write("/t/not_a_partition/junk.parquet", b"x")  # no partition metadata
    lake.commit(T1, {"2026/11/01": [b1]})
    view = open_table(lake).file_system_view()
    assert view.partitions == ["2026/11/01"]
    assert [s.base_file.name for s in view.latest_slices() if s.base_file] == [b1]


def test_fsview_pending_log_compaction_keeps_the_slice_and_hides_its_log() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    b1 = lake.base_file(P, "fg1", T1)
    lake.commit(T1, {P: [b1]})
    l2 = lake.log_file(P, "fg1", T2)
    lake.commit(T2, {P: [l2]})
    plan = {"operations": [{"baseInstantTime": T1, "fileId": "fg1", "partitionPath": P,
                            "deltaFilePaths": [l2], "dataFilePath": b1}], "version": 2}
    lake.instant_file(Instant(T3, "logcompaction", State.REQUESTED), plan)
    lake.log_file(P, "fg1", T3)  # being written by the running log compaction
    view = open_table(lake).file_system_view()
    (group,) = view.file_groups(P)
    assert (group.pending_compaction, group.pending_log_compaction) == (None, T3)
    assert slices(open_table(lake)) == [(T1, b1, (l2,))]


def test_fsview_partition_rule_is_the_same_for_the_walk_and_the_partition_listing() -> None:
    """HoodiePartitionMetadata.hasPartitionMetadata: exact names (text, .parquet, .orc); a file
    that merely starts with the name marks nothing. Both listings follow the one rule."""
    from timeline.fsview import list_partitions, partition_paths

    storage = MemoryStorage()
    storage.write("/t/.hoodie/hoodie.properties", b"")
    storage.write("/t/a/.hoodie_partition_metadata", b"")
    storage.write("/t/b/.hoodie_partition_metadata.parquet", b"")
    storage.write("/t/c/.hoodie_partition_metadata_copy", b"")
    storage.write("/t/c/d/.hoodie_partition_metadata.orc", b"")
    assert sorted(list_partitions(storage, "/t").partitions) == partition_paths(storage, "/t") == ["a", "b", "c/d"]


def test_fsview_v8_a_log_older_than_the_first_write_counts_as_archived_though_a_clean_is_older() -> None:
    """CompletionTimeQueryViewV2.isArchived: a log instant before the first instant of the
    *write* timeline (`getWriteTimeline().getFirstNonSavepointCommit()`) counts as completed,
    even where an older clean is still on the active timeline (archival keeps cleans by their
    own rule): the log stays in the latest slice readers see."""
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    t0 = T1[:-4] + "0000"
    old = lake.base_file(P, "fg1", t0)       # its commit archived long ago
    log = lake.log_file(P, "fg1", T2)        # its delta commit archived, not on the active timeline
    lake.clean(T1, t0)                       # a clean older than every active write
    lake.commit(T3, {P: [lake.base_file(P, "fg2", T3)]})
    assert (t0, old, (log,)) in slices(open_table(lake))
