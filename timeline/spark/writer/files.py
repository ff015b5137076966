"""The data files of a write as its tasks make them: partition metadata and a marker before each
file, gzip Parquet base files, log blocks, and the write stat of every file written."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext

from timeline import properties
from timeline.config import META_FOLDER
from timeline.exceptions import FileExists
from timeline.logformat import BlockType, DeleteRecord, HeaderKey, OrderingValue, encode_block, encode_delete_records
from timeline.metadata.written import partition_metafile, runtime_stats, write_stat
from timeline.spark.writer.create import java_date
from timeline.spark.writer.model import COMMIT_SEQNO, COMMIT_TIME, FILE_NAME, PARTITION_PATH, RECORD_KEY, IOType
from timeline.storage import Storage, storage_for


class Task(NamedTuple):
    """The running Spark task: its partition id and Hudi write token."""

    partition_id: int
    token: str

    @classmethod
    def current(cls) -> Task:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("the writer's file tasks run on Spark executors only")
        partition = context.partitionId()
        return cls(partition, f"{partition}-{context.stageId()}-{context.taskAttemptId()}")


class Files:
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
        text = properties.dumps(partition_metafile(self.instant, depth),
                                comments=["partition metadata", java_date(datetime.now(UTC))])
        with suppress(FileExists):  # another task of this write was first
            self.storage.write(path, text.encode("ascii"))


def relative(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def stamped(records: Sequence[dict[str, Any]], instant: str, task: Task, file_name: str) -> list[dict[str, Any]]:
    """Records with the meta fields of a write: commit time, sequence number, file."""
    return [{**record, COMMIT_TIME: instant, COMMIT_SEQNO: f"{instant}_{task.partition_id}_{index}",
             FILE_NAME: file_name} for index, record in enumerate(records)]


def parquet(rows: Sequence[dict[str, Any]], schema: pa.Schema, avro: str | None) -> bytes:
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
    data: bytes = sink.getvalue().to_pybytes()
    return data


def delete_block(records: Sequence[dict[str, Any]], instant: str, avro: str) -> bytes:
    """A DELETE block as Hudi's delete operation writes it: keys with ordering value 0."""
    deletes = [DeleteRecord(r[RECORD_KEY], r[PARTITION_PATH], OrderingValue("IntWrapper", 0)) for r in records]
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: avro}
    return encode_block(BlockType.DELETE, header, encode_delete_records(deletes))


def _runtime(started: float, phase: str) -> dict[str, int]:
    """`runtimeStats` with the elapsed milliseconds under `phase` ("create" or "upsert")."""
    elapsed = int((time.monotonic() - started) * 1000)
    return runtime_stats(upsert_ms=elapsed if phase == "upsert" else 0, create_ms=elapsed if phase == "create" else 0)


def file_stat(partition: str, file_id: str, name: str, size: int, started: float, phase: str,
              **counts: Any) -> dict[str, Any]:
    """The write stat of one data file just written."""
    return write_stat(file_id=file_id, path=relative(partition, name), **counts, total_write_bytes=size,
                      partition_path=partition, file_size_in_bytes=size, runtime_stats=_runtime(started, phase))
