"""The metadata table's records (`HoodieMetadataRecord`, hudi-common's HoodieMetadata.avsc) and
how two records of one key merge (`HoodieMetadataPayload.preCombine` and
`HoodieTableMetadataUtil.combineFileSystemMetadata`).

A record is stored as an HFile cell: the row is the record key, the value the Avro binary of
the record written with the schema the HFile's file info (base files) or the log block's SCHEMA
header names, with its `key` field emptied (`HFileUtils.serializeRecordsToLogBlock`: the key
is the row). Only the `files` partition's records are typed here (type 1, the partition list
under `__all_partitions__`; type 2, one partition's files under its path, "." for a
non-partitioned table); the other record types are kept as decoded.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import fastavro
import xxhash

from timeline.exceptions import CorruptInstantError

PARTITION_LIST_KEY = "__all_partitions__"   # HoodieTableMetadata.RECORDKEY_PARTITION_LIST
NON_PARTITIONED_NAME = "."                  # HoodieTableMetadataUtil.NON_PARTITIONED_NAME
TYPE_PARTITION_LIST = 1                     # MetadataPartitionType.ALL_PARTITIONS
TYPE_FILES = 2                              # MetadataPartitionType.FILES
TYPE_COLUMN_STATS = 3
TYPE_BLOOM_FILTER = 4


class FileInfo(NamedTuple):
    """HoodieMetadataFileInfo: a file's size, or a tombstone (size 0, deleted)."""

    size: int
    deleted: bool = False


DELETED = FileInfo(0, True)  # HoodieMetadataPayload.DELETE_FILE_METADATA


@dataclass(frozen=True)
class MetadataRecord:
    """One metadata record. `files` holds a `files`-partition record's map (file or partition
    name -> FileInfo); `raw` the decoded record as written, for every type."""

    key: str
    type: int
    files: Mapping[str, FileInfo] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_deleted(self) -> bool:
        """An index entry marked deleted (`HoodieMetadataPayload.isDeleted`): readers skip it."""
        for name in ("ColumnStatsMetadata", "BloomFilterMetadata", "SecondaryIndexMetadata"):
            entry = self.raw.get(name)
            if isinstance(entry, Mapping) and entry.get("isDeleted"):
                return True
        return False

    @property
    def column_stats(self) -> tuple[str, str] | None:
        """(file name, column name) of a column-stats record."""
        entry = self.raw.get("ColumnStatsMetadata")
        return (str(entry.get("fileName")), str(entry.get("columnName"))) if isinstance(entry, Mapping) else None

    def present(self) -> list[str]:
        """`HoodieMetadataPayload.getFilenames`: the names not marked deleted."""
        return sorted(name for name, info in (self.files or {}).items() if not info.deleted)


# HashID: XXHash64 with the seed 0xdabadaba, passed as a Java int (sign-extended to a long).
_HASH_SEED = 0xFFFFFFFFDABADABA


def _hash_id(text: str) -> str:
    return base64.b64encode(xxhash.xxh64(text.encode(), seed=_HASH_SEED).digest()).decode()


def _file_id(file_name: str) -> str:
    return base64.b64encode(hashlib.md5(file_name.encode()).digest()).decode()  # FileIndexID: MD5, not security


def column_stats_key(column: str, identifier: str, file_name: str) -> str:
    """`HoodieMetadataPayload.getColumnStatsIndexKey`: ColumnIndexID + PartitionIndexID + FileIndexID."""
    return _hash_id(column) + _hash_id(identifier) + _file_id(file_name)


def partition_stats_key(column: str, identifier: str) -> str:
    """`HoodieMetadataPayload.getPartitionStatsIndexKey`: ColumnIndexID + PartitionIndexID."""
    return _hash_id(column) + _hash_id(identifier)


def bloom_filter_key(identifier: str, file_name: str) -> str:
    """`HoodieMetadataPayload.getBloomFilterIndexKey`: PartitionIndexID + FileIndexID."""
    return _hash_id(identifier) + _file_id(file_name)


def column_stats_tombstone(key: str, file_name: str, column: str, *, value_type: bool) -> MetadataRecord:
    """`HoodieColumnRangeMetadata.stub` as a deleted column-stats record: no range, counts -1;
    `value_type` (index version 2, table version 9) adds the NULL value type."""
    entry = {"fileName": file_name, "columnName": column, "minValue": None, "maxValue": None, "valueCount": -1,
             "nullCount": -1, "totalSize": -1, "totalUncompressedSize": -1, "isDeleted": True, "isTightBound": False,
             "valueType": {"typeOrdinal": 0, "additionalInfo": None} if value_type else None}
    return MetadataRecord(key, TYPE_COLUMN_STATS, None, {"ColumnStatsMetadata": entry})


def bloom_filter_tombstone(key: str, instant_time: str) -> MetadataRecord:
    """`HoodieMetadataPayload.createBloomFilterMetadataRecord(..., isDeleted=true)`."""
    entry = {"type": "", "timestamp": instant_time, "bloomFilter": b"", "isDeleted": True}
    return MetadataRecord(key, TYPE_BLOOM_FILTER, None, {"BloomFilterMetadata": entry})


def partition_identifier(partition: str) -> str:
    """`HoodieTableMetadataUtil.getPartitionIdentifierForFilesPartition`: "." for the table's
    root (a non-partitioned table), the relative path otherwise."""
    return partition if partition else NON_PARTITIONED_NAME


def partition_of(identifier: str) -> str:
    return "" if identifier == NON_PARTITIONED_NAME else identifier


@lru_cache(maxsize=16)
def parsed_schema(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


def decode_record(row: bytes, value: bytes, schema_json: str, *, path: str) -> MetadataRecord:
    """The record of one HFile cell (row = key)."""
    try:
        raw = fastavro.schemaless_reader(io.BytesIO(value), parsed_schema(schema_json), None)
    except Exception as exc:  # fastavro raises many types for bad input
        raise CorruptInstantError(path, f"metadata record {row!r}: {exc!r}") from exc
    if not isinstance(raw, dict):
        raise CorruptInstantError(path, f"metadata record {row!r} is no record")
    key = row.decode()
    kind = int(raw.get("type") or 0)
    files = None
    if kind in (TYPE_PARTITION_LIST, TYPE_FILES):
        entries = raw.get("filesystemMetadata") or {}
        files = {str(name): FileInfo(int(info.get("size") or 0), bool(info.get("isDeleted")))
                 for name, info in entries.items()}
    return MetadataRecord(key, kind, files, raw)


def encode_record(record: MetadataRecord, schema_json: str) -> bytes:
    """The HFile cell value of a record: Avro binary with `key` emptied; fields the record does
    not set are null (meta fields included, when the schema has them)."""
    schema = parsed_schema(schema_json)
    datum: dict[str, Any] = {f["name"]: None for f in json.loads(schema_json)["fields"]}
    datum.update({k: v for k, v in record.raw.items() if k in datum})
    datum["key"] = ""
    datum["type"] = record.type
    if record.files is not None:
        datum["filesystemMetadata"] = {name: {"size": info.size, "isDeleted": info.deleted}
                                       for name, info in record.files.items()}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, datum)
    return out.getvalue()


def files_record(identifier: str, *, added: Mapping[str, int] | None = None,
                 deleted: list[str] | tuple[str, ...] = ()) -> MetadataRecord:
    """`HoodieMetadataPayload.createPartitionFilesRecord`: added files with their sizes (each
    > 0) and tombstones for deleted ones, under a partition identifier."""
    files = {name: DELETED for name in deleted}
    for name, size in (added or {}).items():
        if size <= 0:
            raise ValueError(f"{identifier}/{name}: an added file needs a size above 0")
        files[name] = FileInfo(size)
    return MetadataRecord(identifier, TYPE_FILES, files)


def partition_list_record(identifiers: list[str] | tuple[str, ...], *, deleted: bool) -> MetadataRecord:
    """`HoodieMetadataPayload.createPartitionListRecord`: partitions added or (tombstones) deleted."""
    info = DELETED if deleted else FileInfo(0)
    return MetadataRecord(PARTITION_LIST_KEY, TYPE_PARTITION_LIST, {p: info for p in identifiers})


def combine(older: MetadataRecord | None, newer: MetadataRecord | None) -> MetadataRecord | None:
    """`HoodieMetadataPayload.preCombine` with `newer` as `this`; None is a deleted record (a
    delete block's key). A delete wins over anything older; a record after a delete stands alone;
    `files` records merge their maps, other types keep the newer record (column and partition
    stats merging is not needed by the actions Cleanline runs and is not done here)."""
    if newer is None or older is None:
        return newer
    if newer.files is None or older.files is None or newer.type != older.type:
        return newer
    return MetadataRecord(newer.key, newer.type, combine_files(older.files, newer.files), newer.raw)


def combine_files(older: Mapping[str, FileInfo], newer: Mapping[str, FileInfo]) -> dict[str, FileInfo]:
    """`HoodieTableMetadataUtil.combineFileSystemMetadata`: a tombstone cancels an earlier add
    (and is dropped); an unknown tombstone is carried; an add takes the larger size (and revives
    a tombstone)."""
    out = dict(older)
    for name, info in newer.items():
        old = out.get(name)
        if old is None:
            out[name] = info
        elif info.deleted:
            if old.deleted:
                out[name] = info
            else:
                del out[name]
        else:
            out[name] = FileInfo(max(info.size, old.size))
    return out


_MISSING_FILE_INDEX = -1  # HoodieTableMetadataUtil.RECORD_INDEX_MISSING_FILEINDEX_FALLBACK
_U64 = (1 << 64) - 1


def record_location(entry: Mapping[str, Any]) -> tuple[str, str]:
    """(partition, file id) of a `recordIndexMetadata` entry (`HoodieTableMetadataUtil.
    getLocationFromRecordIndexInfo`): encoding 0 is a UUID from its high and low bits, with
    "-<fileIndex>" unless the index is -1; encoding 1 the file id as written."""
    partition = str(entry.get("partitionName") or "")
    if int(entry.get("fileIdEncoding") or 0) != 0:
        return partition, str(entry.get("fileId") or "")
    high, low = int(entry.get("fileIdHighBits") or 0), int(entry.get("fileIdLowBits") or 0)
    file_id = str(uuid.UUID(int=((high & _U64) << 64) | (low & _U64)))
    index = entry.get("fileIndex")
    if index is not None and int(index) != _MISSING_FILE_INDEX:
        file_id += f"-{int(index)}"
    return partition, file_id
