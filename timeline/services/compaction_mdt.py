"""The metadata table's records for a compaction's new base files, as Hudi 1.x writes them with
a COMPACT commit (`HoodieBackedTableMetadataWriter.update` -> `HoodieTableMetadataUtil`):

- `files`: the new base files (`convertMetadataToFilesPartitionRecords`, `commit_updates`);
- `column_stats`: one record per new base file and indexed column, from the file's Parquet
  footer (`convertMetadataToColumnStatsRecords` -> `readColumnRangeMetadataFrom`:
  min/max, value count, null count, compressed and uncompressed sizes of the column chunks),
  the value wrapped as Hudi 1.0 (table version 8: `HoodieAvroUtils.wrapValueIntoAvro`) or 1.1
  (version 9, index version 2 with `valueType`) wraps it; the indexed columns are those the
  partition holds stats for;
- `partition_stats`: with `column_stats` available, tight-bound stats per touched partition and
  column over the new files and the column stats of every other file of the partition's latest
  slices (`convertMetadataToPartitionStatsRecords` with `isShouldScanColStatsForTightBound`,
  `FileFormatUtils.getColumnRangeInPartition`);
- nothing for `record_index` (`convertMetadataToRecordIndexRecords` returns early for COMPACT) or
  secondary indexes (a compaction changes no key's value; the fixtures' Hudi-written compactions
  hold none)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from timeline.exceptions import CleanlineError
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import COLUMN_STATS, MdtUpdate, commit_updates
from timeline.metadata.mdt_payload import (
    TYPE_COLUMN_STATS,
    MetadataRecord,
    column_stats_key,
    partition_identifier,
    partition_stats_key,
)
from timeline.metadata.records import CommitMetadata

PARTITION_STATS = "partition_stats"
TYPE_PARTITION_STATS = 6          # MetadataPartitionType.PARTITION_STATS record type
_NS = "org.apache.hudi.avro.model."
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Hudi 1.1's ValueType ordinals for the Parquet types seen in Hudi-written column stats
# (`HoodieValueTypeInfo.typeOrdinal`), used when no existing record of the column gives one
_VALUE_TYPES = {"bool": 2, "int64": 4, "string": 7, "decimal": 10, "date32": 12, "timestamp[us]": 16}


class ColumnStatsUnsupported(CleanlineError):
    """A column whose statistics Cleanline does not know how to write as Hudi does."""


def _kind(arrow_type: pa.DataType) -> str:
    if pa.types.is_decimal(arrow_type):
        return "decimal"
    if pa.types.is_timestamp(arrow_type):
        return f"timestamp[{arrow_type.unit}]"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_date32(arrow_type):
        return "date32"
    return str(arrow_type)


def _unscaled(value: Decimal, scale: int) -> bytes:
    """A decimal's unscaled value as Java's `BigInteger.toByteArray` (big-endian, minimal two's
    complement)."""
    number = int(value.scaleb(scale))
    length = max(1, (number + (number < 0)).bit_length() // 8 + 1)
    return number.to_bytes(length, "big", signed=True)


def wrap(value: Any, arrow_type: pa.DataType, table_version: int) -> tuple[str, dict[str, Any]] | None:
    """An ordering or stats value in the Avro wrapper Hudi uses (tuple notation for fastavro)."""
    if value is None:
        return None
    kind = _kind(arrow_type)
    v9 = table_version >= 9
    if kind == "string":
        return (_NS + "StringWrapper", {"value": str(value)})
    if kind == "bool":
        return (_NS + "BooleanWrapper", {"value": bool(value)})
    if kind in ("int8", "int16", "int32"):
        return (_NS + "IntWrapper", {"value": int(value)})
    if kind == "int64":
        return (_NS + "LongWrapper", {"value": int(value)})
    if kind == "float":
        return (_NS + "FloatWrapper", {"value": float(value)})
    if kind == "double":
        return (_NS + "DoubleWrapper", {"value": float(value)})
    if kind == "date32":
        days = (value - dt.date(1970, 1, 1)).days
        return (_NS + ("IntWrapper" if v9 else "DateWrapper"), {"value": days})
    if kind.startswith("timestamp["):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        delta = moment - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        number = micros // 1000 if kind == "timestamp[ms]" else micros
        return (_NS + ("LongWrapper" if v9 else "TimestampMicrosWrapper"), {"value": number})
    if kind == "decimal":
        if v9:
            return (_NS + "BytesWrapper", {"value": _unscaled(Decimal(value), arrow_type.scale)})
        return (_NS + "DecimalWrapper", {"value": Decimal(value)})
    if kind == "binary":
        return (_NS + "BytesWrapper", {"value": bytes(value)})
    raise ColumnStatsUnsupported(f"column stats of a {arrow_type} column are not written by Cleanline")


def _comparable(wrapped: tuple[str, Mapping[str, Any]] | Mapping[str, Any] | None, decimal: bool) -> Any:
    if wrapped is None:
        return None
    value = wrapped[1]["value"] if isinstance(wrapped, tuple) else wrapped.get("value")
    if decimal and isinstance(value, bytes):
        return int.from_bytes(value, "big", signed=True) if value else 0
    return value


def file_column_stats(metadata: pq.FileMetaData, schema: pa.Schema, file_name: str, columns: Iterable[str],
                      table_version: int, value_types: Mapping[str, Any], *,
                      strict: bool = True) -> dict[str, dict[str, Any]]:
    """column -> ColumnStatsMetadata of one Parquet file (`ParquetUtils.readColumnStatsFromMetadata`
    folded over row groups: `HoodieColumnRangeMetadata.merge`). Not `strict`: columns of a type
    Cleanline does not write stats for are left out rather than refused."""
    index = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    out: dict[str, dict[str, Any]] = {}
    for column in columns:
        if column not in index or column not in schema.names:
            continue
        arrow_type = schema.field(column).type
        if not strict:
            try:
                _kind_supported(arrow_type)
            except ColumnStatsUnsupported:
                continue
        low = high = None
        nulls = values = size = raw = 0
        for g in range(metadata.num_row_groups):
            chunk = metadata.row_group(g).column(index[column])
            stats = chunk.statistics
            values += chunk.num_values
            size += chunk.total_compressed_size
            raw += chunk.total_uncompressed_size
            if stats is None:
                continue
            nulls += stats.null_count or 0
            if stats.has_min_max:
                low = stats.min if low is None or stats.min < low else low
                high = stats.max if high is None or stats.max > high else high
        entry: dict[str, Any] = {
            "fileName": file_name, "columnName": column, "minValue": wrap(low, arrow_type, table_version),
            "maxValue": wrap(high, arrow_type, table_version), "valueCount": values, "nullCount": nulls,
            "totalSize": size, "totalUncompressedSize": raw, "isDeleted": False, "isTightBound": False}
        if table_version >= 9:  # index version 2 (Hudi 1.1): the value's type travels with it
            kind = _kind(arrow_type)
            found = value_types.get(column)
            if kind in _VALUE_TYPES or not isinstance(found, Mapping):
                entry["valueType"] = {"typeOrdinal": _VALUE_TYPES.get(kind, 0), "additionalInfo":
                                      f"{arrow_type.precision},{arrow_type.scale}" if kind == "decimal" else None}
            else:
                entry["valueType"] = dict(found)
        out[column] = entry
    return out


def _kind_supported(arrow_type: pa.DataType) -> None:
    """ColumnStatsUnsupported for a type `wrap` refuses."""
    kind = _kind(arrow_type)
    known = {"string", "bool", "int8", "int16", "int32", "int64", "float", "double", "date32", "decimal", "binary"}
    if kind not in known and not kind.startswith("timestamp["):
        raise ColumnStatsUnsupported(f"column stats of a {arrow_type} column are not written by Cleanline")


def _merge(entries: Sequence[Mapping[str, Any]], decimal: bool) -> dict[str, Any]:
    """`FileFormatUtils.getColumnRangeInPartition`: min of mins, max of maxes, counts summed."""
    low = high = None
    low_key = high_key = None
    for e in entries:
        for side in ("minValue", "maxValue"):
            value = e.get(side)
            key = _comparable(value, decimal)
            if key is None:
                continue
            if low_key is None or key < low_key:
                low, low_key = value, key
            if high_key is None or key > high_key:
                high, high_key = value, key
    return {"minValue": low, "maxValue": high,
            "valueCount": sum(int(e.get("valueCount") or 0) for e in entries),
            "nullCount": sum(int(e.get("nullCount") or 0) for e in entries),
            "totalSize": sum(int(e.get("totalSize") or 0) for e in entries),
            "totalUncompressedSize": sum(int(e.get("totalUncompressedSize") or 0) for e in entries)}


def _rewrapped(raw: Mapping[str, Any], arrow_type: pa.DataType | None, version: int) -> dict[str, Any]:
    """An existing record's ColumnStatsMetadata with its values back in wrapper notation (the
    reader decodes them without the wrapper's name)."""
    entry = dict(raw)
    for side in ("minValue", "maxValue"):
        value = entry.get(side)
        if isinstance(value, Mapping) and arrow_type is not None:
            inner = value.get("value")
            if pa.types.is_decimal(arrow_type) and isinstance(inner, bytes):
                entry[side] = (_NS + "BytesWrapper", {"value": inner})
            elif pa.types.is_date(arrow_type) and isinstance(inner, int):
                entry[side] = (_NS + ("IntWrapper" if version >= 9 else "DateWrapper"), {"value": inner})
            elif pa.types.is_timestamp(arrow_type) and isinstance(inner, int):
                entry[side] = (_NS + ("LongWrapper" if version >= 9 else "TimestampMicrosWrapper"), {"value": inner})
            else:
                entry[side] = wrap(inner, arrow_type, version) if inner is not None else None
    return entry


def compaction_updates(mdt: MetadataTable, metadata: CommitMetadata,
                       new_files: Mapping[tuple[str, str], tuple[Mapping[str, Mapping[str, Any]], pa.Schema]],
                       latest_files: Mapping[str, set[str]]) -> list[MdtUpdate]:
    """The metadata table's update for a compaction (see the module's docstring). `new_files`:
    (partition, name) -> the column stats of every column of the new base file
    (`file_column_stats`, not strict, no value types given) and its Arrow schema; `latest_files`:
    partition -> the file names of the partition's latest slices once the compaction completes
    (the new base files among them)."""
    updates = commit_updates(metadata)
    config = mdt.table.config
    enabled = {*config.metadata_partitions, *config.metadata_partitions_inflight}
    if COLUMN_STATS not in enabled:
        return updates
    version = mdt.table.config.version
    existing = mdt.records(COLUMN_STATS)
    live = [r.raw["ColumnStatsMetadata"] for r in existing.values()
            if not r.is_deleted and isinstance(r.raw.get("ColumnStatsMetadata"), Mapping)]
    columns = sorted({str(e["columnName"]) for e in live})
    value_types = {str(e["columnName"]): e.get("valueType") for e in live if e.get("valueType")}
    records: list[MetadataRecord] = []
    by_partition: dict[str, list[dict[str, Any]]] = {}
    types: dict[str, pa.DataType] = {}
    for (partition, name), (computed, schema) in sorted(new_files.items()):
        types |= {f.name: f.type for f in schema}
        stats = {}
        for column in columns:
            if column not in schema.names:
                continue
            if column not in computed:
                raise ColumnStatsUnsupported(f"{name}: column stats of the {schema.field(column).type} column "
                                             f"{column} are not written by Cleanline")
            entry = dict(computed[column])
            if version >= 9 and _kind(schema.field(column).type) not in _VALUE_TYPES \
                    and isinstance(value_types.get(column), Mapping):
                entry["valueType"] = dict(value_types[column])
            stats[column] = entry
        identifier = partition_identifier(partition)
        for column, entry in stats.items():
            records.append(MetadataRecord(column_stats_key(column, identifier, name), TYPE_COLUMN_STATS, None,
                                          {"ColumnStatsMetadata": entry}))
            by_partition.setdefault(partition, []).append(entry)
    if records:
        updates.append(MdtUpdate(COLUMN_STATS, tuple(records)))
    if PARTITION_STATS not in enabled:
        return updates
    stats_records: list[MetadataRecord] = []
    for partition, fresh in sorted(by_partition.items()):
        identifier = partition_identifier(partition)
        names = latest_files.get(partition, set())
        prefixes = {partition_stats_key(c, identifier): c for c in columns}
        others = [_rewrapped(r.raw["ColumnStatsMetadata"], types.get(c), version)
                  for key, r in existing.items() if not r.is_deleted
                  and (c := prefixes.get(key[:24])) is not None
                  and isinstance(r.raw.get("ColumnStatsMetadata"), Mapping)
                  and r.raw["ColumnStatsMetadata"].get("fileName") in names]
        fresh_type = {str(e["columnName"]): e.get("valueType") for e in fresh}
        for column in columns:
            entries = [e for e in [*fresh, *others] if e.get("columnName") == column]
            if not entries:
                continue
            arrow_type = types.get(column)
            merged = _merge(entries, arrow_type is not None and pa.types.is_decimal(arrow_type))
            entry = {"fileName": partition, "columnName": column, **merged, "isDeleted": False,
                     "isTightBound": True}
            if version >= 9:
                entry["valueType"] = fresh_type.get(column, entries[0].get("valueType"))
            stats_records.append(MetadataRecord(partition_stats_key(column, identifier), TYPE_PARTITION_STATS, None,
                                                {"ColumnStatsMetadata": entry}))
    if stats_records:
        updates.append(MdtUpdate(PARTITION_STATS, tuple(stats_records)))
    return updates


__all__ = ["PARTITION_STATS", "ColumnStatsUnsupported", "compaction_updates", "file_column_stats", "wrap"]
