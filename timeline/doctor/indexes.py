"""Index drift: the metadata table's index partitions checked against the data they describe
(issue 45, verification only). Query engines trust these indexes to skip files, so an index that
disagrees with the data makes queries silently return wrong answers.

Rules, each after the Hudi Java it follows:

- column stats (`column_stats` partition): each latest-slice base file's record per indexed column
  holds the min, max, null count and value count of that file's Parquet footer, aggregated over
  its row groups as `ParquetUtils.readColumnStatsFromMetadata` (hudi-hadoop-common) does, the
  value unwrapped from its `ValueMetadata` wrapper (`HoodieIndexVersion` V2 on table version 9,
  `valueType`). The indexed columns are the column-stats index definition's `sourceFields`
  (`.hoodie/.index_defs`, `HoodieIndexDefinition`, as `HoodieTableMetadataUtil.getColumnsToIndex`
  records them), else `hoodie.metadata.index.column.stats.column.list`, else the columns the
  partition already holds records for. Log files' records against their blocks: `index_logs.py`.
- partition stats (`partition_stats` partition): per partition and indexed column, the record
  covers the latest base files' merged footers (`HoodieTableMetadataUtil.
  convertFilesToPartitionStatsRecords`, `FileFormatUtils.getColumnRangeInPartition`): its range
  holds theirs and its counts are at least theirs (Hudi's record is not exact, `_partition_stats`).
- record index and secondary indexes: `index_keys.py` (sampled above `index_sample_keys`), which
  also holds `diagnose`, running every rule here and there.
- index definitions: `.hoodie/.index_defs` that does not decode (`HoodieIndexMetadata.fromJson`
  fails on it too); an index partition listed complete in `hoodie.table.metadata.partitions`
  (`HoodieTableConfig.getMetadataPartitions`, what `MetadataPartitionType.isMetadataPartitionAvailable`
  trusts) with no file group or no record in the metadata table, and an index definition of
  `.hoodie/.index_defs` (`HoodieTableMetaClient.getIndexMetadata`) whose partition the property
  lists but the metadata table lacks.

The data is the view over committed files only (`committed_view`, `timeline/committed.py`): a file
no completed write names is an orphan, not data an index must describe. A data file that does not
read is left out (readers fail on it; not this kind's finding), and so is an index whose
metadata-table files do not read (metadata-table-drift's).

The repair (rebuild from the data, or drop) is `index_repair.py`'s, which registers the check."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from timeline.committed import Commitment
from timeline.doctor.findings import NO_REPAIR, Evidence, Finding, Severity
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.fsview import FileSystemView, TableListing
from timeline.mdt.reader import FILES, MetadataTable
from timeline.storage import Storage

KIND = "index-drift"
COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"
RECORD_INDEX = "record_index"
RECORD_KEY_FIELD = "_hoodie_record_key"
COLUMN_LIST = "hoodie.metadata.index.column.stats.column.list"
INDEX_DEFS = "hoodie.table.index.defs.path"
INDEX_DEFS_DEFAULT = ".hoodie/.index_defs/index.json"
SHOWN = 50  # the mismatches an evidence lists (the count names them all)
UNREADABLE = (OSError, ValueError, CleanlineError)  # pyarrow's ArrowInvalid is a ValueError
SECONDARY_PREFIX = "secondary_index_"  # MetadataPartitionType.SECONDARY_INDEX's partition path prefix
# The record index check reads every key of the latest snapshot up to this many keys; above it,
# without `DoctorSettings.index_full`, a random sample of file groups holding about this many.
SAMPLE_KEYS = 200_000
CONFIDENCE = 0.95
NULL_VALUE = "\x00"  # a null secondary value in a secondary-index key (SecondaryIndexKeyUtils)


def rebuild_repair(index: str) -> str:
    """The repair text of a drifted index: what `cleanline index rebuild` does."""
    return (f"rebuild {index} from the data as Hudi's initialisation computes it, only its drifted records, in one "
            f"metadata-table deltacommit under the table's lock (`cleanline index rebuild <table> --index {index}`; "
            f"or `cleanline index drop` so Hudi writers rebuild it)")


def drop_repair(index: str) -> str:
    return (f"drop {index} (its metadata-table folder and its entry in hoodie.table.metadata.partitions, as "
            f"HoodieTableMetadataUtil.deleteMetadataTablePartition does) so that no reader trusts it and Hudi writers "
            f"rebuild it (`cleanline index drop <table> --index {index}`)")


@dataclass(frozen=True, slots=True)
class StatsMismatch(Evidence):
    file: str       # the data file (partition/name)
    column: str
    field: str      # minValue, maxValue, nullCount, valueCount, or "record" (missing)
    recorded: str   # what the index holds
    actual: str     # what the data holds


@dataclass(frozen=True, slots=True)
class StatsEvidence(Evidence):
    index: str                 # the metadata-table partition
    files_checked: int
    mismatches: int
    shown: tuple[StatsMismatch, ...]


@dataclass(frozen=True, slots=True)
class DefinitionEvidence(Evidence):
    index: str
    declared_in: str           # hoodie.table.metadata.partitions or .index_defs
    file_groups: int
    records: int
    problem: str


def _unwrap(value: Any) -> Any:
    """A stats value without its Avro wrapper (`{"value": x}`, HoodieMetadataPayload's
    `wrapValueIntoAvro`)."""
    return value.get("value") if isinstance(value, Mapping) else value


def _normal(value: Any, decimal: bool) -> Any:
    """A comparable value: decimals as their unscaled integer (big-endian two's complement in both
    the footer and the record), other bytes left as bytes."""
    if isinstance(value, bytes) and decimal:
        return int.from_bytes(value, "big", signed=True) if value else 0
    return value


def _footer_stats(storage: Storage, path: str) -> dict[str, dict[str, Any]]:
    """Per column path: min, max, null count and value count over the file's row groups
    (`ParquetUtils.readColumnStatsFromMetadata`, merged per column as `getColumnRangeInFile`)."""
    import pyarrow.parquet as pq  # here: only the index check reads Parquet footers

    with storage.reader(path) as stream:
        meta = pq.ParquetFile(stream).metadata
    out: dict[str, dict[str, Any]] = {}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            stats = chunk.statistics
            logical = str(stats.logical_type) if stats is not None else ""
            decimal = logical.startswith("Decimal")
            entry = out.setdefault(chunk.path_in_schema, {"minValue": None, "maxValue": None, "nullCount": 0,
                                                          "valueCount": 0, "decimal": decimal, "rawMin": None,
                                                          "rawMax": None, "totalSize": 0,
                                                          "totalUncompressedSize": 0})
            entry["valueCount"] += chunk.num_values
            entry["totalSize"] += chunk.total_compressed_size
            entry["totalUncompressedSize"] += chunk.total_uncompressed_size
            if stats is None:
                continue
            entry["nullCount"] += stats.null_count or 0
            if stats.has_min_max:
                low, high = stats.min_raw, stats.max_raw
                if isinstance(low, bytes) and logical == "String":
                    low, high = low.decode(), high.decode()
                raw_low, raw_high = low, high
                low, high = _normal(low, decimal), _normal(high, decimal)
                if entry["minValue"] is None or low < entry["minValue"]:
                    entry["minValue"], entry["rawMin"] = low, raw_low
                if entry["maxValue"] is None or high > entry["maxValue"]:
                    entry["maxValue"], entry["rawMax"] = high, raw_high
    return out


class IndexDefinitionsUnreadable(ValueError):
    """`.hoodie/.index_defs` does not decode (`HoodieIndexMetadata.fromJson` fails on it too)."""


def index_definitions(survey: Survey) -> dict[str, Mapping[str, Any]]:
    """`.hoodie/.index_defs`'s definitions by index name (none when the table has no file), as
    `HoodieTableMetaClient.getIndexMetadata` reads them; IndexDefinitionsUnreadable when the file
    does not decode."""
    relative = survey.table.config.get(INDEX_DEFS) or INDEX_DEFS_DEFAULT
    path = survey.table.path(relative)
    if not survey.storage.exists(path):
        return {}
    try:
        defs = json.loads(survey.storage.read(path))["indexDefinitions"]
        return {str(name): d for name, d in defs.items() if isinstance(d, Mapping)}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise IndexDefinitionsUnreadable(f"{relative}: {exc}") from exc


def _indexed_columns(survey: Survey, records: Iterable[tuple[str, str]]) -> set[str]:
    try:
        source = index_definitions(survey).get(COLUMN_STATS, {}).get("sourceFields")
    except IndexDefinitionsUnreadable:
        source = None
    if source:
        return {str(c) for c in source}
    listed = survey.props.get(COLUMN_LIST) or survey.table.config.get(COLUMN_LIST) or ""
    if listed.strip():
        return {c.strip() for c in listed.split(",") if c.strip()}
    return {column for _, column in records}


@dataclass(frozen=True, slots=True)
class _BaseFile:
    partition: str
    name: str
    footer: dict[str, dict[str, Any]]
    unread: bool  # the latest slice holds data not read here (log files, or a base file that does not read)

    @property
    def shown(self) -> str:
        return Storage.join(self.partition, self.name)


def committed_view(survey: Survey) -> FileSystemView:
    """The file-system view over committed data files only (`timeline/committed.py`, the one
    definition the drift and orphan checks share): a file no completed write names is no part of
    the data an index describes."""
    committed = survey.committed

    def kept(name: str) -> bool:
        state = committed.of(name)
        return state is Commitment.NOT_DATA or state.committed

    partitions = survey.listing.partitions
    listing = TableListing({p: tuple(s for s in files if kept(s.name)) for p, files in partitions.items()})
    return survey.table.file_system_view(listing=listing, sizes=False)


def _latest_base_files(survey: Survey, view: FileSystemView) -> list[_BaseFile]:
    """The latest slice's Parquet base file of every live file group with its footer's statistics
    (`getLatestFileSlices`: replaced groups left out); a slice without one is kept (no name) when it
    has log files, so that its partition is known to hold data not read here."""
    table = survey.table
    out = []
    for group in view.file_groups():
        file_slice = group.latest_slice
        base = None if file_slice is None else file_slice.base_file
        if file_slice is None or base is None or not base.name.endswith(".parquet"):
            if file_slice is not None and file_slice.log_files:
                out.append(_BaseFile(file_slice.partition, "", {}, True))
            continue
        try:
            footer = _footer_stats(survey.storage, table.path(file_slice.partition, base.name))
        except UNREADABLE:  # not this kind's finding: readers fail on the file itself
            out.append(_BaseFile(file_slice.partition, "", {}, True))
            continue
        out.append(_BaseFile(file_slice.partition, base.name, footer, bool(file_slice.log_files)))
    return out


def _stats_entries(mdt: MetadataTable, partition: str) -> dict[str, dict[str, Mapping[str, Any]]]:
    """file name (partition path, for partition stats) -> column -> ColumnStatsMetadata."""
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for record in mdt.records(partition).values():
        entry = record.raw.get("ColumnStatsMetadata")
        if isinstance(entry, Mapping):
            out.setdefault(str(entry.get("fileName")), {})[str(entry.get("columnName"))] = entry
    return out


def _compare(shown: str, column: str, entry: Mapping[str, Any], actual: Mapping[str, Any], *, exact: bool
             ) -> list[StatsMismatch]:
    """A record against the data. `exact` (column stats of one file): equal min, max and counts.
    Otherwise (partition stats) the record must cover the data: its range holds the data's and its
    counts are at least the data's, what a reader needs not to skip a partition that holds a
    matching row."""
    found = []
    low, high = (_normal(_unwrap(entry.get(n)), actual["decimal"]) for n in ("minValue", "maxValue"))
    for name, have in (("minValue", low), ("maxValue", high)):
        want = actual[name]
        if exact:
            wrong = have != want
        elif want is None:
            wrong = False
        else:
            try:
                wrong = have is None or (have > want if name == "minValue" else have < want)
            except TypeError:
                wrong = True
        if wrong:
            found.append(StatsMismatch(shown, column, name, repr(have), repr(want)))
    for name in ("nullCount", "valueCount"):
        have, want = entry.get(name), actual[name]
        if (have != want) if exact else (not isinstance(have, int) or have < want):
            found.append(StatsMismatch(shown, column, name, repr(have), repr(want)))
    return found


def _stats_finding(index: str, checked: int, mismatches: list[StatsMismatch], what: str) -> list[Finding]:
    if not mismatches:
        return []
    count = len({m.file for m in mismatches})
    return [Finding(
        KIND, Severity.ERROR,
        f"{index}: {len(mismatches)} column statistic(s) of {count} {what} disagree with the Parquet footers",
        StatsEvidence(index, checked, len(mismatches), tuple(mismatches[:SHOWN])),
        "Query engines skip files by these statistics (data skipping): a wrong range or count makes them skip files "
        "that hold matching rows, and queries silently return too few rows.",
        rebuild_repair(index))]


def _column_stats(survey: Survey, mdt: MetadataTable, files: list[_BaseFile],
                  logs: Callable[[Mapping[str, Mapping[str, Mapping[str, Any]]], set[str]],
                                 tuple[int, list[StatsMismatch]]] | None = None) -> list[Finding]:
    """Each latest base file's records against its footer; with `logs` (`index_logs.py`), the
    log files' records against their blocks too."""
    by_file = _stats_entries(mdt, COLUMN_STATS)
    indexed = _indexed_columns(survey, ((f, c) for f, cols in by_file.items() for c in cols))
    logs_checked, mismatches = logs(by_file, indexed) if logs is not None else (0, [])
    latest = [b for b in files if b.name]
    for base in latest:
        recorded = by_file.get(base.name, {})
        for column in sorted(indexed & set(base.footer)):
            entry = recorded.get(column)
            if entry is None:
                mismatches.append(StatsMismatch(base.shown, column, "record", "none", "a column-stats record"))
            else:
                mismatches += _compare(base.shown, column, entry, base.footer[column], exact=True)
    return _stats_finding(COLUMN_STATS, len(latest) + logs_checked, mismatches, "file(s)")


def _partition_stats(survey: Survey, mdt: MetadataTable, files: list[_BaseFile]) -> list[Finding]:
    """`HoodieTableMetadataUtil.convertFilesToPartitionStatsRecords`: per partition and column,
    the latest slices' ranges merged (`FileFormatUtils.getColumnRangeInPartition`: min of mins,
    max of maxes, counts summed). Hudi's record is not exact: it is built over
    `getPartitionLatestFileSlicesIncludingInflight` (`AbstractTableFileSystemView.
    getLatestFileSlicesIncludingInflight` keeps replaced file groups until they are cleaned) and
    later writes merge wider ranges into it (`HoodieColumnRangeMetadata.merge`, `isTightBound`
    false). So the check is that the record covers the live latest base files (`_compare`):
    a record that does not makes readers skip a partition holding matching rows. Partitions
    whose latest slices have log files are skipped (log files' statistics are not read here)."""
    by_partition = _stats_entries(mdt, PARTITION_STATS)
    indexed = _indexed_columns(survey, ((p, c) for p, cols in by_partition.items() for c in cols))
    groups: dict[str, list[_BaseFile]] = {}
    for base in files:
        groups.setdefault(base.partition, []).append(base)
    mismatches: list[StatsMismatch] = []
    checked = 0
    for partition, members in sorted(groups.items()):
        if any(b.unread for b in members):
            continue
        checked += 1
        recorded = by_partition.get(partition, {})
        columns = set.intersection(*(set(b.footer) for b in members)) & indexed
        for column in sorted(columns):
            parts = [b.footer[column] for b in members]
            lows = [p["minValue"] for p in parts if p["minValue"] is not None]
            highs = [p["maxValue"] for p in parts if p["maxValue"] is not None]
            actual = {"minValue": min(lows) if lows else None, "maxValue": max(highs) if highs else None,
                      "nullCount": sum(p["nullCount"] for p in parts),
                      "valueCount": sum(p["valueCount"] for p in parts),
                      "decimal": parts[0]["decimal"]}
            entry = recorded.get(column)
            if entry is None:
                mismatches.append(StatsMismatch(partition, column, "record", "none", "a partition-stats record"))
            else:
                mismatches += _compare(partition, column, entry, actual, exact=False)
    return _stats_finding(PARTITION_STATS, checked, mismatches, "partition(s)")


def _definitions(survey: Survey, mdt: MetadataTable) -> list[Finding]:
    declared = [p for p in survey.table.config.metadata_partitions if p != FILES]
    findings = []
    try:
        defined = index_definitions(survey)
    except IndexDefinitionsUnreadable as exc:
        defined = {}
        findings.append(Finding(
            KIND, Severity.ERROR, "the index definitions (.index_defs) do not decode",
            DefinitionEvidence(".index_defs", str(survey.table.config.get(INDEX_DEFS) or INDEX_DEFS_DEFAULT), 0, 0,
                               str(exc)),
            "Hudi readers and writers load the index definitions with the table (HoodieTableMetaClient."
            "getIndexMetadata) and fail on this file: queries and writes that use an index stop.",
            f"{NO_REPAIR}restore .index_defs from a backup of the table, or have a Hudi writer drop and recreate the "
            "indexes it defines"))
    for index in declared:
        groups = len(mdt.latest_slices(index))
        records = len(mdt.records(index)) if groups else 0
        if groups and records:
            continue
        origin = "hoodie.table.metadata.partitions" + (" and .index_defs" if index in defined else "")
        problem = "no file group" if not groups else "no record"
        findings.append(Finding(
            KIND, Severity.ERROR, f"{index}: declared complete but has {problem} in the metadata table",
            DefinitionEvidence(index, origin, groups, records, problem),
            "Readers trust an index the table property lists as complete (apache/hudi #19716): lookups through an "
            "empty index find nothing, and queries return wrong answers.",
            rebuild_repair(index) if groups else drop_repair(index)))
    return findings


# The key-based rules (record index, secondary indexes) and `diagnose` are `index_keys.py`'s;
# the check with its repair is `index_repair.CHECK`.
