"""Cleans of real tables written by Apache Hudi, with aggressive settings. hudi-rs reads the
latest snapshot and every instant at or after the earliest retained commit with exactly the
rows it read before, and every file named by a retained instant still exists."""

from __future__ import annotations

from pathlib import Path

import hudi
import pytest

from tests.helpers import hudi_read, hudi_rs_records, retained_files, rows
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import FileOutcome, Status, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.config import update_config
from timeline.exceptions import CleanlineError
from timeline.hfile import read_hfile
from timeline.logformat import BlockType, read_blocks
from timeline.mdt.reader import MetadataTable
from timeline.metadata import avro
from timeline.metadata.records import CommitMetadata

TABLES = [
    "sample_table/mor/avro/v9_txns_simple_nometa",
    "sample_table/cow/v9_txns_complex_nometa",
    "sample_table/mor/avro/v9_txns_nonpart_nometa",
    "sample_table/cow/v9_txns_simple_nometa",
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",  # metadata table: updated with the clean
    "sample_table/mor/avro/v9_txns_complex_meta",
]
META_TABLES = ["sample_table/cow/v9_txns_simple_meta", "sample_table/cow/v9_txns_complex_meta",
               "sample_table/cow/v9_txns_nonpart_meta", "sample_table/mor/avro/v9_txns_simple_meta",
               "sample_table/mor/avro/v9_txns_complex_meta", "sample_table/mor/avro/v9_txns_nonpart_meta",
               "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"]
CONFIGS = {
    "retain-1-commit": CleanConfig(commits_retained=1),
    "retain-2-commits": CleanConfig(commits_retained=2),
    "keep-1-version": CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
}


def data_rows(path: Path) -> list[tuple]:
    """The latest snapshot without the commit time and sequence columns (twin tables were
    written by separate runs at other times)."""
    table = hudi_read(path)
    if table is None:
        return []
    columns = [c for c in table.column_names if c not in ("_hoodie_file_name", "_hoodie_commit_time",
                                                          "_hoodie_commit_seqno")]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("table_id", TABLES)
def test_fixture_clean_keeps_every_retained_read_identical(table_copy, table_id: str, config_name: str) -> None:
    path = table_copy(table_id)
    config = CONFIGS[config_name]
    table = HudiTable.open(str(path))
    plan = plan_clean(table, config)
    ectr = plan.earliest_instant_to_retain
    since = ectr.requested_time if ectr else (table.timeline.writes().completed().last().requested_time)  # type: ignore[union-attr]
    instants = [i.requested_time for i in table.timeline.writes().completed() if i.requested_time >= since]
    before = {t: rows(path, t) for t in instants}
    latest = rows(path)
    if plan.is_empty:
        assert schedule_clean(table, plan, config) is None and not table.reload().timeline.cleans()
        return
    clean = schedule_clean(table, plan, config)
    (result,) = run_pending_cleans(table)
    if table.config.metadata_table_enabled:
        assert table.inspect.validate_metadata_table().ok
    assert result.failed == 0 and result.deleted == len(plan.files_to_delete)
    assert all(not Path(d.path.removeprefix("file:")).exists() for d in plan.files_to_delete)
    assert rows(path) == latest
    for t in instants:
        assert rows(path, t) == before[t], t
    for file in retained_files(table, since):
        assert file.exists(), file
    folder = Path(table.timeline.folder)
    requested = (folder / f"{clean.requested_time}.clean.requested").read_bytes()
    assert avro.record_name(requested) == "org.apache.hudi.avro.model.HoodieCleanerPlan"
    (completed,) = [p for p in folder.iterdir()
                    if p.name.startswith(clean.requested_time) and p.name.endswith(".clean")]
    assert avro.record_name(completed.read_bytes()) == "org.apache.hudi.avro.model.HoodieCleanMetadata"
    assert hudi.HudiTable(str(path)).get_timeline().get_completed_commits() is not None


@pytest.mark.parametrize("table_id", META_TABLES)
def test_fixture_clean_keeps_the_metadata_table_exact(table_copy, table_id: str) -> None:
    """An aggressive clean of a table with a metadata table: the MDT gets a deltacommit at the
    clean's time, completed before the clean, whose new log blocks list the deleted files;
    `mdt validate` is clean; hudi-rs (listing through the MDT) reads the latest snapshot and
    every retained instant as before, and the same rows as the twin without a metadata table
    cleaned alike."""
    path = table_copy(table_id)
    config = CleanConfig(commits_retained=1)
    table = HudiTable.open(str(path))
    plan = plan_clean(table, config)
    assert not plan.is_empty
    ectr = plan.earliest_instant_to_retain
    since = ectr.requested_time if ectr else table.timeline.writes().completed().last().requested_time  # type: ignore[union-attr]
    instants = [i.requested_time for i in table.timeline.writes().completed() if i.requested_time >= since]
    before = {t: rows(path, t) for t in instants}
    latest = rows(path)
    clean = schedule_clean(table, plan, config)
    assert clean is not None
    (result,) = run_pending_cleans(table)
    assert result.failed == 0 and (path / ".hoodie" / "metadata").exists()
    assert table.reload().inspect.validate_metadata_table().ok
    mdt = MetadataTable(table)
    (written,) = [i for i in mdt.mdt.timeline.completed() if i.requested_time == clean.requested_time]
    done = table.timeline.cleans().completed().last()
    assert written.action == "deltacommit" and done is not None
    assert written.completion_time < done.completion_time  # the MDT first
    commit = mdt.mdt.read(written, CommitMetadata)
    stats = [s for group in commit.write_stats.values() for s in group]
    assert stats and {s.partition for s in stats} <= {"files", "column_stats"}
    assert all(s.path.startswith(f"{s.partition}/.") and f"_{clean.requested_time}.log.1_" in s.path for s in stats)
    listed = {name for files in mdt.files().values() for name in files}
    assert not listed & {d.file_name for d in plan.files_to_delete}
    new_logs = list((path / ".hoodie" / "metadata").glob(f"*/.*_{clean.requested_time}.log.*"))
    assert new_logs
    for log in new_logs:  # their HFiles read back by hudi-rs
        for block in read_blocks(log.read_bytes(), path=str(log)):
            if block.block_type is BlockType.HFILE_DATA:
                ours = read_hfile(block.content, path=str(log)).keys()
                theirs = hudi_rs_records(path / ".hoodie" / "metadata", log.parent, log.name, block.content)
                assert [r["key"] for r in theirs] == [k.decode() for k in ours]
    if "column_stats" in table.config.metadata_partitions:  # stats only of live files, as Hudi keeps them
        stats = {r.column_stats[0] for r in mdt.records("column_stats").values() if r.column_stats}
        assert stats == listed
    assert rows(path) == latest
    for t in instants:
        assert rows(path, t) == before[t], t
    if table_id.endswith("_meta"):  # the twin without a metadata table, cleaned alike
        twin = table_copy(table_id.removesuffix("_meta") + "_nometa")
        twin_table = HudiTable.open(str(twin))
        schedule_clean(twin_table, plan_clean(twin_table, config), config)
        run_pending_cleans(twin_table)
        assert data_rows(twin) == data_rows(path)


def test_fixture_clean_rerun_after_a_crash_between_the_mdt_and_the_clean(table_copy) -> None:
    """The MDT deltacommit completed, the clean still inflight (a crash in between): readers
    ignore the deltacommit while the clean is pending, and a re-run completes the clean with it."""
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    config = CleanConfig(commits_retained=1)
    table = HudiTable.open(str(path))
    plan = plan_clean(table, config)
    clean = schedule_clean(table, plan, config)
    assert clean is not None
    from timeline.clean.executor import begin_clean, clean_metadata
    from timeline.mdt.writer import update_for_clean

    cleaned_plan, targets = begin_clean(table, clean)
    outcomes = [FileOutcome(t.partition, t.path, Status.DELETED) for t in targets]
    for t in targets:
        Path(t.path.removeprefix("file:")).unlink()
    update_for_clean(MetadataTable(table), clean.requested_time, clean_metadata(clean, cleaned_plan, outcomes, 0.0))
    table.reload()
    stale = MetadataTable(table).files()  # the clean is inflight: its MDT deltacommit does not count yet
    assert {d.file_name for d in plan.files_to_delete} <= {n for f in stale.values() for n in f}
    (result,) = run_pending_cleans(table)
    assert result.already_gone == len(targets)
    assert table.reload().inspect.validate_metadata_table().ok
    mdt = MetadataTable(table)
    assert len([i for i in mdt.mdt.timeline if i.requested_time == clean.requested_time]) == 1


def test_fixture_clean_of_a_table_whose_metadata_table_is_missing_is_refused_before_any_delete(table_copy) -> None:
    """hoodie.properties lists a metadata table that is not there: the clean stops before its
    first delete (nothing deleted, the clean still requested), naming the repair."""
    path = table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable")
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})
    table = HudiTable.open(str(path))
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    assert schedule_clean(table, plan_clean(table, config), config) is not None
    before = sorted(p.name for p in path.rglob("*.parquet"))
    with pytest.raises(CleanlineError):
        run_pending_cleans(table)
    assert sorted(p.name for p in path.rglob("*.parquet")) == before
    assert all(c.is_requested for c in table.reload().timeline.cleans())
