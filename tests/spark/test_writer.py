"""The Spark writer on local[2] against hudi-rs: for table versions 6 and 8, copy-on-write and
merge-on-read, every operation and compaction. hudi-rs reads exactly the rows a plain-Python
model of the operations expects, at the latest instant and as of every commit; our file-system
view equals hudi-rs's file slices; the files Hudi's format asks for are there."""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from tests.helpers import FIXTURES, hudi_read, ours, theirs
from timeline import HudiTable
from timeline.config import checksum
from timeline.instant import State
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, LockUnavailable
from timeline.mdt import MetadataTableEnabledError
from timeline.mdt.reader import MetadataTable
from timeline.mdt.validate import validate_files
from timeline.spark.writer import WriteError, compact, write
from timeline.spark.writer.compaction import _schedule_compaction

SCHEMA = "id string, part string, ts long, value double"
COLUMNS = ["_hoodie_record_key", "_hoodie_partition_path", "id", "part", "ts", "value"]
Row = tuple[str, str, int, float]
FOUR_PER_FILE = 4 * 1024  # the writer estimates 1 KiB per record


class Model:
    """What the table must hold, by plain dict logic: (partition path, key) -> row."""

    def __init__(self, *, hive: bool, partitioned: bool = True) -> None:
        self.hive = hive
        self.partitioned = partitioned
        self.rows: dict[tuple[str, str], Row] = {}

    def partition_path(self, part: str) -> str:
        if not self.partitioned:
            return ""
        return f"part={part}" if self.hive else part

    def apply(self, operation: str, batch: list[Row]) -> None:
        keyed = {(self.partition_path(row[1]), row[0]): row for row in batch}
        if operation == "upsert":
            latest: dict[tuple[str, str], Row] = {}
            for row in batch:
                key = (self.partition_path(row[1]), row[0])
                if key not in latest or row[2] > latest[key][2]:
                    latest[key] = row
            for key, row in latest.items():
                if key not in self.rows or row[2] >= self.rows[key][2]:
                    self.rows[key] = row
        elif operation == "delete":
            for key in keyed:
                self.rows.pop(key, None)
        else:
            if operation == "insert_overwrite_table":
                self.rows = {}
            elif operation == "insert_overwrite":
                written = {partition for partition, _ in keyed}
                self.rows = {k: v for k, v in self.rows.items() if k[0] not in written}
            self.rows.update(keyed)

    def expected(self) -> list[dict[str, Any]]:
        return sorted(({"_hoodie_record_key": key, "_hoodie_partition_path": partition, "id": row[0],
                        "part": row[1], "ts": row[2], "value": row[3]}
                       for (partition, key), row in self.rows.items()), key=_order)


def _order(row: dict[str, Any]) -> tuple[str, str]:
    return (row["_hoodie_record_key"], row["_hoodie_partition_path"])


def hudi_rows(path: Path, as_of: str | None = None) -> list[dict[str, Any]]:
    table = hudi_read(path, as_of)
    return [] if table is None else sorted(table.select(COLUMNS).to_pylist(), key=_order)


INSERT = [(f"k{i:02d}", "abc"[i % 3], 10, float(i)) for i in range(15)]
UPSERT = [("k00", "a", 20, 100.0), ("k01", "b", 20, 101.0), ("k04", "b", 5, -1.0),  # k04: older, ignored
          ("k03", "a", 30, 103.0), ("k03", "a", 25, 999.0),  # two in one batch: the newer wins
          ("n01", "a", 10, 1.0), ("n02", "c", 10, 2.0)]
DELETE = [("k01", "b", 0, 0.0), ("k05", "c", 0, 0.0), ("zz", "a", 0, 0.0)]  # zz is not in the table
UPSERT_AGAIN = [("k06", "a", 40, 106.0), ("k07", "b", 40, 107.0), ("k04", "b", 40, 104.0)]
UPSERT_AFTER_COMPACTION = [("k00", "a", 50, 200.0), ("k08", "c", 50, 108.0)]
OVERWRITE = [("o1", "b", 1, 1.0), ("o2", "b", 1, 2.0)]
UPSERT_OVERWRITTEN = [("o1", "b", 2, 3.0)]
OVERWRITE_TABLE = [("t1", "a", 1, 1.0), ("t2", "c", 1, 2.0)]

STEPS: list[tuple[str, list[Row]]] = [
    ("insert", INSERT), ("upsert", UPSERT), ("delete", DELETE), ("upsert", UPSERT_AGAIN), ("compact", []),
    ("upsert", UPSERT_AFTER_COMPACTION), ("insert_overwrite", OVERWRITE), ("upsert", UPSERT_OVERWRITTEN),
    ("insert_overwrite_table", OVERWRITE_TABLE),
]

COMBINATIONS = [(6, "COPY_ON_WRITE", False), (6, "MERGE_ON_READ", True), (8, "COPY_ON_WRITE", True),
                (8, "MERGE_ON_READ", False)]


def run_write(spark: SparkSession, path: Path, operation: str, batch: Iterable[Row], *, version: int,
              table_type: str, hive: bool = False, partitioned: bool = True,
              max_file_size: int = FOUR_PER_FILE, options: dict[str, str] | None = None) -> str:
    return write(spark, spark.createDataFrame(list(batch), SCHEMA), str(path), table_name="trips",
                 record_key="id", precombine_field="ts", partition_by="part" if partitioned else None,
                 operation=operation, table_type=table_type, table_version=version,
                 hive_style_partitioning=hive, max_file_size=max_file_size, options=options)


def assert_same_slices(path: Path, as_of: str | None = None) -> None:
    assert ours(HudiTable.open(str(path)), as_of) == theirs(path, as_of)


@pytest.mark.parametrize(("version", "table_type", "hive"), COMBINATIONS)
def test_writer_every_operation_reads_back_in_hudi_rs(spark: SparkSession, tmp_path: Path, version: int,
                                                      table_type: str, hive: bool) -> None:
    path = tmp_path / "trips"
    model = Model(hive=hive)
    snapshots: dict[str, list[dict[str, Any]]] = {}
    for operation, batch in STEPS:
        if operation == "compact":
            if table_type == "COPY_ON_WRITE":
                continue
            before = hudi_rows(path)
            instant = compact(spark, str(path))
            assert instant is not None
            assert hudi_rows(path) == before, "compaction changed the rows"
        else:
            instant = run_write(spark, path, operation, batch, version=version, table_type=table_type, hive=hive)
            model.apply(operation, batch)
        assert hudi_rows(path) == model.expected(), f"after {operation}"
        assert_same_slices(path)
        assert not (path / ".hoodie" / ".temp" / instant).exists(), "markers are removed after the commit"
        snapshots[instant] = model.expected()
        if len(snapshots) == 1:
            groups = HudiTable.open(str(path)).file_system_view().latest_slices()
            assert len(groups) > 3, "5 records per partition, 4 per file: more than one file group per partition"

    table = HudiTable.open(str(path))
    completed = table.timeline.writes().completed()
    assert [i.requested_time for i in completed] == sorted(snapshots)
    assert all(i.completion_time for i in completed)
    for instant in completed:
        assert hudi_rows(path, instant.requested_time) == snapshots[instant.requested_time], instant
        assert_same_slices(path, instant.requested_time)


@pytest.mark.parametrize("version", [6, 8])
def test_writer_creates_the_table_as_hudi_does(spark: SparkSession, tmp_path: Path, version: int) -> None:
    path = tmp_path / "trips"
    instant = run_write(spark, path, "insert", INSERT, version=version, table_type="MERGE_ON_READ", hive=True,
                        max_file_size=1024 * 1024)
    table = HudiTable.open(str(path))
    config = table.config
    assert (config.name, config.version, config.layout_version, config.is_mor) == ("trips", version, version // 4, True)
    assert config.stored_checksum == checksum(config.props)
    assert config.partition_fields == ("part",) and config.hive_style
    assert config.get("hoodie.table.recordkey.fields") == "id" and config.get("hoodie.table.precombine.field") == "ts"
    schema = json.loads(config.get("hoodie.table.create.schema") or "")
    assert [f["name"] for f in schema["fields"]] == ["id", "part", "ts", "value"]
    if version == 8:
        assert config.get("hoodie.timeline.path") == "timeline"
        assert config.get("hoodie.table.keygenerator.type") == "SIMPLE"
        assert (path / ".hoodie" / "timeline" / "history").is_dir()
    else:
        assert config.get("hoodie.table.keygenerator.class") == "org.apache.hudi.keygen.SimpleKeyGenerator"
    for part in "abc":
        folder = path / f"part={part}"
        meta = (folder / ".hoodie_partition_metadata").read_text().splitlines()
        assert meta[0] == "#partition metadata"
        assert meta[2:] == [f"commitTime={instant}", "partitionDepth=1"]
        assert len(list(folder.glob("*.parquet"))) == 1, "5 records fit one file of the default size"


def fixture_json(zip_path: str, member_suffix: str) -> dict[str, Any]:
    with zipfile.ZipFile(FIXTURES / zip_path) as zipped:
        name = next(n for n in zipped.namelist() if n.endswith(member_suffix) and not n.startswith("__MACOSX"))
        return json.loads(zipped.read(name))


def first_stat(content: dict[str, Any], predicate: Any) -> dict[str, Any]:
    return next(s for stats in content["partitionToWriteStats"].values() for s in stats if predicate(s))


def test_writer_v6_commit_metadata_has_hudis_fields_in_hudis_order(spark: SparkSession, tmp_path: Path) -> None:
    cow, mor = tmp_path / "cow", tmp_path / "mor"
    first = run_write(spark, cow, "insert", INSERT, version=6, table_type="COPY_ON_WRITE")
    second = run_write(spark, cow, "upsert", UPSERT, version=6, table_type="COPY_ON_WRITE")
    run_write(spark, mor, "insert", INSERT, version=6, table_type="MERGE_ON_READ")
    delta = run_write(spark, mor, "upsert", UPSERT, version=6, table_type="MERGE_ON_READ")

    hudi_commit = fixture_json("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip",
                               "20240707001302376.commit")
    hudi_delta = fixture_json("quickstart_trips_table/mor/avro/v6_trips_8i1u.zip", "20250331030645735.deltacommit")
    commit = json.loads((cow / ".hoodie" / f"{second}.commit").read_text())
    assert list(commit) == list(hudi_commit)
    merged = first_stat(commit, lambda s: s["prevCommit"] != "null")
    assert list(merged) == list(first_stat(hudi_commit, lambda s: True))
    assert merged["prevCommit"] == first and merged["numUpdateWrites"] >= 1 and merged["numInserts"] == 0
    assert merged["path"].endswith(f"_{second}.parquet")
    assert (cow / merged["path"]).stat().st_size == merged["fileSizeInBytes"]
    assert json.loads(commit["extraMetadata"]["schema"])["name"] == "trips_record"
    assert commit["operationType"] == "UPSERT" and commit["compacted"] is False

    deltacommit = json.loads((mor / ".hoodie" / f"{delta}.deltacommit").read_text())
    log = first_stat(deltacommit, lambda s: ".log." in s["path"])
    assert list(log) == list(first_stat(hudi_delta, lambda s: ".log." in s["path"]))
    assert log["baseFile"] and log["logFiles"][-1] == log["path"].rsplit("/", 1)[-1]
    assert log["path"].rsplit("/", 1)[-1].startswith(f".{log['fileId']}_{log['prevCommit']}.log.1_")
    inflight = json.loads((mor / ".hoodie" / f"{delta}.deltacommit.inflight").read_text())
    assert list(first_stat(inflight, lambda s: True)) == list(first_stat(hudi_commit, lambda s: True))
    assert (mor / ".hoodie" / f"{delta}.deltacommit.requested").read_bytes() == b""


def test_writer_v8_instants_logs_and_compaction_plan(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "trips"
    run_write(spark, path, "insert", INSERT, version=8, table_type="MERGE_ON_READ")
    delta = run_write(spark, path, "delete", DELETE, version=8, table_type="MERGE_ON_READ")
    compaction = compact(spark, str(path))
    assert compaction is not None and compact(spark, str(path)) is None, "nothing left to compact"
    overwrite = run_write(spark, path, "insert_overwrite", OVERWRITE, version=8, table_type="MERGE_ON_READ")
    names = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir() if p.is_file())
    assert f"{delta}.deltacommit.requested" in names and f"{delta}.deltacommit.inflight" in names
    assert any(n.startswith(f"{delta}_") and n.endswith(".deltacommit") for n in names)
    assert {f"{compaction}.compaction.requested", f"{compaction}.compaction.inflight"} <= set(names)

    table = HudiTable.open(str(path))
    timeline = table.timeline
    content = table.read_instant(timeline.find(delta))
    assert content is not None and content["operationType"] == "DELETE"
    logs = [s for stats in content["partitionToWriteStats"].values() for s in stats]
    assert sum(log["numDeletes"] for log in logs) == 2, "k01 and k05; zz is not in the table"
    for log in logs:
        assert log["prevCommit"] == delta and log["baseFile"] == "" and f"_{delta}.log.1_" in log["path"]
        assert log["logFiles"] == [log["path"].rsplit("/", 1)[-1]]

    plan = table.read_instant(timeline.find(compaction, "compaction"), State.REQUESTED)
    assert plan is not None and plan["version"] == 2
    assert {op["fileId"] for op in plan["operations"]} == {log["fileId"] for log in logs}
    done = table.read_instant(timeline.find(compaction))
    assert done is not None and done["compacted"] is True and done["operationType"] == "COMPACT"
    assert first_stat(done, lambda s: True)["prevBaseFile"]

    replace = table.read_instant(timeline.find(overwrite))
    assert replace is not None and replace["operationType"] == "INSERT_OVERWRITE"
    view = HudiTable.open(str(path)).file_system_view(as_of=delta)
    assert sorted(replace["partitionToReplaceFileIds"]["b"]) == sorted(s.file_id for s in view.latest_slices("b"))
    assert not (path / ".hoodie" / ".temp" / overwrite).exists()


def test_writer_nonpartitioned_merge_on_read(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "flat"
    model = Model(hive=False, partitioned=False)
    for operation, batch in [("upsert", INSERT), ("upsert", UPSERT), ("delete", DELETE)]:  # upsert into nothing
        run_write(spark, path, operation, batch, version=6, table_type="MERGE_ON_READ", partitioned=False)
        model.apply(operation, batch)
        assert hudi_rows(path) == model.expected()
    compact(spark, str(path))
    assert hudi_rows(path) == model.expected()
    assert_same_slices(path)
    assert (path / ".hoodie_partition_metadata").read_text().splitlines()[-1] == "partitionDepth=0"


def test_writer_refuses_a_write_that_does_not_fit_the_table(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "trips"
    run_write(spark, path, "insert", INSERT[:3], version=6, table_type="COPY_ON_WRITE")
    before = sorted(p.name for p in (path / ".hoodie").iterdir())
    with pytest.raises(WriteError, match="table version is 6, not 8"):
        run_write(spark, path, "upsert", UPSERT, version=8, table_type="COPY_ON_WRITE")
    with pytest.raises(WriteError, match="no column 'missing'"):
        write(spark, spark.createDataFrame(UPSERT, SCHEMA), str(path), table_name="trips", record_key="missing",
              precombine_field="ts", partition_by="part", operation="upsert", table_version=6)
    with pytest.raises(WriteError, match="null or empty"):
        run_write(spark, path, "upsert", [("", "a", 1, 1.0)], version=6, table_type="COPY_ON_WRITE")
    with pytest.raises(WriteError, match="only merge-on-read"):
        compact(spark, str(path))
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == before


WIDE = ("id string, part string, ts long, n int, ok boolean, d date, t timestamp, m decimal(10,2), b binary, "
        "f float")


def wide_row(i: int, ts: int) -> tuple[Any, ...]:
    return (f"k{i}", "x", ts, i, i % 2 == 0, date(2024, 1, i + 1), datetime(2024, 1, 1, 12, i, tzinfo=UTC),
            Decimal(f"{i}.25"), bytes([i]), i / 2)


def test_writer_wide_types_survive_logs_and_compaction(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "wide"
    for operation, rows in (("insert", [wide_row(i, 1) for i in range(3)]), ("upsert", [wide_row(1, 2)])):
        write(spark, spark.createDataFrame(rows, WIDE), str(path), table_name="wide", record_key="id",
              precombine_field="ts", partition_by="part", operation=operation, table_type="MERGE_ON_READ",
              table_version=6)
    names = ["id", "part", "ts", "n", "ok", "d", "t", "m", "b", "f"]
    expected = [dict(zip(names, wide_row(i, 2 if i == 1 else 1), strict=True)) for i in range(3)]
    for _ in ("log blocks", "compacted"):
        batches = hudi.HudiTable(str(path)).read()
        assert sorted(pa.Table.from_batches(batches).select(names).to_pylist(), key=lambda r: r["id"]) == expected
        compact(spark, str(path))


def test_compact_resumes_a_crashed_compaction_and_drops_its_partial_files(spark: SparkSession,
                                                                        tmp_path: Path) -> None:
    path = tmp_path / "trips"
    for operation, batch in [("insert", INSERT), ("upsert", UPSERT)]:
        run_write(spark, path, operation, batch, version=8, table_type="MERGE_ON_READ")
    expected = hudi_rows(path)
    instant = _schedule_compaction(HudiTable.open(str(path)))  # what a crashed run left: its plan,
    assert instant is not None
    (path / ".hoodie" / "timeline" / f"{instant}.compaction.inflight").write_bytes(b"")  # its inflight,
    table = HudiTable.open(str(path))
    plan = table.read_instant(table.timeline.find(instant, "compaction"), State.REQUESTED)
    assert plan is not None
    operation = plan["operations"][0]
    partial = f"{operation['fileId']}_0-1-2_{instant}.parquet"  # and a partial file with its marker
    (path / operation["partitionPath"] / partial).write_bytes(b"PAR1 torn")
    marker = path / ".hoodie" / ".temp" / instant / operation["partitionPath"] / f"{partial}.marker.MERGE"
    marker.parent.mkdir(parents=True)
    marker.write_bytes(b"")

    assert compact(spark, str(path)) == instant
    assert not (path / operation["partitionPath"] / partial).exists()
    assert hudi_rows(path) == expected
    assert_same_slices(path)


# The metadata table the writer keeps (timeline/spark/writer/metadata_table.py).
WITH_MDT = {"hoodie.metadata.enable": "true"}
HUDI_1_0_MDT = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # written by Hudi 1.0.x, metadata table on


def hudi_1_0_member(suffix: str) -> bytes:
    with zipfile.ZipFile(FIXTURES / HUDI_1_0_MDT) as zipped:
        return zipped.read(next(n for n in zipped.namelist() if n.endswith(suffix) and "__MACOSX" not in n))


def assert_mdt_exact(path: Path) -> MetadataTable:
    mdt = MetadataTable(HudiTable.open(str(path)))
    validation = validate_files(mdt)
    assert validation.ok, validation
    return mdt


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writer_keeps_the_metadata_table_exact_through_every_operation(spark: SparkSession, tmp_path: Path,
                                                                       table_type: str) -> None:
    path = tmp_path / "trips"
    model = Model(hive=True)
    for operation, batch in STEPS:
        if operation == "compact":
            if table_type == "MERGE_ON_READ":
                assert compact(spark, str(path)) is not None
        else:
            run_write(spark, path, operation, batch, version=8, table_type=table_type, hive=True, options=WITH_MDT)
            model.apply(operation, batch)
        mdt = assert_mdt_exact(path)
        assert hudi_rows(path) == model.expected(), f"after {operation}"
    table = HudiTable.open(str(path))
    assert table.config.metadata_partitions == ("files",)
    written = [i.requested_time for i in table.timeline.completed() if i.action != "clean"]
    deltacommits = [i.requested_time for i in mdt.mdt.timeline.completed()]
    assert deltacommits == ["00000000000000000", *written], "one MDT deltacommit per data-table instant"
    for instant in mdt.mdt.timeline.completed():
        data = table.timeline.completed().find(instant.requested_time)
        if data is not None and data.completion_time and instant.completion_time:
            assert instant.completion_time <= data.completion_time, "the MDT completes before the data table"


def test_writer_lays_out_a_new_metadata_table_as_hudi_1_0_does(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "trips"
    run_write(spark, path, "insert", INSERT, version=8, table_type="MERGE_ON_READ", options=WITH_MDT)
    mdt_folder = path / ".hoodie" / "metadata"
    ours_props = HudiTable.open(str(mdt_folder)).config
    hudi_props = dict(line.split("=", 1) for line in hudi_1_0_member("metadata/.hoodie/hoodie.properties")
                      .decode().splitlines() if "=" in line and not line.startswith("#"))
    assert ours_props.stored_checksum == checksum(ours_props.props)
    skip = {"hoodie.table.name", "hoodie.table.checksum"}
    assert {k: v for k, v in ours_props.props.items() if k not in skip} == \
        {k: v for k, v in hudi_props.items() if k not in skip}
    assert ours_props.name == "trips_metadata"
    init = ".files-0000-0_00000000000000000.log.1_0-0-0"
    assert (mdt_folder / "files" / init).read_bytes() == hudi_1_0_member(f"metadata/files/{init}"), \
        "the initial log file is byte for byte Hudi 1.0's"
    meta = (mdt_folder / "files" / ".hoodie_partition_metadata").read_text().splitlines()
    assert meta[0] == "#partition metadata" and meta[2:] == ["commitTime=00000000000000000", "partitionDepth=1"]
    assert_mdt_exact(path)
    # hudi-rs lists the table through this metadata table: hiding a write's MDT log file hides its rows.
    run_write(spark, path, "insert", OVERWRITE_TABLE, version=8, table_type="MERGE_ON_READ", options=WITH_MDT)
    expected = hudi_rows(path)
    assert len(expected) == len(INSERT) + len(OVERWRITE_TABLE)
    latest = max((mdt_folder / "files").glob(".files-0000-0_2*"))
    hidden = latest.rename(tmp_path / "hidden")
    assert len(hudi_rows(path)) == len(INSERT)
    hidden.rename(latest)
    assert hudi_rows(path) == expected


def test_writer_refuses_a_metadata_table_it_cannot_keep(spark: SparkSession, tmp_path: Path) -> None:
    # A Hudi-written table whose metadata table also holds column stats, partition stats and the
    # record index: a write here would leave them stale.
    with zipfile.ZipFile(FIXTURES / HUDI_1_0_MDT) as zipped:
        zipped.extractall(tmp_path)
    path = tmp_path / "v8_trips_8i3u1d"
    before = sorted((p.relative_to(path), p.stat().st_size) for p in path.rglob("*") if p.is_file())
    rows = [(0, "u-new", "rider", "driver", 1.0, "sf")]
    frame = spark.createDataFrame(rows, "ts long, uuid string, rider string, driver string, fare double, city string")
    with pytest.raises(MetadataTableEnabledError, match="column_stats"):
        write(spark, frame, str(path), table_name="v8_trips_8i3u1d", record_key="uuid", precombine_field="ts",
              partition_by="city", operation="upsert", table_type="MERGE_ON_READ", table_version=8,
              hive_style_partitioning=True)
    assert sorted((p.relative_to(path), p.stat().st_size) for p in path.rglob("*") if p.is_file()) == before
    with pytest.raises(WriteError, match="version 8 only"):
        run_write(spark, tmp_path / "v6", "insert", INSERT, version=6, table_type="COPY_ON_WRITE", options=WITH_MDT)
    assert not (tmp_path / "v6").exists()


def test_compact_schedules_and_completes_under_the_lock(spark: SparkSession, tmp_path: Path) -> None:
    """BaseHoodieTableServiceClient: a compaction is scheduled and completed under the table's
    lock. With another writer's live lease on the table's lock file, `compact` with optimistic
    concurrency waits for the lock and, given none of its wait, stops before writing anything;
    once the lease is gone the same call compacts."""
    path = tmp_path / "trips"
    run_write(spark, path, "insert", INSERT, version=8, table_type="MERGE_ON_READ")
    run_write(spark, path, "delete", DELETE, version=8, table_type="MERGE_ON_READ")
    lock = path / ".hoodie" / ".locks" / "table_lock.json"
    lock.parent.mkdir(parents=True, exist_ok=True)
    until = int(time.time() * 1000) + 300_000
    lock.write_bytes(f'{{"expired":false,"validUntil":{until},"owner":"hudi-writer-uuid"}}'.encode())
    occ = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
           "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER, "hoodie.write.lock.wait_time_ms": "0"}
    before = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())
    with pytest.raises(LockUnavailable, match="hudi-writer-uuid"):
        compact(spark, str(path), options=occ)
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == before
    lock.unlink()
    compaction = compact(spark, str(path), options=occ)
    assert compaction is not None
    assert HudiTable.open(str(path)).timeline.find(compaction).state is State.COMPLETED
