"""Write Spark DataFrames into Hudi tables as Apache Hudi's Spark writer does, and compact
merge-on-read tables (hudi-format.md §1-§6): table versions 6 and 8, copy-on-write and
merge-on-read.

`write` creates the table on its first call (`hoodie.properties` with checksum, the `.hoodie`
folders) and publishes one instant per call: requested, inflight holding the workload profile,
completed holding every file's write stats, in the metadata format of the table version (v6
JSON, v8 Avro). The driver only plans: it reads the file-system view, looks up which file group
holds each incoming key (a Spark job over the latest file slices of the partitions written to:
Hudi's SIMPLE index), counts the records per file group and routes every record to one. One task
per file group then writes its Parquet base file or log file through `Storage`, with a marker
first, and returns its write stat. `compact` schedules and runs compactions the same way.

Record semantics are Hudi's EVENT_TIME_ORDERING (`DefaultHoodieRecordPayload`): an upsert
keeps, per key, the incoming record with the greatest ordering (precombine) value, and replaces
a stored record unless the stored one orders higher; a delete removes the key. `insert` and the
overwrites neither look keys up nor de-duplicate them, as in Hudi. The index is per partition
(Hudi's non-global index). Inserts always open new file groups: routing them into small existing
file groups is not done.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import Enum
from functools import partial
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeline import metadata, properties
from timeline.config import (
    HIVE_STYLE, LAYOUT, META_FOLDER, NAME, PARTITION_FIELDS, PROPERTIES_FILE, TYPE, VERSION, TableConfig, TableType,
)
from timeline.exceptions import CleanlineError, FileExists
from timeline.files import base_file_name, log_file_name
from timeline.fsview import FileSlice, FileSystemView
from timeline.instant import COMMIT, COMPACTION, DELTA_COMMIT, REPLACE_COMMIT, Instant, State
from timeline.logformat import (
    BlockType, DeleteRecord, HeaderKey, OrderingValue, avro_data_block, decode_avro_records, decode_delete_records,
    encode_block, encode_delete_records, read_blocks,
)
from timeline.mdt import guard_metadata_table
from timeline.storage import Storage, storage_for
from timeline.table import HudiTable

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_FIELDS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)

DEFAULT_MAX_FILE_SIZE = 120 * 1024 * 1024  # hoodie.parquet.max.file.size
RECORD_SIZE_ESTIMATE = 1024  # hoodie.copyonwrite.record.size.estimate: bytes per record
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
PAYLOAD_CLASS = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_MERGE_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
CREATE_SCHEMA = "hoodie.table.create.schema"
WRITABLE_VERSIONS = (6, 8)

_JOB = "_cleanline_job"
_FILE_ID = "_cleanline_file_id"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MB = 1024 * 1024


class WriteError(CleanlineError, ValueError):
    """A write or compaction refused before anything was written: bad input, or a table whose
    settings differ from the write's. The message names the table or the column."""


class Operation(str, Enum):
    """The supported write operations, by Hudi's `WriteOperationType` names."""

    INSERT = "INSERT"
    UPSERT = "UPSERT"
    DELETE = "DELETE"
    INSERT_OVERWRITE = "INSERT_OVERWRITE"
    INSERT_OVERWRITE_TABLE = "INSERT_OVERWRITE_TABLE"

    @property
    def looks_up_keys(self) -> bool:
        return self in (Operation.UPSERT, Operation.DELETE)

    @property
    def replaces(self) -> bool:
        return self in (Operation.INSERT_OVERWRITE, Operation.INSERT_OVERWRITE_TABLE)


class IOType(str, Enum):
    """How a task writes a file (Hudi's marker `IOType`)."""

    CREATE = "CREATE"
    MERGE = "MERGE"
    APPEND = "APPEND"


# --- the table ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableSpec:
    """The table a write asks for: created as such, or checked against an existing table."""

    name: str
    table_type: TableType
    version: int
    record_key: str
    precombine_field: str
    partition_field: str | None
    hive_style: bool

    @property
    def layout(self) -> int:
        return 2 if self.version >= 8 else 1

    def settings(self) -> dict[str, object]:
        """What must agree with an existing table, by readable name."""
        return {"table type": self.table_type.value, "table version": self.version,
                "record key": self.record_key, "precombine field": self.precombine_field,
                "partition field": self.partition_field, "hive-style partitioning": self.hive_style}

    def properties(self, create_schema: str) -> dict[str, str]:
        """`hoodie.properties` of a new table, as Hudi writes it for the version."""
        props = {
            NAME: self.name, TYPE: self.table_type.value, VERSION: str(self.version), LAYOUT: str(self.layout),
            RECORD_KEY_FIELDS: self.record_key, PRECOMBINE_FIELD: self.precombine_field,
            "hoodie.table.base.file.format": "PARQUET", "hoodie.archivelog.folder": "archived",
            HIVE_STYLE: str(self.hive_style).lower(), "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.compaction.payload.class": PAYLOAD_CLASS, CREATE_SCHEMA: create_schema,
        }
        if self.partition_field:
            props[PARTITION_FIELDS] = self.partition_field
        if self.version >= 8:
            props |= {"hoodie.table.initial.version": str(self.version), "hoodie.timeline.path": "timeline",
                      "hoodie.timeline.history.path": "history",
                      "hoodie.table.keygenerator.type": "SIMPLE" if self.partition_field else "NON_PARTITION",
                      "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                      "hoodie.record.merge.strategy.id": EVENT_TIME_MERGE_STRATEGY}
        else:
            generator = "SimpleKeyGenerator" if self.partition_field else "NonpartitionedKeyGenerator"
            props["hoodie.table.keygenerator.class"] = f"org.apache.hudi.keygen.{generator}"
        return dict(TableConfig(props).with_updates({}).props)


def _spec(table_name: str, table_type: str | TableType, version: int, record_key: str, precombine_field: str,
          partition_by: str | None, hive_style: bool) -> TableSpec:
    if version not in WRITABLE_VERSIONS:
        raise WriteError(f"table version {version} cannot be written (writable: 6, 8)")
    aliases = {"COW": TableType.COPY_ON_WRITE, "MOR": TableType.MERGE_ON_READ}
    try:
        kind = aliases.get(table_type.upper()) or TableType(table_type.upper())
    except ValueError:
        raise WriteError(f"unknown table type {table_type!r} (COPY_ON_WRITE or MERGE_ON_READ)") from None
    return TableSpec(table_name, kind, version, record_key, precombine_field, partition_by or None, hive_style)


def _existing_table(uri: str) -> HudiTable | None:
    """The table at `uri`, or None where there is no `.hoodie` folder yet. A `.hoodie` folder
    without a readable `hoodie.properties` is an error, never overwritten."""
    storage, base = storage_for(uri)
    if not storage.exists(Storage.join(base, META_FOLDER)):
        return None
    return HudiTable.load(storage, base)


def _check_table(table: HudiTable, spec: TableSpec) -> None:
    config = table.config
    found = {"table type": config.table_type.value, "table version": config.version,
             "record key": config.get(RECORD_KEY_FIELDS), "precombine field": config.get(PRECOMBINE_FIELD),
             "partition field": ",".join(config.partition_fields) or None,
             "hive-style partitioning": config.hive_style}
    wrong = [f"{name} is {found[name]!r}, not {value!r}" for name, value in spec.settings().items()
             if found[name] != value]
    if wrong:
        raise WriteError(f"{table.uri}: the table differs from the write: {'; '.join(wrong)}")
    guard_metadata_table(table, drop=False, action="writing")


def _java_date(moment: datetime) -> str:
    """`java.util.Date.toString()` of a UTC moment."""
    return moment.strftime("%a %b %d %H:%M:%S UTC %Y")


def _create_table(uri: str, spec: TableSpec, schema: RecordSchema) -> HudiTable:
    """Initialise the table as HoodieTableMetaClient does: its folders, then hoodie.properties."""
    storage, base = storage_for(uri)
    meta = Storage.join(base, META_FOLDER)
    folders = [".schema", ".temp", ".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids",
               "timeline/history" if spec.version >= 8 else "archived"]
    for folder in folders:
        storage.makedirs(Storage.join(meta, folder))
    now = datetime.now(timezone.utc)
    text = properties.dumps(spec.properties(schema.data_avro),
                            comments=[f"Properties saved on {now.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}", _java_date(now)])
    storage.write(Storage.join(meta, PROPERTIES_FILE), text.encode("ascii"))
    return HudiTable.load(storage, base)


# --- record schema ----------------------------------------------------------------------------

_SIMPLE_TYPES: tuple[tuple[type[T.DataType], pa.DataType, Any], ...] = (
    (T.StringType, pa.string(), "string"),
    (T.BooleanType, pa.bool_(), "boolean"),
    (T.ByteType, pa.int32(), "int"),
    (T.ShortType, pa.int32(), "int"),
    (T.IntegerType, pa.int32(), "int"),
    (T.LongType, pa.int64(), "long"),
    (T.FloatType, pa.float32(), "float"),
    (T.DoubleType, pa.float64(), "double"),
    (T.BinaryType, pa.binary(), "bytes"),
    (T.DateType, pa.date32(), {"type": "int", "logicalType": "date"}),
    (T.TimestampType, pa.timestamp("us", tz="UTC"), {"type": "long", "logicalType": "timestamp-micros"}),
)


def _decimal_bytes(precision: int) -> int:
    """Spark's `minBytesForPrecision`: the Avro fixed size of a decimal."""
    size = 1
    while 2 ** (8 * size - 1) < 10 ** precision:
        size += 1
    return size


def _column_types(data_type: T.DataType, column: str, record: str) -> tuple[pa.DataType, Any]:
    """Arrow and Avro types of a Spark column, as Hudi's Spark-to-Avro conversion makes them."""
    if isinstance(data_type, T.DecimalType):
        avro = {"type": "fixed", "name": "fixed", "namespace": f"{record}.{column}",
                "size": _decimal_bytes(data_type.precision), "logicalType": "decimal",
                "precision": data_type.precision, "scale": data_type.scale}
        return pa.decimal128(data_type.precision, data_type.scale), avro
    for spark_type, arrow, avro in _SIMPLE_TYPES:
        if isinstance(data_type, spark_type):
            return arrow, avro
    raise WriteError(f"column {column!r}: Spark type {data_type.simpleString()} is not supported by the writer")


def _avro_name(name: str, what: str) -> str:
    if not _AVRO_NAME.match(name):
        raise WriteError(f"{what} {name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*)")
    return name


@dataclass(frozen=True, slots=True)
class RecordSchema:
    """The records of a write as Parquet (Arrow) and Avro see them, meta fields first."""

    columns: tuple[str, ...]
    arrow: pa.Schema
    avro: str  # with the meta fields: log block SCHEMA headers, Parquet footers
    data_avro: str  # without them: commit metadata `schema`, hoodie.table.create.schema
    micros: frozenset[str]  # timestamp columns, shipped from Spark as epoch microseconds

    def record(self, values: Sequence[Any]) -> dict[str, Any]:
        """A record shipped from Spark (data columns, record key, partition path) as Python values."""
        record = dict(zip((*self.columns, RECORD_KEY, PARTITION_PATH), values, strict=True))
        for column in self.micros:
            if record[column] is not None:
                record[column] = _EPOCH + timedelta(microseconds=record[column])
        return record


def record_schema(struct: T.StructType, table_name: str) -> RecordSchema:
    """The schema of records with `struct`'s columns in a table named `table_name`."""
    name = _avro_name(table_name, "table name")
    namespace, record = f"hoodie.{name}", f"{name}_record"
    meta = [{"name": field, "type": ["null", "string"], "doc": "", "default": None} for field in META_FIELDS]
    arrow_fields = [pa.field(field, pa.string()) for field in META_FIELDS]
    data = []
    for column in struct.fields:
        arrow, avro = _column_types(column.dataType, _avro_name(column.name, "column"), f"{namespace}.{record}")
        arrow_fields.append(pa.field(column.name, arrow))
        data.append({"name": column.name, "type": ["null", avro], "default": None})

    def avro_json(fields: list[dict[str, Any]]) -> str:
        return json.dumps({"type": "record", "name": record, "namespace": namespace, "fields": fields},
                          separators=(",", ":"))

    micros = frozenset(c.name for c in struct.fields if isinstance(c.dataType, T.TimestampType))
    return RecordSchema(tuple(struct.names), pa.schema(arrow_fields), avro_json(meta + data), avro_json(data), micros)


def _aligned(data: DataFrame, table: HudiTable) -> DataFrame:
    """The records with the table's columns in the table's order (schema evolution is not
    supported: other column sets are refused)."""
    raw = table.config.get(CREATE_SCHEMA)
    if not raw:
        return data
    columns = [field["name"] for field in json.loads(raw)["fields"]]
    if sorted(columns) != sorted(data.columns):
        raise WriteError(f"{table.uri}: the records' columns {sorted(data.columns)} differ from the table's "
                         f"{sorted(columns)}")
    return data.select(*columns)


# --- preparing the records (lazy, on Spark) ---------------------------------------------------


def _partition_path(spec: TableSpec) -> Any:
    """Hudi's SimpleKeyGenerator partition path: the value as a string, the Hive default for a
    null or empty one, `field=value` when hive-style."""
    if spec.partition_field is None:
        return F.lit("")
    value = F.col(spec.partition_field).cast("string")
    path = F.when(value.isNull() | (value == ""), F.lit(HIVE_DEFAULT_PARTITION)).otherwise(value)
    return F.concat(F.lit(f"{spec.partition_field}="), path) if spec.hive_style else path


def _keyed(data: DataFrame, spec: TableSpec, schema: RecordSchema) -> DataFrame:
    """Data columns (timestamps as epoch microseconds) with the record key and partition path."""
    columns = [F.unix_micros(F.col(c)).alias(c) if c in schema.micros else F.col(c) for c in schema.columns]
    return data.select(*columns, F.col(spec.record_key).cast("string").alias(RECORD_KEY),
                       _partition_path(spec).alias(PARTITION_PATH))


def _deduplicated(keyed: DataFrame, operation: Operation, precombine: str) -> DataFrame:
    """Upserts keep the record with the greatest ordering value per key; deletes one per key."""
    if operation is Operation.DELETE:
        return keyed.dropDuplicates([PARTITION_PATH, RECORD_KEY])
    if operation is not Operation.UPSERT:
        return keyed
    window = Window.partitionBy(PARTITION_PATH, RECORD_KEY).orderBy(F.col(precombine).desc())
    return keyed.withColumn("_rank", F.row_number().over(window)).where(F.col("_rank") == 1).drop("_rank")


# --- what tasks need --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommittedInstants:
    """The instants whose log blocks a reader applies: completed writes, and anything older
    than the active timeline (archived, hence completed)."""

    completed: frozenset[str]
    start: str | None

    @classmethod
    def of(cls, table: HudiTable) -> CommittedInstants:
        writes = table.timeline.writes()
        first = writes.first()
        return cls(frozenset(i.requested_time for i in writes.completed()), first.requested_time if first else None)

    def __contains__(self, instant: object) -> bool:
        if not isinstance(instant, str):
            return False
        return instant in self.completed or (self.start is not None and instant < self.start)


@dataclass(frozen=True, slots=True)
class InstantContext:
    """What every task working for one instant needs; shipped to the executors."""

    uri: str
    instant: str
    version: int
    precombine: str
    committed: CommittedInstants


@dataclass(frozen=True, slots=True)
class WriteContext:
    instant: InstantContext
    operation: Operation
    schema: RecordSchema


@dataclass(frozen=True, slots=True)
class FileGroupJob:
    """One file group a write task writes: a new one (CREATE), a copy-on-write rewrite of its
    latest slice (MERGE) or a log file on its latest slice (APPEND)."""

    partition: str
    file_id: str
    io_type: IOType
    slice: FileSlice | None = None


class _Task(NamedTuple):
    """The running Spark task: its partition id and Hudi write token."""

    partition_id: int
    token: str

    @classmethod
    def current(cls) -> _Task:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("the writer's file tasks run on Spark executors only")
        partition = context.partitionId()
        return cls(partition, f"{partition}-{context.stageId()}-{context.taskAttemptId()}")


class _Files:
    """The table's data files as the tasks of one instant read and write them."""

    def __init__(self, uri: str, instant: str) -> None:
        self.storage, self.base = storage_for(uri)
        self.instant = instant

    def path(self, partition: str, name: str) -> str:
        return Storage.join(self.base, partition, name)

    def read(self, partition: str, name: str) -> bytes:
        return self.storage.read(self.path(partition, name))

    def create(self, partition: str, name: str, data: bytes, io_type: IOType) -> int:
        """Write a new data file as Hudi does: partition metadata, marker, then the file.
        Returns its size."""
        self._ensure_partition(partition)
        marker = f"{name}.marker.{io_type.value}"
        self.storage.write(Storage.join(self.base, META_FOLDER, ".temp", self.instant, partition, marker), b"")
        self.storage.write(self.path(partition, name), data)
        return len(data)

    def _ensure_partition(self, partition: str) -> None:
        """`HoodiePartitionMetadata.trySave`: written once, by the first writer of a partition."""
        path = self.path(partition, ".hoodie_partition_metadata")
        if self.storage.exists(path):
            return
        depth = partition.count("/") + 1 if partition else 0
        text = properties.dumps({"commitTime": self.instant, "partitionDepth": str(depth)},
                                comments=["partition metadata", _java_date(datetime.now(timezone.utc))])
        with suppress(FileExists):  # another task of this write was first
            self.storage.write(path, text.encode("ascii"))


def _relative(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


# --- records, merging, files ------------------------------------------------------------------


def _ordering(value: Any) -> tuple[bool, Any]:
    """Sort key of an ordering value: null lowest."""
    return (value is not None, value)


def _upsert(records: dict[str, dict[str, Any]], record: dict[str, Any], field: str) -> None:
    """EVENT_TIME_ORDERING: the record replaces the stored one unless that orders higher."""
    key = record[RECORD_KEY]
    current = records.get(key)
    if current is None or _ordering(record.get(field)) >= _ordering(current.get(field)):
        records[key] = record


def _delete(records: dict[str, dict[str, Any]], delete: DeleteRecord, field: str) -> None:
    """Hudi's delete merge: a delete without an ordering value (Hudi writes 0) always wins; one
    with a value loses to a record of the same type that orders higher."""
    current = records.get(delete.record_key or "")
    value = None if delete.ordering_value is None else delete.ordering_value.value
    if current is None:
        return
    stored = current.get(field)
    if value in (None, 0) or stored is None or type(stored) is not type(value) or not stored > value:
        del records[delete.record_key or ""]


def _apply_log(data: bytes, path: str, records: dict[str, dict[str, Any]], field: str,
               committed: CommittedInstants) -> tuple[int, int]:
    """Merge the committed data and delete blocks of one log file into `records`; returns the
    records and blocks applied."""
    count = blocks = 0
    for block in read_blocks(data, path=path):
        if block.header.get(HeaderKey.INSTANT_TIME) not in committed:
            continue
        if block.block_type is BlockType.AVRO_DATA:
            for record in decode_avro_records(block.content, block.header[HeaderKey.SCHEMA], path=path):
                _upsert(records, record, field)
                count += 1
        elif block.block_type is BlockType.DELETE:
            for delete in decode_delete_records(block.content, path=path):
                _delete(records, delete, field)
                count += 1
        else:
            continue
        blocks += 1
    return count, blocks


class MergedSlice(NamedTuple):
    """A file slice read as its readers see it: base records, then the logs applied."""

    base: dict[str, dict[str, Any]]
    records: dict[str, dict[str, Any]]
    schema: pa.Schema | None
    log_records: int
    log_blocks: int
    log_bytes: int


def _merge_slice(files: _Files, partition: str, base_file: str | None, log_files: Sequence[str], field: str,
                 committed: CommittedInstants, columns: Sequence[str] | None = None) -> MergedSlice:
    table = pq.read_table(pa.BufferReader(files.read(partition, base_file)), columns=columns) if base_file else None
    base = {row[RECORD_KEY]: row for row in table.to_pylist()} if table is not None else {}
    records = dict(base)
    log_records = log_blocks = log_bytes = 0
    for name in log_files:
        data = files.read(partition, name)
        applied, blocks = _apply_log(data, files.path(partition, name), records, field, committed)
        log_records, log_blocks, log_bytes = log_records + applied, log_blocks + blocks, log_bytes + len(data)
    return MergedSlice(base, records, table.schema if table is not None else None, log_records, log_blocks, log_bytes)


def _stamped(records: Sequence[dict[str, Any]], instant: str, task: _Task, file_name: str) -> list[dict[str, Any]]:
    """Records with the meta fields of a write: commit time, sequence number, file."""
    return [{**record, COMMIT_TIME: instant, COMMIT_SEQNO: f"{instant}_{task.partition_id}_{index}",
             FILE_NAME: file_name} for index, record in enumerate(records)]


def _parquet(rows: Sequence[dict[str, Any]], schema: pa.Schema, avro: str | None) -> bytes:
    """A base file: gzip Parquet (Hudi's default codec) whose footer carries the Avro schema and
    the record key range, as Hudi's Parquet writer leaves them."""
    table = pa.Table.from_pylist(list(rows), schema=schema)
    footer = {"writer.model.name": "avro"}
    if avro:
        footer["parquet.avro.schema"] = avro
    if rows:
        keys = [row[RECORD_KEY] for row in rows]
        footer |= {"hoodie_min_record_key": min(keys), "hoodie_max_record_key": max(keys)}
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(footer), sink, compression="gzip")
    return sink.getvalue().to_pybytes()


def _delete_block(records: Sequence[dict[str, Any]], instant: str, avro: str) -> bytes:
    """A DELETE block as Hudi's delete operation writes it: keys with ordering value 0."""
    deletes = [DeleteRecord(r[RECORD_KEY], r[PARTITION_PATH], OrderingValue("IntWrapper", 0)) for r in records]
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: avro}
    return encode_block(BlockType.DELETE, header, encode_delete_records(deletes))


# --- write stats ------------------------------------------------------------------------------

# HoodieWriteStat in the field order of Hudi's v6 JSON, with Hudi's defaults.
_STAT_DEFAULTS: Mapping[str, Any] = {
    "fileId": "", "path": None, "cdcStats": None, "prevCommit": "null", "numWrites": 0, "numDeletes": 0,
    "numUpdateWrites": 0, "numInserts": 0, "totalWriteBytes": 0, "totalWriteErrors": 0, "tempPath": None,
    "partitionPath": None, "totalLogRecords": 0, "totalLogFilesCompacted": 0, "totalLogSizeCompacted": 0,
    "totalUpdatedRecordsCompacted": 0, "totalLogBlocks": 0, "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0,
    "fileSizeInBytes": 0, "minEventTime": None, "maxEventTime": None, "runtimeStats": None,
}


def _write_stat(**values: Any) -> dict[str, Any]:
    """A write stat: Hudi's fields and defaults, then any further fields in the order given."""
    return {**_STAT_DEFAULTS, **values}


def _runtime(started: float, phase: str) -> dict[str, int]:
    """`runtimeStats` with the elapsed milliseconds under `phase` ("create" or "upsert")."""
    elapsed = int((time.monotonic() - started) * 1000)
    return {"totalScanTime": 0, "totalUpsertTime": elapsed if phase == "upsert" else 0,
            "totalCreateTime": elapsed if phase == "create" else 0}


def _file_stat(partition: str, file_id: str, name: str, size: int, started: float, phase: str,
               **counts: Any) -> dict[str, Any]:
    """The write stat of one data file just written."""
    return _write_stat(fileId=file_id, path=_relative(partition, name), **counts, totalWriteBytes=size,
                       partitionPath=partition, fileSizeInBytes=size, runtimeStats=_runtime(started, phase))


# --- the tasks of a write ---------------------------------------------------------------------


def _create(ctx: WriteContext, job: FileGroupJob, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A new file group: one base file of inserts."""
    started, task = time.monotonic(), _Task.current()
    files = _Files(ctx.instant.uri, ctx.instant.instant)
    name = base_file_name(job.file_id, task.token, ctx.instant.instant)
    rows = _stamped(records, ctx.instant.instant, task, name)
    size = files.create(job.partition, name, _parquet(rows, ctx.schema.arrow, ctx.schema.avro), IOType.CREATE)
    return _file_stat(job.partition, job.file_id, name, size, started, "create", numWrites=len(rows),
                      numInserts=len(rows))


def _merge(ctx: WriteContext, job: FileGroupJob, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Copy-on-write: rewrite the latest base file with the updates or deletes merged in."""
    started, task = time.monotonic(), _Task.current()
    assert job.slice is not None and job.slice.base_file is not None
    files = _Files(ctx.instant.uri, ctx.instant.instant)
    current = _merge_slice(files, job.partition, job.slice.base_file.name, (), ctx.instant.precombine,
                           ctx.instant.committed).records
    matched = sum(1 for record in records if record[RECORD_KEY] in current)
    name = base_file_name(job.file_id, task.token, ctx.instant.instant)
    deleting = ctx.operation is Operation.DELETE
    for record in _stamped(records, ctx.instant.instant, task, name):
        if deleting:
            current.pop(record[RECORD_KEY], None)
        else:
            _upsert(current, record, ctx.instant.precombine)
    rows = [{**row, FILE_NAME: name} for row in current.values()]
    size = files.create(job.partition, name, _parquet(rows, ctx.schema.arrow, ctx.schema.avro), IOType.MERGE)
    return _file_stat(job.partition, job.file_id, name, size, started, "upsert", prevCommit=job.slice.base_instant_time,
                      numWrites=len(rows), numDeletes=matched if deleting else 0,
                      numUpdateWrites=0 if deleting else matched,
                      numInserts=0 if deleting else len(records) - matched)


def _log_target(ctx: WriteContext, slice_: FileSlice) -> tuple[str, int]:
    """The instant and version in a new log file's name: v6 the slice's base instant and the
    next version, v8 the delta commit itself and version 1."""
    if ctx.instant.version >= 8:
        return ctx.instant.instant, 1
    return slice_.base_instant_time, max((log.version for log in slice_.log_files), default=0) + 1


def _delta_fields(ctx: WriteContext, slice_: FileSlice, name: str, version: int) -> dict[str, Any]:
    """HoodieDeltaWriteStat's fields: v6 names the slice's files, v8 (as Hudi 1.x) only the new log."""
    if ctx.instant.version >= 8:
        return {"logVersion": version, "logOffset": 0, "baseFile": "", "logFiles": [name]}
    base = slice_.base_file.name if slice_.base_file else ""
    return {"logVersion": version, "logOffset": 0, "baseFile": base,
            "logFiles": [*(log.name for log in slice_.log_files), name], "recordsStats": {"val": None}}


def _append(ctx: WriteContext, job: FileGroupJob, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge-on-read: a new log file on the latest slice with one data or delete block."""
    started, task = time.monotonic(), _Task.current()
    assert job.slice is not None
    files = _Files(ctx.instant.uri, ctx.instant.instant)
    instant, version = _log_target(ctx, job.slice)
    name = log_file_name(job.file_id, instant, version, task.token)
    deleting = ctx.operation is Operation.DELETE
    if deleting:
        block = _delete_block(records, ctx.instant.instant, ctx.schema.avro)
    else:
        rows = _stamped(records, ctx.instant.instant, task, job.file_id)  # log records name the file group
        block = avro_data_block(rows, ctx.schema.avro, ctx.instant.instant)
    marker = IOType.CREATE if ctx.instant.version >= 8 else IOType.APPEND  # v8 logs get CREATE markers
    size = files.create(job.partition, name, block, marker)
    prev = ctx.instant.instant if ctx.instant.version >= 8 else job.slice.base_instant_time
    writes = 0 if deleting else len(records)
    return _file_stat(job.partition, job.file_id, name, size, started, "upsert", prevCommit=prev, numWrites=writes,
                      numDeletes=len(records) - writes, numUpdateWrites=writes,
                      **_delta_fields(ctx, job.slice, name, version))


_HANDLERS: Mapping[IOType, Callable[[WriteContext, FileGroupJob, list[dict[str, Any]]], dict[str, Any]]] = {
    IOType.CREATE: _create, IOType.MERGE: _merge, IOType.APPEND: _append,
}


def _write_group(ctx: WriteContext, jobs: Sequence[FileGroupJob], index: int,
                 rows: Iterable[tuple[int, tuple[Any, ...]]]) -> Iterator[dict[str, Any]]:
    """Runs on an executor: the one task of file group `jobs[index]`."""
    records = [ctx.schema.record(values) for _, values in rows]
    if records:
        job = jobs[index]
        yield _HANDLERS[job.io_type](ctx, job, records)


def _keys_in_slice(ctx: InstantContext, slice_: FileSlice) -> list[tuple[str, str, str]]:
    """Runs on an executor: (partition path, record key, file id) of every live record of a slice."""
    files = _Files(ctx.uri, ctx.instant)
    merged = _merge_slice(files, slice_.partition, slice_.base_file.name if slice_.base_file else None,
                          [log.name for log in slice_.log_files], ctx.precombine, ctx.committed,
                          columns=[RECORD_KEY, ctx.precombine])
    return [(slice_.partition, key, slice_.file_id) for key in merged.records]


def _by_job(row: Any) -> tuple[int, tuple[Any, ...]]:
    return int(row[0]), tuple(row[1:])


def _identity(job: int) -> int:
    return job


# --- planning on the driver -------------------------------------------------------------------

_KEYS = T.StructType([T.StructField(PARTITION_PATH, T.StringType()), T.StructField(RECORD_KEY, T.StringType()),
                      T.StructField(_FILE_ID, T.StringType())])
_ROUTES = T.StructType([T.StructField("_route_partition", T.StringType()),
                        T.StructField("_route_file_id", T.StringType()),
                        T.StructField("_route_first", T.LongType()), T.StructField("_route_buckets", T.LongType())])


def _target_slices(keyed: DataFrame, view: FileSystemView, operation: Operation) -> dict[tuple[str, str], FileSlice]:
    """The latest slices an upsert or delete may touch: those of the partitions written to."""
    latest = view.latest_slices() if operation.looks_up_keys else []
    if not latest:
        return {}
    partitions = {row[0] for row in keyed.select(PARTITION_PATH).distinct().collect()}
    return {(s.partition, s.file_id): s for s in latest if s.partition in partitions}


def _located(spark: SparkSession, keyed: DataFrame, operation: Operation, ctx: InstantContext,
             slices: Mapping[tuple[str, str], FileSlice]) -> DataFrame:
    """`keyed` with the file group holding each key, null for new keys (Hudi's SIMPLE index:
    one task per slice reads its keys). Deletes of keys not in the table are dropped."""
    if not operation.looks_up_keys:
        return keyed.withColumn(_FILE_ID, F.lit(None).cast("string"))
    found = spark.sparkContext.parallelize(list(slices.values()), max(1, len(slices)))
    keys = spark.createDataFrame(found.flatMap(partial(_keys_in_slice, ctx)), _KEYS)
    return keyed.join(keys, [PARTITION_PATH, RECORD_KEY], "inner" if operation is Operation.DELETE else "left")


@dataclass(frozen=True, slots=True)
class Profile:
    """Hudi's workload profile: records per partition bound for new file groups, and records
    per existing file group."""

    inserts: Mapping[str, int]
    updates: Mapping[tuple[str, str], int]

    @property
    def partitions(self) -> list[str]:
        return sorted({*self.inserts, *(partition for partition, _ in self.updates)})


def _profile(tagged: DataFrame, record_key: str) -> Profile:
    missing = F.col(RECORD_KEY).isNull() | (F.col(RECORD_KEY) == "")
    rows = tagged.groupBy(PARTITION_PATH, _FILE_ID).agg(
        F.count(F.lit(1)).alias("records"), F.sum(missing.cast("long")).alias("missing")).collect()
    without_key = sum(row["missing"] or 0 for row in rows)
    if without_key:
        raise WriteError(f"record key field {record_key!r} is null or empty in {without_key} records")
    return Profile(inserts={row[PARTITION_PATH]: row["records"] for row in rows if row[_FILE_ID] is None},
                   updates={(row[PARTITION_PATH], row[_FILE_ID]): row["records"] for row in rows
                            if row[_FILE_ID] is not None})


def _new_file_id() -> str:
    return f"{uuid.uuid4()}-0"


def _plan(profile: Profile, slices: Mapping[tuple[str, str], FileSlice], is_mor: bool,
          records_per_file: int) -> tuple[list[FileGroupJob], list[tuple[str, str | None, int, int]]]:
    """One job per file group to write, and the routes of records to jobs: (partition, file id
    or None for inserts, first job, number of jobs). Inserts of a partition are spread over
    enough new file groups to keep each under the maximum file size."""
    jobs: list[FileGroupJob] = []
    routes: list[tuple[str, str | None, int, int]] = []
    for partition, file_id in sorted(profile.updates):
        routes.append((partition, file_id, len(jobs), 1))
        jobs.append(FileGroupJob(partition, file_id, IOType.APPEND if is_mor else IOType.MERGE,
                                 slices[(partition, file_id)]))
    for partition, count in sorted(profile.inserts.items()):
        buckets = math.ceil(count / records_per_file)
        routes.append((partition, None, len(jobs), buckets))
        jobs += [FileGroupJob(partition, _new_file_id(), IOType.CREATE) for _ in range(buckets)]
    return jobs, routes


def _execute(spark: SparkSession, tagged: DataFrame, ctx: WriteContext, jobs: Sequence[FileGroupJob],
             routes: Sequence[tuple[str, str | None, int, int]]) -> list[dict[str, Any]]:
    """Route every record to its job (inserts by hash of the key among their partition's new
    file groups) and run one task per job."""
    if not jobs:
        return []
    table = F.broadcast(spark.createDataFrame(list(routes), _ROUTES))
    on = (tagged[PARTITION_PATH] == table["_route_partition"]) & tagged[_FILE_ID].eqNullSafe(table["_route_file_id"])
    job = F.col("_route_first") + F.pmod(F.xxhash64(RECORD_KEY), F.col("_route_buckets"))
    routed = tagged.join(table, on).select(job.alias(_JOB), *ctx.schema.columns, RECORD_KEY, PARTITION_PATH)
    pairs = routed.rdd.map(_by_job).partitionBy(len(jobs), _identity)
    return pairs.mapPartitionsWithIndex(partial(_write_group, ctx, jobs)).collect()


def _replaced(view: FileSystemView, profile: Profile, operation: Operation) -> dict[str, list[str]] | None:
    """`partitionToReplaceFileIds` of an overwrite: every live file group of the partitions
    written to, or of the whole table."""
    if not operation.replaces:
        return None
    partitions = view.partitions if operation is Operation.INSERT_OVERWRITE_TABLE else profile.partitions
    replaced = {p: sorted(s.file_id for s in view.latest_slices(p)) for p in partitions}
    return {p: ids for p, ids in replaced.items() if ids}


def _workload(profile: Profile, slices: Mapping[tuple[str, str], FileSlice]) -> dict[str, list[dict[str, Any]]]:
    """The inflight content's stats: per partition one insert stat, then one per updated group."""
    stats: dict[str, list[dict[str, Any]]] = {}
    for partition in profile.partitions:
        stats[partition] = [_write_stat(numInserts=profile.inserts.get(partition, 0))]
    for (partition, file_id), count in sorted(profile.updates.items()):
        stats[partition].append(_write_stat(fileId=file_id, prevCommit=slices[(partition, file_id)].base_instant_time,
                                            numUpdateWrites=count))
    return stats


def _commit_metadata(stats: Mapping[str, list[dict[str, Any]]], operation: str, schema: str | None, *,
                     compacted: bool = False, replaced: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """HoodieCommitMetadata (HoodieReplaceCommitMetadata with `replaced`), fields in Hudi's order."""
    content: dict[str, Any] = {"partitionToWriteStats": dict(stats), "compacted": compacted,
                               "extraMetadata": {"schema": schema} if schema else {}, "operationType": operation}
    if replaced is not None:
        content["partitionToReplaceFileIds"] = dict(replaced)
    return content


def _by_partition(stats: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for stat in sorted(stats, key=lambda s: (s["partitionPath"], s["fileId"])):
        grouped.setdefault(stat["partitionPath"], []).append(stat)
    return grouped


# --- the timeline -----------------------------------------------------------------------------

# HoodieRequestedReplaceMetadata of insert_overwrite: every field null, even the version.
_REQUESTED_OVERWRITE = {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}


def _publish(table: HudiTable, instant: Instant, content: Mapping[str, Any] | None) -> None:
    """Create one instant state file (never overwritten) in the table's metadata format."""
    layout = table.config.layout_version
    data = b"" if content is None else metadata.encode(content, action=instant.action, state=instant.state,
                                                       layout=layout)
    table.storage.write(Storage.join(table.base, table.config.timeline_folder, instant.file_name(layout)), data)


def _markers(table: HudiTable, instant: str) -> str:
    return Storage.join(table.base, META_FOLDER, ".temp", instant)


def _remove_unlisted(table: HudiTable, instant: str, written: set[str]) -> None:
    """Delete the data files of failed task attempts: marked, but in no write stat (Hudi's
    marker reconciliation before a commit)."""
    markers = _markers(table, instant)
    if not table.storage.exists(markers):
        return
    for marker in table.storage.list_recursive(markers):
        relative = marker.path[len(markers) + 1:].rsplit(".marker.", 1)[0]
        if relative not in written:
            table.storage.delete(Storage.join(table.base, relative))


def _complete(table: HudiTable, inflight: Instant, content: dict[str, Any]) -> Instant:
    """Publish the completed instant (v8: with a fresh completion time), then drop its markers."""
    written = {stat["path"] for stats in content["partitionToWriteStats"].values() for stat in stats}
    _remove_unlisted(table, inflight.requested_time, written)
    layout = table.config.layout_version
    completion = table.new_instant_time(after=inflight.requested_time) if layout >= 2 else None
    done = inflight.at(State.COMPLETED, completion)
    _publish(table, done, content)
    table.storage.delete_dir(_markers(table, inflight.requested_time))
    return done


def _start(table: HudiTable, requested: Instant, workload: dict[str, Any]) -> Instant:
    """Publish the requested instant (an overwrite's with its empty replace metadata), then
    the inflight one holding the workload profile."""
    _publish(table, requested, _REQUESTED_OVERWRITE if requested.action == REPLACE_COMMIT else None)
    inflight = requested.at(State.INFLIGHT)
    _publish(table, inflight, workload)
    return inflight


def _action(operation: Operation, is_mor: bool) -> str:
    if operation.replaces:
        return REPLACE_COMMIT
    return DELTA_COMMIT if is_mor else COMMIT


# --- the public API ---------------------------------------------------------------------------


def write(spark: SparkSession, df: DataFrame, path: str, *, table_name: str, record_key: str,
          precombine_field: str, partition_by: str | None, operation: str | Operation,
          table_type: str | TableType = TableType.COPY_ON_WRITE, table_version: int = 8,
          hive_style_partitioning: bool = False, max_file_size: int = DEFAULT_MAX_FILE_SIZE) -> str:
    """Write `df` to the Hudi table at `path` (created on first use) with `operation` (insert,
    upsert, delete, insert_overwrite, insert_overwrite_table; any case) and return the write's
    instant time.

    `record_key` and `partition_by` name one column each (`partition_by=None`: a non-partitioned
    table; `hive_style_partitioning`: `field=value` folders); `precombine_field` orders the
    records of one key. `table_type` is COPY_ON_WRITE or MERGE_ON_READ (or COW, MOR);
    `table_version` 6 or 8. Meta columns in `df` are ignored. New file groups hold about
    `max_file_size` bytes of records, estimated at 1 KiB each (Hudi's default estimate). An
    existing table must agree on type, version, keys and partitioning, and `df` must have the
    table's columns (deletes too: whole records, as read from the table). Raises WriteError
    before writing anything on bad input, MetadataTableEnabledError on a table whose metadata
    table is enabled (the writer does not maintain it)."""
    spec = _spec(table_name, table_type, table_version, record_key, precombine_field, partition_by,
                 hive_style_partitioning)
    try:
        op = Operation(operation.upper())
    except ValueError:
        raise WriteError(f"unknown operation {operation!r} ({', '.join(o.value.lower() for o in Operation)})") from None
    if max_file_size <= 0:
        raise WriteError(f"max_file_size must be positive, not {max_file_size}")
    data = df.drop(*META_FIELDS)
    wanted = [c for c in (record_key, precombine_field, partition_by) if c]
    if missing := [c for c in wanted if c not in data.columns]:
        raise WriteError(f"{path}: the records have no column {', '.join(map(repr, missing))}")
    table = _existing_table(path)
    if table is not None:
        _check_table(table, spec)
        data = _aligned(data, table)
    schema = record_schema(data.schema, spec.name)
    if table is None:
        table = _create_table(path, spec, schema)
    records_per_file = max(1, max_file_size // RECORD_SIZE_ESTIMATE)
    return _write(spark, table, spec, schema, op, _keyed(data, spec, schema), records_per_file)


def _write(spark: SparkSession, table: HudiTable, spec: TableSpec, schema: RecordSchema, operation: Operation,
           keyed: DataFrame, records_per_file: int) -> str:
    instant = table.new_instant_time()
    ctx = WriteContext(InstantContext(table.uri, instant, spec.version, spec.precombine_field,
                                      CommittedInstants.of(table)), operation, schema)
    view = table.file_system_view()
    keyed = _deduplicated(keyed, operation, spec.precombine_field)
    slices = _target_slices(keyed, view, operation)
    tagged = _located(spark, keyed, operation, ctx.instant, slices).persist()
    try:
        profile = _profile(tagged, spec.record_key)
        jobs, routes = _plan(profile, slices, table.config.is_mor, records_per_file)
        inflight = _start(table, Instant(instant, _action(operation, table.config.is_mor), State.REQUESTED),
                          _commit_metadata(_workload(profile, slices), operation.value, None))
        stats = _execute(spark, tagged, ctx, jobs, routes)
    finally:
        tagged.unpersist()
    content = _commit_metadata(_by_partition(stats), operation.value, schema.data_avro,
                               replaced=_replaced(view, profile, operation))
    _complete(table, inflight, content)
    return instant


def compact(spark: SparkSession, path: str) -> str | None:
    """Compact a merge-on-read table: run its pending compactions (a crashed one is resumed), or
    else schedule one over every latest file slice with a base file and log files and run it.
    Writes `<t>.compaction.requested` (HoodieCompactionPlan), `<t>.compaction.inflight`, one new
    base file per file group (one task each, base and committed log blocks merged), then the
    completed commit (`compacted: true`, operationType COMPACT). Returns the last compaction's
    instant time, None when there was nothing to compact."""
    table = HudiTable.open(path)
    if not table.config.is_mor:
        raise WriteError(f"{table.uri}: only merge-on-read tables are compacted")
    guard_metadata_table(table, drop=False, action="compacting")
    pending = [i.requested_time for i in table.timeline.pending_compactions()]
    if not pending:
        scheduled = _schedule_compaction(table)
        pending = [scheduled] if scheduled else []
    for instant in pending:
        _run_compaction(spark, table.reload(), instant)
    return pending[-1] if pending else None


def _compaction_operation(slice_: FileSlice) -> dict[str, Any]:
    """A HoodieCompactionOperation (plan version 2: file names relative to the partition) with
    the metrics of Hudi's default strategy."""
    assert slice_.base_file is not None
    logs = sum(log.size for log in slice_.log_files)
    read, written = (slice_.base_file.size + logs) // _MB, slice_.base_file.size // _MB
    return {"baseInstantTime": slice_.base_instant_time, "deltaFilePaths": [log.name for log in slice_.log_files],
            "dataFilePath": slice_.base_file.name, "fileId": slice_.file_id, "partitionPath": slice_.partition,
            "metrics": {"TOTAL_LOG_FILES": float(len(slice_.log_files)), "TOTAL_IO_READ_MB": float(read),
                        "TOTAL_IO_WRITE_MB": float(written), "TOTAL_IO_MB": float(read + written),
                        "TOTAL_LOG_FILES_SIZE": float(logs)},
            "bootstrapFilePath": None}


def _schedule_compaction(table: HudiTable) -> str | None:
    slices = [s for s in table.file_system_view().latest_slices() if s.log_files and s.base_file]
    if not slices:
        return None
    instant = table.new_instant_time()
    plan = {"operations": [_compaction_operation(s) for s in slices], "extraMetadata": None, "version": 2,
            "strategy": None, "preserveHoodieMetadata": False}
    _publish(table, Instant(instant, COMPACTION, State.REQUESTED), plan)
    return instant


def _compact_group(ctx: InstantContext, operation: Mapping[str, Any]) -> dict[str, Any]:
    """Runs on an executor: merge one file group's base file and logs into a new base file."""
    started, task = time.monotonic(), _Task.current()
    partition, file_id, base = operation.get("partitionPath") or "", operation["fileId"], operation["dataFilePath"]
    files = _Files(ctx.uri, ctx.instant)
    logs = operation.get("deltaFilePaths") or []
    merged = _merge_slice(files, partition, base, logs, ctx.precombine, ctx.committed)
    assert merged.schema is not None
    name = base_file_name(file_id, task.token, ctx.instant)
    rows = [{**row, FILE_NAME: name} for row in merged.records.values()]
    footer = (merged.schema.metadata or {}).get(b"parquet.avro.schema")
    size = files.create(partition, name, _parquet(rows, merged.schema.remove_metadata(),
                                                  footer.decode() if footer else None), IOType.MERGE)
    updated = sum(1 for key, row in merged.records.items() if key in merged.base and row is not merged.base[key])
    extra = {"prevBaseFile": base} if ctx.version >= 8 else {}
    return _file_stat(partition, file_id, name, size, started, "upsert", prevCommit=operation["baseInstantTime"],
                      numWrites=len(rows), numDeletes=sum(1 for key in merged.base if key not in merged.records),
                      numUpdateWrites=updated, numInserts=len(rows) - updated, totalLogRecords=merged.log_records,
                      totalLogFilesCompacted=len(logs), totalLogSizeCompacted=merged.log_bytes,
                      totalUpdatedRecordsCompacted=updated, totalLogBlocks=merged.log_blocks, **extra)


def _run_compaction(spark: SparkSession, table: HudiTable, instant: str) -> None:
    requested = Instant(instant, COMPACTION, State.REQUESTED)
    plan = table.read_instant(requested, State.REQUESTED) or {}
    operations = list(plan.get("operations") or ())
    log_only = [f"{op.get('partitionPath') or ''}/{op['fileId']}" for op in operations if not op.get("dataFilePath")]
    if log_only:
        raise WriteError(f"{table.uri}: compaction {instant} includes file groups without a base file "
                         f"({', '.join(log_only)}); this writer compacts only file groups with one")
    inflight = requested.at(State.INFLIGHT)
    with suppress(FileExists):  # present when a crashed run is resumed
        _publish(table, inflight, None)
    ctx = InstantContext(table.uri, instant, table.version, table.config.get(PRECOMBINE_FIELD) or "",
                         CommittedInstants.of(table))
    stats = spark.sparkContext.parallelize(operations, max(1, len(operations))).map(
        partial(_compact_group, ctx)).collect() if operations else []
    content = _commit_metadata(_by_partition(stats), "COMPACT", table.config.get(CREATE_SCHEMA), compacted=True)
    _complete(table, inflight, content)
