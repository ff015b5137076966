"""Record semantics: Hudi's EVENT_TIME_ORDERING (`DefaultHoodieRecordPayload`). An upsert keeps,
per key, the incoming record with the greatest ordering (precombine) value and replaces a stored
record unless the stored one orders higher; a delete removes the key. A file slice is read as
its readers see it: the base file, then the data and delete blocks of committed instants."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from timeline.logformat import (
    BlockType,
    DeleteRecord,
    HeaderKey,
    decode_avro_records,
    decode_delete_records,
    read_blocks,
)
from timeline.services.merge import CommittedInstants  # shared with the local compactor
from timeline.spark.writer.files import Files
from timeline.spark.writer.model import PARTITION_PATH, RECORD_KEY, Operation


def deduplicated(keyed: DataFrame, operation: Operation, precombine: str) -> DataFrame:
    """Upserts keep the record with the greatest ordering value per key; deletes one per key."""
    if operation is Operation.DELETE:
        return keyed.dropDuplicates([PARTITION_PATH, RECORD_KEY])
    if operation is not Operation.UPSERT:
        return keyed
    window = Window.partitionBy(PARTITION_PATH, RECORD_KEY).orderBy(F.col(precombine).desc())
    return keyed.withColumn("_rank", F.row_number().over(window)).where(F.col("_rank") == 1).drop("_rank")


def _ordering(value: Any) -> tuple[bool, Any]:
    """Sort key of an ordering value: null lowest."""
    return (value is not None, value)


def upsert(records: dict[str, dict[str, Any]], record: dict[str, Any], field: str) -> None:
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
                upsert(records, record, field)
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


def merge_slice(files: Files, partition: str, base_file: str | None, log_files: Sequence[str], field: str,
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
