"""Reading the metadata table (timeline/mdt/): the `files` partition merged from base HFiles and
log blocks as HoodieMetadataPayload merges them, valid instants only, validated against storage
(`cleanline mdt validate`) on every fixture that has a metadata table."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import hudi
import pytest

from tests.helpers import FIXTURES, unzip_table
from timeline import CleanConfig, CleanlineError, CleanPolicy, HudiTable
from timeline.cli import main
from timeline.mdt.reader import MetadataTable, MetadataTableMissing
from timeline.metadata.mdt_payload import (
    DELETED,
    FileInfo,
    MetadataRecord,
    combine,
    combine_files,
    files_record,
    partition_list_record,
)
from timeline.rollback import rollback_in_metadata_table

MDT_FIXTURES = sorted(p for p in FIXTURES.rglob("*.zip") if p.stem.endswith("_meta") or p.stem == "v8_trips_8i3u1d")


@pytest.fixture(params=MDT_FIXTURES, ids=[p.stem + "-" + p.parent.name for p in MDT_FIXTURES])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return unzip_table(request.param, tmp_path)


def test_fixture_metadata_tables_list_what_storage_holds(lake: Path) -> None:
    table = HudiTable.open(str(lake))
    result = table.inspect.validate_metadata_table()
    assert result.ok and result.files > 0, result.differences
    mdt = MetadataTable(table)
    assert set(mdt.files()) == set(mdt.partition_paths())
    # hudi-rs lists file slices through the metadata table on v8+: every base file it names is listed
    listed = {name for files in mdt.files().values() for name in files}
    slices = hudi.HudiTable(str(lake)).get_file_slices()
    assert slices and all(s.base_file_name in listed for s in slices if s.base_file_name)
    state = table.inspect.metadata_table()
    assert state.enabled and "files" in state.partitions and state.file_groups["files"] >= 1
    assert state.last_instant == mdt.mdt.timeline.completed().last().requested_time


def test_validate_names_differences_and_exits_1(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    partition = next(p for p in sorted(lake.iterdir()) if p.is_dir() and p.name != ".hoodie" and
                     any(p.glob("*.parquet"))) if any(lake.glob("*/*.parquet")) else lake
    victim = sorted(partition.glob("*.parquet"))[0]
    victim.unlink()
    (partition / "stray.parquet").write_bytes(b"x")
    assert main(["mdt", "validate", str(lake)]) == 1
    out = capsys.readouterr().out
    assert f"only in the metadata table: {victim.name}" in out
    # no completed write names it: not committed, no difference (timeline/committed.py)
    assert "only on storage: stray.parquet" not in out and "no completed write names it" in out
    assert "stray.parquet" in out


def test_uncommitted_files_are_no_difference(tmp_path: Path) -> None:
    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path)
    table = HudiTable.open(str(lake))
    timeline_folder = lake / ".hoodie" / "timeline"
    (timeline_folder / "20990101000000000.commit.requested").write_bytes(b"")
    (lake / "region=us" / "abc-0_0-1-1_20990101000000000.parquet").write_bytes(b"x" * 10)
    result = table.reload().inspect.validate_metadata_table()
    assert result.ok and result.uncommitted[0].uncommitted == ("abc-0_0-1-1_20990101000000000.parquet",)


def test_no_metadata_table_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lake = unzip_table(FIXTURES / "sample_table" / "cow" / "v9_txns_simple_nometa.zip", tmp_path)
    with pytest.raises(MetadataTableMissing):
        HudiTable.open(str(lake)).inspect.validate_metadata_table()
    assert main(["mdt", "validate", str(lake)]) == 2
    assert "not enabled" in capsys.readouterr().err


def test_mdt_drop_asks_and_needs_the_table_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["mdt", "drop", str(lake)]) == 2  # answered no: nothing changed
    assert main(["mdt", "drop", str(lake), "--confirm", "another_table"]) == 2
    assert (lake / ".hoodie" / "metadata").exists()
    name = HudiTable.open(str(lake)).config.name
    assert main(["mdt", "drop", str(lake), "--confirm", name]) == 0
    assert not (lake / ".hoodie" / "metadata").exists()
    assert not HudiTable.open(str(lake)).config.metadata_partitions
    shutil.rmtree(lake)


def test_files_records_merge_as_hoodie_metadata_payload() -> None:
    """HoodieTableMetadataUtil.combineFileSystemMetadata: a tombstone cancels an add and is
    dropped, an unknown tombstone is carried, sizes take the larger value, an add revives."""
    older = {"a": FileInfo(10), "b": FileInfo(5), "gone": DELETED}
    newer = {"a": DELETED, "b": FileInfo(3), "c": DELETED, "gone": FileInfo(7)}
    assert combine_files(older, newer) == {"b": FileInfo(5), "c": DELETED, "gone": FileInfo(7)}
    first = files_record("p", added={"x": 1})
    assert combine(first, None) is None                      # a delete block wins
    assert combine(None, first) == first                     # an add after a delete stands alone
    merged = combine(first, files_record("p", deleted=["x"]))
    assert merged is not None and merged.files == {}
    listing = partition_list_record(["p"], deleted=True)
    assert listing == MetadataRecord("__all_partitions__", 1, {"p": DELETED})
    with pytest.raises(ValueError):
        files_record("p", added={"empty": 0})


@pytest.mark.parametrize("crashed", [False, True], ids=["latest-commit", "failed-write"])
def test_rollback_rolls_the_metadata_table_back_too(lake: Path, crashed: bool) -> None:
    """v8/v9: the MDT deltacommit of the rolled-back write is itself rolled back (an MDT rollback
    at the data-table rollback's time, before the write's instant files go); `mdt validate` is
    clean and hudi-rs reads what it read before the write. `crashed`: the writer died after
    completing the MDT deltacommit and before the data-table commit (a failed write)."""
    table = HudiTable.open(str(lake))
    writes = table.timeline.writes().completed()
    target, previous = writes.instants[-1], writes.instants[-2]
    expected = rows_of(lake, previous.requested_time)
    if crashed:
        (lake / ".hoodie" / "timeline" / target.file_name(2)).unlink()
        table.reload()
    mdt_times = {i.requested_time for i in MetadataTable(table).mdt.timeline}
    assert target.requested_time in mdt_times
    done = table.maintenance().rollback(target.requested_time)
    mdt = MetadataTable(table.reload())
    assert target.requested_time not in {i.requested_time for i in mdt.mdt.timeline}
    (mdt_rollback,) = [i for i in mdt.mdt.timeline.rollbacks().completed()]
    assert mdt_rollback.requested_time == done.requested_time
    assert not [p for p in (lake / ".hoodie" / "metadata").rglob(f"*{target.requested_time}*")
                if ".hoodie" not in p.relative_to(lake / ".hoodie" / "metadata").parts]
    assert table.inspect.validate_metadata_table().ok
    assert rows_of(lake) == expected


def rows_of(path: Path, as_of: str | None = None) -> list[tuple]:
    from tests.helpers import rows

    return rows(path, as_of)


def test_restore_deletes_the_metadata_table_where_hudi_does_and_restores_it_otherwise(tmp_path: Path) -> None:
    """BaseHoodieWriteClient.restoreToSavepoint: a savepoint not after the MDT's oldest
    compaction deletes the MDT first (the preview says so); a later one restores the MDT with
    the table: the partitions Hudi drops on restore go, the MDT's later instants are rolled back,
    a deltacommit syncs its listing with storage; `mdt validate` is clean and hudi-rs (listing
    through the MDT) reads the savepoint's rows."""
    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path / "late")
    table = HudiTable.open(str(lake))
    compaction = next(i for i in MetadataTable(table).mdt.timeline.completed() if i.action == "commit")
    writes = [i.requested_time for i in table.timeline.commits().completed() if i.action == "commit"]
    late = next(t for t in writes if t > compaction.requested_time and t != writes[-1])
    expected = rows_of(lake, late)
    maintenance = table.maintenance()
    maintenance.create_savepoint(late)
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    cleaned = maintenance.run_cleans() if maintenance.schedule_clean(maintenance.plan_clean(
        config, enforce_retention=False), config, force=True) else []
    assert cleaned and cleaned[0].deleted > 0  # files the MDT listed at the savepoint are gone now
    preview = table.inspect.restore_preview(late)
    assert "restored with the table" in preview.metadata_table
    assert "secondary_index_merchant_idx" in preview.metadata_table
    rolled_back = {i.requested_time for i in preview.instants}
    maintenance.restore(late)
    table.reload()
    assert table.config.metadata_partitions == ("column_stats", "files", "record_index")
    assert not (lake / ".hoodie" / "metadata" / "secondary_index_merchant_idx").exists()
    assert table.inspect.validate_metadata_table().ok
    mdt = MetadataTable(table)
    assert mdt.mdt.timeline.restores().completed()
    assert rolled_back and not rolled_back & {i.requested_time for i in mdt.mdt.timeline}
    assert rows_of(lake) == expected
    stats = {r.column_stats[0] for r in mdt.records("column_stats").values() if r.column_stats}
    assert stats <= {n for files in mdt.files().values() for n in files}

    early_lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path / "early")
    table = HudiTable.open(str(early_lake))
    early = next(t for t in writes if t < compaction.requested_time)
    table.maintenance().create_savepoint(early)
    preview = table.inspect.restore_preview(early)
    assert "deleted first, as Apache Hudi does here" in preview.metadata_table
    expected = rows_of(early_lake, early)
    table.maintenance().restore(early)
    assert not (early_lake / ".hoodie" / "metadata").exists() and not table.reload().config.metadata_partitions
    assert rows_of(early_lake) == expected


def test_savepoint_and_restore_on_every_fixture_with_a_metadata_table(lake: Path) -> None:
    """On every fixture with an MDT: savepoint the third-latest write, restore to it. The MDT is
    restored with the table (then `mdt validate` is clean and every MDT instant decodes) or,
    where Hudi deletes it, deleted as the preview said; hudi-rs reads the savepoint's rows."""
    table = HudiTable.open(str(lake))
    writes = [i for i in table.timeline.writes().completed() if i.action in ("commit", "deltacommit")]
    point = writes[-3].requested_time
    expected = rows_of(lake, point)
    table.maintenance().create_savepoint(point)
    preview = table.inspect.restore_preview(point)
    restored = "restored with the table" in preview.metadata_table
    assert restored or "deleted first, as Apache Hudi does here" in preview.metadata_table
    table.maintenance().restore(point)
    table.reload()
    if restored:
        assert table.inspect.validate_metadata_table().ok
        mdt = MetadataTable(table)
        for instant in mdt.mdt.timeline.completed():
            mdt.mdt.read_instant(instant)  # decodes
        assert not {i.requested_time for i in preview.instants} & {i.requested_time for i in mdt.mdt.timeline}
    else:
        assert not (lake / ".hoodie" / "metadata").exists()
    assert rows_of(lake) == expected


def test_rollback_of_a_write_the_mdt_compacted_is_refused_before_any_delete(tmp_path: Path) -> None:
    """validateRollback: once an MDT compaction folded the write's deltacommit into base files,
    the rollback is refused before anything is deleted (Hudi fails the same way)."""
    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path)
    table = HudiTable.open(str(lake))
    target = table.timeline.writes().completed().last()
    assert target is not None
    mdt_folder = lake / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    done = next(i for i in MetadataTable(table).mdt.timeline.completed() if i.requested_time == target.requested_time)
    later = f"{int(done.completion_time) + 1000:017d}"  # type: ignore[arg-type]
    plan = (mdt_folder / "20260307162449278.compaction.requested").read_bytes()
    (mdt_folder / f"{later}.compaction.requested").write_bytes(plan)
    (mdt_folder / f"{later}.compaction.inflight").write_bytes(b"")
    (mdt_folder / f"{later}_{int(later) + 5:017d}.commit").write_bytes(
        next(mdt_folder.glob("20260307162449278_*.commit")).read_bytes())
    files = sorted(p for p in lake.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    with pytest.raises(CleanlineError, match="compacted"):
        table.reload().maintenance().rollback(target.requested_time)
    assert sorted(p for p in lake.rglob("*") if p.is_file() and ".hoodie" not in p.parts) == files
    assert table.reload().timeline.writes().completed().last() == target
    # the metadata table's own part checks it too, where no data-table rollback checked first
    # (a pending rollback finished, a restore): nothing in the metadata table changes
    mdt_files = sorted(p for p in (lake / ".hoodie" / "metadata").rglob("*") if p.is_file())
    with pytest.raises(CleanlineError, match="compacted"):
        rollback_in_metadata_table(MetadataTable(table), target.requested_time, f"{int(later) + 10:017d}")
    assert sorted(p for p in (lake / ".hoodie" / "metadata").rglob("*") if p.is_file()) == mdt_files


def test_pending_mdt_compaction_is_read_through_the_slice_before_it(tmp_path: Path) -> None:
    """getPartitionLatestMergedFileSlices: while an MDT compaction is pending, its new slice has no
    base file yet; readers merge the slice before it."""
    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path)
    before = MetadataTable(HudiTable.open(str(lake))).files()
    mdt_folder = lake / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    plan = (mdt_folder / "20260307162449278.compaction.requested").read_bytes()
    (mdt_folder / "20260307162459000.compaction.requested").write_bytes(plan)
    table = HudiTable.open(str(lake))
    assert MetadataTable(table).files() == before
    assert table.inspect.validate_metadata_table().ok


def test_restore_refused_for_a_running_write_leaves_the_metadata_table(tmp_path: Path) -> None:
    """The restore's own refusals come before the metadata table is touched."""
    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_nonpart_meta"), tmp_path)
    table = HudiTable.open(str(lake))
    writes = [i for i in table.timeline.writes().completed() if i.action in ("commit", "deltacommit")]
    point = writes[-3].requested_time
    table.maintenance().create_savepoint(point)
    assert "deleted first" in table.inspect.restore_preview(point).metadata_table
    running = "20990101000000000"
    (lake / ".hoodie" / "timeline" / f"{running}.commit.requested").write_bytes(b"")
    heartbeat = lake / ".hoodie" / ".heartbeat"
    heartbeat.mkdir(exist_ok=True)
    (heartbeat / running).write_bytes(b"")
    with pytest.raises(CleanlineError):
        table.reload().maintenance().restore(point)
    assert (lake / ".hoodie" / "metadata").exists() and table.reload().config.metadata_partitions


def test_pending_mdt_rollback_refuses_partition_names_outside_the_metadata_table(tmp_path: Path) -> None:
    """A metadata partition named in hoodie.properties that resolves outside `.hoodie/metadata`
    is refused before a pending MDT deltacommit's files are removed; nothing outside is deleted."""
    from timeline.clean.executor import run_pending_cleans, schedule_clean
    from timeline.clean.planner import plan_clean
    from timeline.config import update_config
    from timeline.storage import OutsideTableError

    lake = unzip_table(next(p for p in MDT_FIXTURES if p.stem == "v9_txns_simple_meta"), tmp_path / "t")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    table = HudiTable.open(str(lake))
    config = CleanConfig(commits_retained=1)
    clean = schedule_clean(table, plan_clean(table, config), config)
    assert clean is not None
    victim = outside / f".files-0000-0_{clean.requested_time}.log.1_0-0-0"
    victim.write_bytes(b"keep me")
    timeline_folder = lake / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    (timeline_folder / f"{clean.requested_time}.deltacommit.requested").write_bytes(b"")  # a crashed run's
    partitions = ",".join((*table.config.metadata_partitions, "../../../elsewhere"))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": partitions})
    with pytest.raises(OutsideTableError):
        run_pending_cleans(HudiTable.open(str(lake)))
    assert victim.read_bytes() == b"keep me"


def test_clean_updates_tombstone_every_planned_file_even_one_whose_delete_failed() -> None:
    """HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords for a clean: the `files`
    record of each cleaned partition marks every planned file (`deletePathPatterns`) deleted,
    whether or not its delete succeeded; a deleted partition's record goes whole and the
    partition gets a tombstone in `__all_partitions__`."""
    from timeline.mdt.writer import FILES, clean_updates
    from timeline.metadata.mdt_payload import DELETED, partition_list_record
    from timeline.metadata.records import CleanMetadata, CleanPartitionMetadata

    metadata = CleanMetadata({}, partitions={
        "p=1": CleanPartitionMetadata("p=1", delete_path_patterns=("a.parquet", "b.parquet"),
                                      success_delete_files=("a.parquet",), failed_delete_files=("b.parquet",)),
        "p=2": CleanPartitionMetadata("p=2", is_partition_deleted=True),
    })
    [update] = clean_updates(metadata)
    assert update.partition == FILES and update.deletes == ("p=2",)
    record = next(r for r in update.records if r.key == "p=1")
    assert record.files == {"a.parquet": DELETED, "b.parquet": DELETED}
    assert partition_list_record(["p=2"], deleted=True) in update.records


def test_commit_updates_list_every_written_file_at_its_largest_size() -> None:
    """HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords for a HoodieCommitMetadata:
    the partition list names every partition with stats ("." for the table's root); each
    partition's record adds every written file at the largest size its stats report; a stat
    without a path adds nothing; a DELETE_PARTITION replacecommit tombstones its partitions."""
    from timeline.mdt.writer import FILES, commit_updates
    from timeline.metadata.records import CommitMetadata

    def stat(partition: str, path: str | None, size: int) -> dict[str, object]:
        return {"partitionPath": partition, "fileId": "f", "path": path, "fileSizeInBytes": size}

    metadata = CommitMetadata.from_raw({"partitionToWriteStats": {
        "p=1": [stat("p=1", "p=1/.f_1.log.1_0-1-0", 10), stat("p=1", "p=1/.f_1.log.1_0-1-0", 30),
                stat("p=1", "p=1/g_0-1-0_1.parquet", 7)],
        "p=2": [stat("p=2", None, 0)],
        "": [stat("", "h_0-1-0_1.parquet", 5)]}, "operationType": "UPSERT"})
    [update] = commit_updates(metadata)
    assert update.partition == FILES and update.deletes == ()
    by_key = {r.key: r for r in update.records}
    assert by_key["p=1"].files == {".f_1.log.1_0-1-0": FileInfo(30), "g_0-1-0_1.parquet": FileInfo(7)}
    assert by_key["p=2"].files == {} and by_key["."].files == {"h_0-1-0_1.parquet": FileInfo(5)}
    assert partition_list_record(["p=1", "p=2", "."], deleted=False) in update.records

    written = {"p=4": [stat("p=4", "p=4/i_0-1-0_2.parquet", 1)]}
    dropped = CommitMetadata.from_raw({"partitionToWriteStats": written, "operationType": "DELETE_PARTITION",
                                       "partitionToReplaceFileIds": {"p=3": ["f"]}})
    [update] = commit_updates(dropped)
    [listed] = [r for r in update.records if r.key == partition_list_record([], deleted=False).key]
    assert listed.files == {"p=4": FileInfo(0), "p=3": DELETED}, "added and deleted partitions in one record"
