"""The metadata table kept as Hudi 0.14/0.15 keep it, on table version 6 (timeline/mdt/): on a
hand-made MDT of v6 fixtures (`tests/mdt_v6.py`; no v6 fixture has one) a clean, a rollback (of
the latest write and of a failed one), a savepoint + restore and a killed clean leave an MDT that
`mdt validate` finds exact, written by 0.x's rules: log files continue the slice
(`HoodieAppendHandle`), HBase's HFile flavour, a rollback as a deltacommit at R listing the log
files it leaves plus the MDT's own rollback at R + "006" with command blocks, a restore's sync at
a new time + "003", 0.14/0.15's valid-instant filter. hudi-rs (which lists storage on v6) reads
the same rows as the same action on the same table without an MDT."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, hudi_rs_records, rows, unzip_table
from tests.mdt.helpers import FILE_ID, INIT, KILLER, add_v6_metadata_table
from timeline import CleanConfig, CleanPolicy, HudiTable
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.hfile import HEADER, read_hfile, read_trailer
from timeline.logformat import BlockType, CommandBlockType, HeaderKey, read_blocks
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import MdtUpdate, clean_updates, write_update
from timeline.metadata.mdt_payload import DELETED, PARTITION_LIST_KEY, files_record
from timeline.metadata.records import CleanMetadata, CleanPartitionMetadata, CommitMetadata, RollbackMetadata

MOR = "quickstart_trips_table/mor/avro/v6_trips_8i1u"        # INSERT, UPDATE (log files)
COW = "sample_table/cow/v6_simplekeygen_nonhivestyle"       # INSERT, INSERT
REPLACED = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"  # ... INSERT_OVERWRITE(table)


def twins(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """The fixture with a hand-made MDT, and the same fixture without one."""
    with_mdt = unzip_table(FIXTURES / f"{name}.zip", tmp_path / "mdt")
    add_v6_metadata_table(with_mdt)
    return with_mdt, unzip_table(FIXTURES / f"{name}.zip", tmp_path / "plain")


def mdt_logs(lake: Path) -> list[str]:
    return sorted(p.name for p in (lake / ".hoodie" / "metadata" / "files").glob(".files-*.log.*"))


def blocks_of(lake: Path, name: str) -> list:
    path = lake / ".hoodie" / "metadata" / "files" / name
    return read_blocks(path.read_bytes(), path=str(path))


def test_log_files_continue_the_slice_with_hbase_hfiles(tmp_path: Path) -> None:
    """0.14/0.15: each deltacommit rolls over to the next version of the slice's log file (named
    after the slice's base instant), its HFILE_DATA block an HFile as HBase writes it (CRC32C,
    version 3.3), read by hudi-rs as by our reader."""
    lake = unzip_table(FIXTURES / f"{MOR}.zip", tmp_path / "t")
    table = add_v6_metadata_table(lake)
    writes = [i.requested_time for i in table.timeline.writes().completed()]
    logs = mdt_logs(lake)
    assert logs == [f".{FILE_ID}_{INIT}.log.{v}_{'0-0-0' if v == 1 else '1-0-1'}" for v in range(1, len(writes) + 2)]
    for name, write in zip(logs[1:], writes, strict=True):
        (block,) = blocks_of(lake, name)
        assert block.block_type is BlockType.HFILE_DATA and block.header[HeaderKey.INSTANT_TIME] == write
        assert HEADER.unpack_from(block.content, 0)[4] == 2  # CRC32C
        assert read_trailer(block.content, path=name).minor_version == 3
        mdt = lake / ".hoodie" / "metadata"
        theirs = hudi_rs_records(mdt, mdt / "files", name, block.content)
        assert [r["key"] for r in theirs] == [c[0].decode() for c in read_hfile(block.content, path=name).cells]
    assert table.inspect.validate_metadata_table().ok


def test_clean_writes_the_v6_records_and_matches_the_table_without_mdt(tmp_path: Path) -> None:
    lake, plain = twins(tmp_path, REPLACED)
    before = mdt_logs(lake)
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    results = {}
    for path in (lake, plain):
        table = HudiTable.open(str(path))
        plan = table.maintenance().plan_clean(config, enforce_retention=False)
        assert schedule_clean(table, plan, config, force=True)
        (results[path],) = run_pending_cleans(table)
    assert results[lake].deleted == results[plain].deleted > 0
    table = HudiTable.open(str(lake))
    clean = table.timeline.cleans().completed().last()
    mdt = MetadataTable(table)
    assert clean is not None and mdt.mdt.timeline.completed().find(clean.requested_time) is not None
    (new_log,) = [n for n in mdt_logs(lake) if n not in before]
    assert new_log == f".{FILE_ID}_{INIT}.log.{len(before) + 1}_1-0-1"
    (block,) = blocks_of(lake, new_log)
    assert block.header[HeaderKey.INSTANT_TIME] == clean.requested_time
    cleaned = table.read(clean, CleanMetadata)
    records = {r.key: r for r in MetadataTable(table).records("files").values()}
    for partition, entry in cleaned.partitions.items():  # a record per partition, its files gone
        assert not set(entry.delete_path_patterns) & set(records[partition or "."].present())
    assert table.inspect.validate_metadata_table().ok
    assert rows(lake) == rows(plain)


def test_v6_clean_records_follow_0x_conversion() -> None:
    """0.14/0.15 convertMetadataToFilesPartitionRecords: a record for every partition of the
    clean (even with nothing deleted), a deleted partition's files as tombstones and the
    partition as a tombstone of the partition list (no whole-record delete)."""
    metadata = CleanMetadata(partitions={
        "a": CleanPartitionMetadata("a", delete_path_patterns=("f1.parquet", ".f1_1.log.1_0-0-0")),
        "b": CleanPartitionMetadata("b"),
        "c": CleanPartitionMetadata("c", delete_path_patterns=("g.parquet",), is_partition_deleted=True)})

    class V6:  # what clean_updates asks of a metadata table
        class table:  # noqa: N801
            class config:  # noqa: N801
                version = 6
                metadata_partitions = ("files",)
                metadata_partitions_inflight = ()

    (update,) = clean_updates(metadata, V6(), "20250101000000000")  # type: ignore[arg-type]
    assert update.deletes == ()
    by_key = {r.key: r for r in update.records}
    assert set(by_key) == {"a", "b", "c", PARTITION_LIST_KEY}
    assert by_key["a"].files == {"f1.parquet": DELETED, ".f1_1.log.1_0-0-0": DELETED}
    assert by_key["b"].files == {} and by_key["c"].files == {"g.parquet": DELETED}
    assert by_key[PARTITION_LIST_KEY].files == {"c": DELETED}


@pytest.mark.parametrize("name", [MOR, COW], ids=["mor", "cow"])
@pytest.mark.parametrize("crashed", [False, True], ids=["latest-commit", "failed-write"])
def test_rollback_writes_a_deltacommit_and_rolls_the_mdt_back_with_command_blocks(
        tmp_path: Path, name: str, crashed: bool) -> None:
    lake, plain = twins(tmp_path, name)
    table = HudiTable.open(str(lake))
    target, previous = table.timeline.writes().completed().instants[-2:][::-1]
    expected = rows(lake, previous.requested_time)
    if crashed:  # the writer died after its MDT deltacommit, before its own completed instant: its
        written = table.read(target, CommitMetadata).write_stats  # markers name what it wrote
        for path in (lake, plain):
            (path / ".hoodie" / target.file_name(1)).unlink()
            for partition, stats in written.items():
                for stat in stats:
                    io_type = "APPEND" if ".log." in stat.file_name else "CREATE"
                    marker = path / ".hoodie" / ".temp" / target.requested_time / partition / (
                        f"{stat.file_name}.marker.{io_type}")
                    marker.parent.mkdir(parents=True, exist_ok=True)
                    marker.touch()
        table.reload()
    done = table.maintenance().rollback(target.requested_time)
    HudiTable.open(str(plain)).maintenance().rollback(target.requested_time)
    r = done.requested_time
    mdt = MetadataTable(table.reload())
    timeline = mdt.mdt.timeline
    assert timeline.completed().find(r) is not None and timeline.find(r).action == "deltacommit"
    (mdt_rollback,) = timeline.rollbacks().completed().instants
    assert mdt_rollback.requested_time == r + "006"
    assert mdt.mdt.read(mdt_rollback, RollbackMetadata).commits_rollback == (target.requested_time,)
    commands = [b for n in mdt_logs(lake) for b in blocks_of(lake, n) if b.block_type is BlockType.COMMAND]
    assert [(b.header[HeaderKey.INSTANT_TIME], b.header[HeaderKey.TARGET_INSTANT_TIME],
             b.header[HeaderKey.COMMAND_BLOCK_TYPE]) for b in commands] == [
        (r + "006", target.requested_time, str(int(CommandBlockType.ROLLBACK_PREVIOUS_BLOCK)))]
    rollback = table.read(done, RollbackMetadata)
    left = {n.rpartition("/")[2] for m in rollback.partitions.values()
            for n in [*m.rollback_log_files, *m.log_files_from_failed_commit]}
    assert bool(left) == (name == MOR)  # merge-on-read: the rollback leaves log files, listed at R
    listed = {n for files in mdt.files().values() for n in files}
    assert left <= listed
    assert table.inspect.validate_metadata_table().ok
    assert rows(lake) == expected == rows(plain)


@pytest.mark.parametrize("name", [MOR, COW], ids=["mor", "cow"])
def test_savepoint_and_restore_restore_the_mdt_and_sync_at_a_003_time(tmp_path: Path, name: str) -> None:
    lake, plain = twins(tmp_path, name)
    table = HudiTable.open(str(lake))
    first = table.timeline.writes().completed().instants[0].requested_time
    expected = rows(lake, first)
    for path in (lake, plain):
        HudiTable.open(str(path)).maintenance().create_savepoint(first)
    preview = table.inspect.restore_preview(first)
    assert "restored with the table" in preview.metadata_table and "deleted (Hudi" not in preview.metadata_table
    table.maintenance().restore(first)
    HudiTable.open(str(plain)).maintenance().restore(first)
    mdt = MetadataTable(table.reload())
    assert mdt.mdt.timeline.restores().completed()
    syncs = [i for i in mdt.mdt.timeline.completed() if i.action == "deltacommit" and len(i.requested_time) == 20]
    assert [i.requested_time[-3:] for i in syncs] == ["003"]
    assert syncs[0].requested_time[:17] > table.timeline.restores().completed().last().requested_time
    for instant in mdt.mdt.timeline.completed():
        mdt.mdt.read_instant(instant)  # decodes
    assert table.inspect.validate_metadata_table().ok
    assert rows(lake) == expected == rows(plain)


@pytest.mark.parametrize("point", ["before-clean-completes", "mid-mdt"])
def test_killed_clean_with_a_v6_metadata_table_finishes_on_rerun(tmp_path: Path, point: str) -> None:
    killed, straight = twins(tmp_path, REPLACED)
    shutil.rmtree(straight)
    shutil.copytree(killed, straight)
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    cleans = {}
    for path in (killed, straight):
        table = HudiTable.open(str(path))
        cleans[path] = schedule_clean(table, table.maintenance().plan_clean(config, enforce_retention=False), config,
                                      force=True)
    clean = cleans[killed]
    assert clean is not None
    run_pending_cleans(HudiTable.open(str(straight)))
    before = mdt_logs(killed)
    run = subprocess.run([sys.executable, "-c", KILLER, str(killed), point], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == -9, run.stderr
    table = HudiTable.open(str(killed))
    assert not table.timeline.cleans().completed()
    states = {i.state.name for i in MetadataTable(table).mdt.timeline if i.requested_time == clean.requested_time}
    assert states == ({"COMPLETED"} if point == "before-clean-completes" else {"INFLIGHT"})
    assert table.inspect.validate_metadata_table().uncommitted == ()
    (result,) = run_pending_cleans(table)
    assert result.failed == 0 and table.reload().inspect.validate_metadata_table().ok
    assert len(mdt_logs(killed)) == len(before) + 1  # a crashed run's log file removed, one written again
    assert mdt_logs(killed) == mdt_logs(straight)
    assert rows(killed) == rows(straight)


def test_valid_instants_follow_0x_rules(tmp_path: Path) -> None:
    """0.14/0.15 getValidInstantTimestamps: an MDT deltacommit counts when the data table
    completed the same instant or its time carries an MDT operation suffix ("003" a restore's
    sync); one at a time the data table never completed is ignored (Hudi 1.x would count it)."""
    lake = unzip_table(FIXTURES / f"{COW}.zip", tmp_path / "t")
    table = add_v6_metadata_table(lake)
    mdt = MetadataTable(table)
    partition = sorted(mdt.files())[0]
    for time, name in (("20300101000000000", "ghost.parquet"), ("20300101000000000003", "synced.parquet")):
        write_update(mdt, time, [MdtUpdate("files", (files_record(partition or ".", added={name: 10}),))])
    listed = MetadataTable(table.reload()).files()[partition]
    assert "synced.parquet" in listed and "ghost.parquet" not in listed


def test_restore_rolls_the_mdt_back_even_when_its_files_share_one_mtime(tmp_path: Path) -> None:
    """On table version 6 completion times are file mtimes: a copied table has them all equal.
    Which MDT instants come after the savepoint is decided by requested time, as Hudi 0.x does."""
    lake, _ = twins(tmp_path, MOR)
    table = HudiTable.open(str(lake))
    first = table.timeline.writes().completed().instants[0].requested_time
    table.maintenance().create_savepoint(first)
    for state_file in (lake / ".hoodie" / "metadata" / ".hoodie").iterdir():
        if state_file.is_file():
            os.utime(state_file, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    later = [i.requested_time for i in MetadataTable(table.reload()).mdt.timeline.completed()
             if i.action == "deltacommit" and i.requested_time > first and len(i.requested_time) == 17]
    assert later
    table.maintenance().restore(first)
    mdt = MetadataTable(table.reload())
    assert mdt.mdt.timeline.restores().completed()
    assert not set(later) & {i.requested_time for i in mdt.mdt.timeline}
    assert table.inspect.validate_metadata_table().ok
