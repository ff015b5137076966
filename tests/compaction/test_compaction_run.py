"""Scheduling and running compaction on every real merge-on-read fixture with log files
(timeline/services/schedule.py, compactor.py, compaction_mdt.py): hudi-rs reads the same rows
before and after (snapshot and read-optimized, every column of every row), the commit is laid
out as Hudi lays one out, the metadata table stays exact, and Cleanline's Spark writer commits on
top afterwards (one Spark-written table: Spark is slow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import FIXTURES, fixture_readme, rows, unzip_table
from timeline import HudiTable
from timeline.instant import State
from timeline.mdt.reader import MetadataTable
from timeline.mdt.validate import validate_files
from timeline.metadata.records import CommitMetadata
from timeline.services.bloom import key_footer
from timeline.services.compaction_mdt import PARTITION_STATS, file_column_stats
from timeline.services.compactor import CompactionResult
from timeline.services.refusals import CompactionRefused
from timeline.services.schedule import CompactionSchedule

# Every fixture whose latest file slices hold log files, by the fixture README and hudi-rs
COMPACTABLE = [
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",               # v6, avro logs, no MDT
    "quickstart_trips_table/mor/avro/v6_trips_8i3d",               # v6, delete blocks
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",             # v8, MDT with every index
    "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle",       # v9, MDT with column and partition stats
    "sample_table/mor/parquet/v6_complexkeygen_hivestyle",         # v6, Parquet data blocks
    "sample_table/mor/parquet/v6_nonpartitioned",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",         # a rollback command block
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
]
LANCE = ["quickstart_trips_table/mor/avro/v9_trips_lance", "sample_table/mor/avro/v9_lance_nonhivestyle"]


def read_optimized(path: Path) -> list[tuple[Any, ...]]:
    batches = hudi.HudiTable(str(path)).read(
        hudi.HudiReadOptions().with_hudi_option("hoodie.read.use.read_optimized.mode", "true"))
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    columns = [c for c in table.column_names if c != "_hoodie_file_name"]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


class Compacted:
    def __init__(self, path: Path, before: list[tuple[Any, ...]], plan: CompactionSchedule,
                 result: CompactionResult) -> None:
        self.path, self.before, self.plan, self.result = path, before, plan, result


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Compacted]:
    """Each compactable fixture, copied, read by hudi-rs, then scheduled and compacted once."""
    root = tmp_path_factory.mktemp("compacted")
    out = {}
    for table_id in COMPACTABLE:
        path = unzip_table(FIXTURES / f"{table_id}.zip", root / table_id)
        before = rows(path)
        maintenance = HudiTable.open(str(path)).maintenance()
        plan = maintenance.compact(dry_run=False)
        assert plan.scheduled and plan.instant is not None, (table_id, plan.reason)
        out[table_id] = Compacted(path, before, plan, maintenance.run_compaction())
    return out


def test_every_fixture_with_log_files_is_compacted_or_refused_by_name(tmp_path: Path) -> None:
    with_logs = [k for k, row in fixture_readme().items() if "/mor/" in k and row["log files"] not in ("0", "")]
    superseded = [k for k in with_logs if "v9_txns" in k or k.endswith("overwritetable")]
    assert sorted(with_logs) == sorted([*COMPACTABLE, *LANCE, *superseded])
    for table_id in with_logs:
        if table_id in COMPACTABLE:
            continue
        path = unzip_table(FIXTURES / f"{table_id}.zip", tmp_path / table_id)
        if table_id in LANCE:
            with pytest.raises(CompactionRefused, match="LANCE"):
                HudiTable.open(str(path)).maintenance().compact()
            continue
        # their log files all sit in slices a compaction or an overwrite already superseded
        assert not [s for s in hudi.HudiTable(str(path)).get_file_slices() if s.log_file_names]
        assert HudiTable.open(str(path)).maintenance().compact().instant is None


@pytest.mark.parametrize("table_id", COMPACTABLE)
def test_hudi_rs_reads_the_same_rows_before_and_after(compacted: dict[str, Compacted], table_id: str) -> None:
    done = compacted[table_id]
    assert done.before, table_id
    assert rows(done.path) == done.before
    assert read_optimized(done.path) == done.before  # the new base files alone hold every row
    files = {s.base_file_name for s in hudi.HudiTable(str(done.path)).get_file_slices() if s.base_file_name}
    assert {Path(p).name for p in done.result.files} <= files


def test_the_commit_is_published_as_hudi_publishes_a_compaction(compacted: dict[str, Compacted]) -> None:
    for table_id, done in compacted.items():
        table = HudiTable.open(str(done.path))
        t = done.result.instant.requested_time
        states = {i.state for i in table.timeline if i.requested_time == t}
        assert states == {State.COMPLETED} and done.result.instant.action == "commit", table_id
        folder = done.path / ".hoodie" / ("timeline" if table.version >= 8 else "")
        names = sorted(p.name for p in folder.iterdir() if p.name.startswith(t))
        if table.version >= 8:
            assert names == [f"{t}.compaction.inflight", f"{t}.compaction.requested",
                             f"{t}_{done.result.instant.completion_time}.commit"]
        else:
            assert names == [f"{t}.commit", f"{t}.compaction.inflight", f"{t}.compaction.requested"]
            assert json.loads((folder / f"{t}.commit").read_text())["compacted"] is True
        assert (folder / f"{t}.compaction.inflight").stat().st_size == 0
        metadata = table.read(done.result.instant, CommitMetadata)
        assert metadata.operation_type == "COMPACT" and metadata.raw["compacted"] is True
        planned = {(op.partition, op.file_id, op.base_instant_time) for op in done.plan.operations}
        assert {(s.partition, s.file_id, s.prev_commit) for s in metadata.stats()} == planned
        for stat in metadata.stats():
            assert (done.path / stat.path).stat().st_size == stat.file_size
        assert not (done.path / ".hoodie" / ".temp" / t).exists()  # markers dropped after the commit
        assert str(table.inspect.why_not_compacting().candidate)  # the table reads on


def test_new_base_files_carry_hudi_meta_fields_bloom_filter_and_key_range(compacted: dict[str, Compacted]) -> None:
    for done in compacted.values():
        for relative in done.result.files:
            path = done.path / relative
            data = pq.read_table(path)
            keys = data.column("_hoodie_record_key").to_pylist()
            footer = {k.decode(): v.decode() for k, v in (pq.read_metadata(path).metadata or {}).items()}
            assert {footer[k] for k in key_footer(keys)} == set(key_footer(keys).values())
            assert footer["hoodie_bloom_filter_type_code"] == "DYNAMIC_V0" and "parquet.avro.schema" in footer
            assert set(data.column("_hoodie_file_name").to_pylist()) <= {path.name}
            assert data.column_names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                             "_hoodie_partition_path", "_hoodie_file_name"]


def test_the_metadata_table_stays_exact(compacted: dict[str, Compacted]) -> None:
    with_mdt = [d for d in compacted.values() if HudiTable.open(str(d.path)).config.metadata_table_enabled]
    assert len(with_mdt) == 2  # the v8 and the v9 fixture
    for done in with_mdt:
        table = HudiTable.open(str(done.path))
        mdt = MetadataTable(table)
        validation = validate_files(mdt)
        assert validation.ok, validation.differences
        stats = {(r.raw["ColumnStatsMetadata"]["fileName"], r.raw["ColumnStatsMetadata"]["columnName"]):
                 r.raw["ColumnStatsMetadata"] for r in mdt.records("column_stats").values() if not r.is_deleted}
        columns = sorted({c for _, c in stats})
        for relative in done.result.files:
            path = done.path / relative
            parquet = pq.ParquetFile(path)
            expected = file_column_stats(parquet.metadata, parquet.schema_arrow, path.name, columns, table.version, {})
            assert expected and all(stats[(path.name, c)]["valueCount"] == e["valueCount"]
                                    and stats[(path.name, c)]["totalSize"] == e["totalSize"]
                                    for c, e in expected.items())
        partition_stats = {(e["fileName"], e["columnName"]): e for r in mdt.records(PARTITION_STATS).values()
                           if (e := r.raw["ColumnStatsMetadata"])["isTightBound"]}
        slices = hudi.HudiTable(str(done.path)).get_file_slices()
        for partition in {op.partition for op in done.plan.operations}:  # over the latest slices' files
            names = {n for s in slices if s.partition_path == partition
                     for n in (s.base_file_name, *s.log_file_names) if n}
            for column in columns:
                counted = sum(stats[(n, column)]["valueCount"] for n in names if (n, column) in stats)
                assert partition_stats[(partition, column)]["valueCount"] == counted, (partition, column)


def test_a_pending_compaction_keeps_its_file_groups_out_of_the_next_plan(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / f"{COMPACTABLE[0]}.zip", tmp_path / "t")
    maintenance = HudiTable.open(str(path)).maintenance()
    first = maintenance.compact(dry_run=False)
    assert first.instant is not None
    assert maintenance.compact().instant is None  # the pending compaction's new slice has no log yet
    (op,) = first.operations  # a write after the schedule appends to that new slice (v6: named after it)
    log = f".{op.file_id}_{first.instant.requested_time}.log.1_0-1-0"
    (path / op.partition / log).write_bytes(b"#HUDI#")
    second = maintenance.compact()
    assert second.instant is None and set(second.left_out) == {op.file_group}
    assert f"pending compaction {first.instant.requested_time}" in second.reason


def test_a_spark_written_table_with_updates_and_deletes_compacts_and_takes_writes_on_top(
        spark: Any, tmp_path: Path) -> None:
    """Cleanline's Spark writer (table version 8, merge-on-read, a metadata table): inserts, an
    upsert and a delete as log files; compacted here; then written on again."""
    from timeline.spark.writer import write

    path = tmp_path / "spark_mor"

    def commit(operation: str, batch: list[tuple[str, str, int, float]]) -> None:
        write(spark, spark.createDataFrame(batch, "id string, part string, ts long, value double"), str(path),
              table_name="trips", record_key="id", precombine_field="ts", partition_by="part", operation=operation,
              table_type="MERGE_ON_READ", table_version=8, max_file_size=4 * 1024,
              options={"hoodie.metadata.enable": "true"})

    commit("insert", [(f"k{i:02d}", "ab"[i % 2], 10, float(i)) for i in range(12)])
    commit("upsert", [("k00", "a", 20, 100.0), ("k03", "b", 5, -1.0), ("n01", "a", 10, 1.0)])  # k03: older, kept
    commit("delete", [("k01", "b", 0, 0.0), ("k04", "a", 0, 0.0)])
    before = rows(path)
    maintenance = HudiTable.open(str(path)).maintenance()
    plan = maintenance.compact(dry_run=False)
    assert plan.instant is not None and plan.operations
    maintenance.run_compaction()
    assert rows(path) == before == read_optimized(path)
    assert validate_files(MetadataTable(HudiTable.open(str(path)))).ok
    commit("upsert", [("k02", "a", 30, 102.0)])
    after = {r["id"]: r["value"] for b in hudi.HudiTable(str(path)).read() for r in b.to_pylist()}
    assert after["k02"] == 102.0 and after["k00"] == 100.0 and "k01" not in after and after["k03"] == 3.0
