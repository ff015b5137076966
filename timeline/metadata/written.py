"""What Cleanline's own Spark writer writes into a commit (tests and the demo lake): HoodieWriteStat
and HoodieCommitMetadata as dicts in the field order and with the defaults of Hudi's v6 JSON, the
partition metafile's properties. The typed records Cleanline reads are `records.py`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from timeline.metadata.raw import camel
from timeline.metadata.records import WRITE_STATS_FIELD

# HoodieWriteStat in the field order of Hudi's v6 JSON, with Hudi's defaults.
_STAT_DEFAULTS: Mapping[str, Any] = {
    "fileId": "", "path": None, "cdcStats": None, "prevCommit": "null", "numWrites": 0, "numDeletes": 0,
    "numUpdateWrites": 0, "numInserts": 0, "totalWriteBytes": 0, "totalWriteErrors": 0, "tempPath": None,
    "partitionPath": None, "totalLogRecords": 0, "totalLogFilesCompacted": 0, "totalLogSizeCompacted": 0,
    "totalUpdatedRecordsCompacted": 0, "totalLogBlocks": 0, "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0,
    "fileSizeInBytes": 0, "minEventTime": None, "maxEventTime": None, "runtimeStats": None,
}


def write_stat(**values: Any) -> dict[str, Any]:
    """A HoodieWriteStat (HoodieDeltaWriteStat with the log fields) from snake_case
    attributes (`num_writes=...`): Hudi's fields and defaults, then further fields in the
    order given."""
    return {**_STAT_DEFAULTS, **{camel(k): v for k, v in values.items()}}


def runtime_stats(*, scan_ms: int = 0, upsert_ms: int = 0, create_ms: int = 0) -> dict[str, int]:
    """A write stat's `runtimeStats`."""
    return {"totalScanTime": scan_ms, "totalUpsertTime": upsert_ms, "totalCreateTime": create_ms}


def commit_metadata(stats: Mapping[str, list[dict[str, Any]]], operation: str, schema: str | None, *,
                    compacted: bool = False, replaced: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """HoodieCommitMetadata (HoodieReplaceCommitMetadata with `replaced`), fields in Hudi's order."""
    content: dict[str, Any] = {WRITE_STATS_FIELD: dict(stats), "compacted": compacted,
                               "extraMetadata": {"schema": schema} if schema else {}, "operationType": operation}
    if replaced is not None:
        content["partitionToReplaceFileIds"] = dict(replaced)
    return content


def by_partition(stats: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Write stats grouped by partition, each partition's sorted by file id."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for stat in sorted(stats, key=lambda s: (s["partitionPath"], s["fileId"])):
        grouped.setdefault(stat["partitionPath"], []).append(dict(stat))
    return grouped


def partition_metafile(commit_time: str, depth: int) -> dict[str, str]:
    """The properties of a partition's `.hoodie_partition_metadata`."""
    return {"commitTime": commit_time, "partitionDepth": str(depth)}
