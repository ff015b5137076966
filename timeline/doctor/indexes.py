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
  partition already holds records for. Log files' records (table version 9) are not checked.
- partition stats (`partition_stats` partition): per partition and indexed column, the record
  covers the latest base files' merged footers (`HoodieTableMetadataUtil.
  convertFilesToPartitionStatsRecords`, `FileFormatUtils.getColumnRangeInPartition`): its range
  holds theirs and its counts are at least theirs (Hudi's record is not exact, `_partition_stats`).
- record index (`record_index` partition): every record key of the live latest base files maps to
  its file group, and no key maps to a group that does not hold it (`_record_index`).
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

Nothing is repaired here: the finding says so, and how Hudi's writers rebuild the indexes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from timeline.committed import Commitment
from timeline.doctor.check import Check, Session
from timeline.doctor.findings import NO_REPAIR, Evidence, Finding, RepairPlan, RepairResult, Severity
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.fsview import FileSystemView, TableListing
from timeline.mdt.reader import FILES, MetadataTable
from timeline.metadata.mdt_payload import record_location
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


def _column_stats(survey: Survey, mdt: MetadataTable, files: list[_BaseFile]) -> list[Finding]:
    by_file = _stats_entries(mdt, COLUMN_STATS)
    indexed = _indexed_columns(survey, ((f, c) for f, cols in by_file.items() for c in cols))
    mismatches: list[StatsMismatch] = []
    latest = [b for b in files if b.name]
    for base in latest:
        recorded = by_file.get(base.name, {})
        for column in sorted(indexed & set(base.footer)):
            entry = recorded.get(column)
            if entry is None:
                mismatches.append(StatsMismatch(base.shown, column, "record", "none", "a column-stats record"))
            else:
                mismatches += _compare(base.shown, column, entry, base.footer[column], exact=True)
    return _stats_finding(COLUMN_STATS, len(latest), mismatches, "base file(s)")


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


@dataclass(frozen=True, slots=True)
class KeyMismatch(Evidence):
    key: str
    recorded: str   # partition/file id the record index maps the key to, or "none"
    actual: str     # partition/file id of the file group whose latest base file holds it, or "none"


@dataclass(frozen=True, slots=True)
class RecordIndexEvidence(Evidence):
    index: str
    keys_checked: int
    groups_skipped: int    # file groups whose latest slice has log files (not read here)
    mismatches: int
    shown: tuple[KeyMismatch, ...]
    sampled: bool = False  # a sample of file groups (see `sample_note`), not every key
    groups_checked: int = 0
    groups_total: int = 0
    confidence: float = 1.0
    undetected_fraction: float = 0.0  # at `confidence`, the fraction of keys a clean sample still allows wrong


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The latest snapshot's keys (and the columns asked for), read from the latest base files of
    the file groups checked: `rows[(partition, file id)]` holds their columns as lists."""

    rows: dict[tuple[str, str], dict[str, list[Any]]]
    live: set[tuple[str, str]]
    skipped: int
    sampled: bool
    base_instant: dict[tuple[str, str], str]

    @property
    def held(self) -> dict[str, tuple[str, str]]:
        return {str(k): location for location, columns in self.rows.items() for k in columns[RECORD_KEY_FIELD]}


def _snapshot(survey: Survey, view: FileSystemView, columns: Iterable[str] = ()) -> _Snapshot:
    """`HoodieTableMetadataUtil.readRecordKeysFromBaseFiles` (what the record index and secondary
    indexes are initialised from, `HoodieBackedTableMetadataWriter.initializeRecordIndexPartition`,
    `SecondaryIndexRecordGenerationUtils.readSecondaryKeysFromFileSlices`): the record key (and
    `columns`) of every row of the latest base files. File groups whose latest slice has log files
    are skipped (updates and deletes not read here), and base files without the key column. On a
    table whose latest base files hold more than `SAMPLE_KEYS` rows (footers' row counts), unless
    `DoctorSettings.index_full`, a random sample of file groups holding about that many."""
    import random

    import pyarrow.parquet as pq  # here: only the index check reads Parquet files

    table = survey.table
    wanted = [RECORD_KEY_FIELD, *(c for c in columns if c != RECORD_KEY_FIELD)]
    live: set[tuple[str, str]] = set()
    readable = []
    skipped = 0
    base_instant: dict[tuple[str, str], str] = {}
    for group in view.file_groups():
        location = (group.partition, group.file_id)
        live.add(location)
        file_slice = group.latest_slice
        if file_slice is None or file_slice.base_file is None or file_slice.log_files:
            skipped += file_slice is not None and bool(file_slice.log_files)
            continue
        base_instant[location] = file_slice.base_instant_time
        readable.append((location, table.path(file_slice.partition, file_slice.base_file.name)))
    full = survey.settings.index_full
    limit = survey.settings.index_sample_keys
    sampled = False
    if not full and len(readable) > 1:
        counts: dict[tuple[str, str], int] = {}
        for location, path in readable:
            try:
                with survey.storage.reader(path) as stream:
                    counts[location] = pq.ParquetFile(stream).metadata.num_rows
            except UNREADABLE:
                counts[location] = 0
        if sum(counts.values()) > limit:
            random.Random(table.uri).shuffle(readable)  # seeded: the same sample for the same table
            chosen: list[tuple[tuple[str, str], str]] = []
            total = 0
            for location, path in readable:
                if total >= limit:
                    break
                chosen.append((location, path))
                total += counts[location]
            readable, sampled = chosen, True
    rows: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for location, path in readable:
        try:
            with survey.storage.reader(path) as stream:
                parquet = pq.ParquetFile(stream)
                names = parquet.schema_arrow.names
                if RECORD_KEY_FIELD not in names:
                    skipped += 1
                    continue
                data = parquet.read(columns=[c for c in wanted if c in names])
        except UNREADABLE:
            skipped += 1
            continue
        rows[location] = {name: _as_java_strings(data.column(name)) if name != RECORD_KEY_FIELD
                          else data.column(name).to_pylist() for name in data.column_names}
    return _Snapshot(rows, live, skipped, sampled, base_instant)


def _as_java_strings(column: Any) -> list[Any]:
    """A column's values as the strings Hudi keys a secondary index by (`Object.toString` of the
    engine's value, `SecondaryIndexRecordGenerationUtils`): dates as days since the epoch,
    timestamps as their long, booleans as true/false; None stays None."""
    import pyarrow as pa
    import pyarrow.types as types

    kind = column.type
    if types.is_date32(kind):
        column = column.cast(pa.int32())
    elif types.is_timestamp(kind) or types.is_date64(kind) or types.is_time(kind):
        column = column.cast(pa.int64())
    out: list[Any] = []
    for value in column.to_pylist():
        if value is None:
            out.append(None)
        elif isinstance(value, bool):
            out.append("true" if value else "false")
        else:
            out.append(str(value))
    return out


def sample_note(sample_keys: int) -> tuple[float, float]:
    """(confidence, the fraction of wrong keys a clean sample of `sample_keys` still allows at that
    confidence: the rule of three, 3/n at 95%)."""
    return CONFIDENCE, (min(1.0, 3.0 / sample_keys) if sample_keys else 1.0)


def _record_index(survey: Survey, mdt: MetadataTable, view: FileSystemView,
                  snapshot: _Snapshot | None = None) -> list[Finding]:
    """Every record key of the latest snapshot maps to the file group that holds it, and no key
    maps to a file group that does not (`HoodieTableMetadataUtil.readRecordKeysFromBaseFiles`, what
    the record index is initialised from, against `HoodieBackedTableMetadata.readRecordIndex`).
    File groups whose latest slice has log files are skipped both ways, and so are base files
    without the `_hoodie_record_key` column; on a large table a sample of file groups (`_snapshot`),
    its size and confidence stated in the finding (an INFO finding when the sample is clean)."""
    snapshot = snapshot or _snapshot(survey, view)
    held = snapshot.held
    checked = set(snapshot.rows)
    mismatches: list[KeyMismatch] = []
    recorded: set[str] = set()
    for key, record in mdt.records(RECORD_INDEX).items():
        entry = record.raw.get("recordIndexMetadata")
        if not isinstance(entry, Mapping):
            continue
        recorded.add(key)
        location = record_location(entry)
        actual = held.get(key)
        if actual == location:
            continue
        if actual is None and (location in snapshot.live and location not in checked):
            continue  # maps to a group not read here
        if actual is None and snapshot.sampled:
            continue  # maps to a group not sampled, or nowhere: only the full check tells
        mismatches.append(KeyMismatch(key, "/".join(location), "none" if actual is None else "/".join(actual)))
    for key in sorted(set(held) - recorded):
        mismatches.append(KeyMismatch(key, "none", "/".join(held[key])))
    confidence, fraction = sample_note(len(held)) if snapshot.sampled else (1.0, 0.0)
    evidence = RecordIndexEvidence(RECORD_INDEX, len(held), snapshot.skipped, len(mismatches),
                                   tuple(mismatches[:SHOWN]), snapshot.sampled, len(checked), len(snapshot.live),
                                   confidence, fraction)
    sample = (f" (a sample: {len(held)} key(s) of {len(checked)} of {len(snapshot.live)} file group(s); at "
              f"{confidence:.0%} confidence at most {fraction:.4%} of keys are wrong unnoticed; --full checks every "
              "key)") if snapshot.sampled else ""
    if not mismatches:
        if not snapshot.sampled:
            return []
        return [Finding(KIND, Severity.INFO, f"{RECORD_INDEX}: verified on a sample{sample}", evidence,
                        "A sample rules out widespread drift, not a few wrong keys.",
                        f"{NO_REPAIR}nothing found; verify with the full check (`cleanline index verify --full`, "
                        "DoctorSettings(index_full=True)) to rule out every wrong key")]
    return [Finding(
        KIND, Severity.ERROR,
        f"{RECORD_INDEX}: {len(mismatches)} record key(s) map to the wrong file group or to none{sample}",
        evidence,
        "Writers tag incoming records through the record index: a key mapped to the wrong file group is written as "
        "a new record beside the old one (a duplicate) or its update and delete are lost; readers looking a key up "
        "find nothing.",
        rebuild_repair(RECORD_INDEX))]


@dataclass(frozen=True, slots=True)
class SecondaryMismatch(Evidence):
    value: str       # the indexed value
    record_key: str
    problem: str     # "missing" (the data holds it, the index does not) or "stale" (the index holds it, the data not)


@dataclass(frozen=True, slots=True)
class SecondaryIndexEvidence(Evidence):
    index: str
    column: str
    entries_checked: int
    groups_skipped: int
    mismatches: int
    shown: tuple[SecondaryMismatch, ...]


def escape_key(text: str | None) -> str:
    """`SecondaryIndexKeyUtils.escapeSpecialChars`: backslash, `$` and NUL escaped with a
    backslash; null as a lone NUL."""
    if text is None:
        return NULL_VALUE
    return "".join("\\" + c if c in ("\\", "$", NULL_VALUE) else c for c in text)


def split_key(key: str) -> tuple[str, str] | None:
    """`SecondaryIndexKeyUtils.getSecondaryKeyFromSecondaryIndexKey` / `getRecordKeyFromSecondaryIndexKey`:
    (secondary value, record key) split at the first unescaped `$`, both unescaped."""
    escaped = False
    for position, char in enumerate(key):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "$":
            return _unescape(key[:position]), _unescape(key[position + 1:])
    return None


def _unescape(text: str) -> str:
    """`SecondaryIndexKeyUtils.unescapeSpecialChars` (a lone NUL, null, kept as NUL here)."""
    out, escaped = [], False
    for char in text:
        if escaped or char != "\\":
            out.append(char)
            escaped = False
        else:
            escaped = True
    return "".join(out)


def secondary_key(value: str | None, record_key: str) -> str:
    """`SecondaryIndexKeyUtils.constructSecondaryIndexKey`: escaped value, `$`, escaped record key."""
    return escape_key(value) + "$" + escape_key(record_key)


def secondary_indexes(survey: Survey) -> dict[str, str]:
    """The table's secondary index partitions listed complete, with the column each indexes
    (`.index_defs` `sourceFields`, one column, `HoodieIndexDefinition`)."""
    try:
        defs = index_definitions(survey)
    except IndexDefinitionsUnreadable:
        return {}
    out = {}
    for index in survey.table.config.metadata_partitions:
        fields = defs.get(index, {}).get("sourceFields") if index.startswith(SECONDARY_PREFIX) else None
        if fields and len(fields) == 1 and str(defs[index].get("indexFunction") or "identity") == "identity":
            out[index] = str(fields[0])
    return out


def expected_secondary(snapshot: _Snapshot, column: str) -> tuple[set[str], set[str]]:
    """(the secondary-index keys the snapshot's rows make, the record keys read): a null value as
    the NUL character (`SecondaryIndexKeyUtils`' null marker, as the fixtures Hudi 1.1 wrote hold it)."""
    expected: set[str] = set()
    keys: set[str] = set()
    for columns in snapshot.rows.values():
        record_keys = columns[RECORD_KEY_FIELD]
        keys.update(str(k) for k in record_keys)
        for key, value in zip(record_keys, columns.get(column, [None] * len(record_keys))):
            expected.add(secondary_key(value, str(key)))
    return expected, keys


def _secondary_index(survey: Survey, mdt: MetadataTable, index: str, column: str, snapshot: _Snapshot
                     ) -> list[Finding]:
    """Each indexed value maps to the record keys that hold it in the latest snapshot
    (`SecondaryIndexRecordGenerationUtils.readSecondaryKeysFromFileSlices`, what
    `HoodieBackedTableMetadataWriter.initializeSecondaryIndexPartition` builds), both ways: a
    (value, key) pair of the data the index lacks, and one the index holds for a key the data
    read here holds with another value (keys of groups not read here are not judged)."""
    expected, keys = expected_secondary(snapshot, column)
    recorded = {k for k, r in mdt.records(index).items()
                if not (isinstance(m := r.raw.get("SecondaryIndexMetadata"), Mapping) and m.get("isDeleted"))}
    mismatches: list[SecondaryMismatch] = []
    for key in sorted(expected - recorded):
        value, record_key = split_key(key) or (key, "")
        mismatches.append(SecondaryMismatch(value, record_key, "missing"))
    for key in sorted(recorded - expected):
        parts = split_key(key)
        if parts is None:
            mismatches.append(SecondaryMismatch(key, "", "stale"))
        elif parts[1] in keys or not snapshot.skipped and not snapshot.sampled:
            mismatches.append(SecondaryMismatch(parts[0], parts[1], "stale"))
    if not mismatches:
        return []
    return [Finding(
        KIND, Severity.ERROR,
        f"{index}: {len(mismatches)} (value, record key) pair(s) of column {column} differ from the data",
        SecondaryIndexEvidence(index, column, len(expected), snapshot.skipped, len(mismatches),
                               tuple(mismatches[:SHOWN])),
        "Queries filtering on this column look the matching record keys up in the secondary index: a missing pair "
        "drops a matching row from the answer, a stale one reads a row that no longer matches.",
        rebuild_repair(index))]


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


def diagnose(survey: Survey) -> list[Finding]:
    table = survey.table
    if not table.config.metadata_table_enabled:
        return []
    try:
        mdt = MetadataTable(table)
    except CleanlineError:
        return []  # an unreadable metadata table is metadata-table-drift's finding
    try:
        findings = _definitions(survey, mdt)
    except CleanlineError:
        return []  # a metadata-table file that does not read: metadata-table-drift's finding
    broken = {e.index for f in findings if isinstance(e := f.evidence, DefinitionEvidence)}
    secondary = {i: c for i, c in secondary_indexes(survey).items() if i not in broken}
    wanted = [p for p in (COLUMN_STATS, PARTITION_STATS, RECORD_INDEX)
              if p in table.config.metadata_partitions and p not in broken]
    if not wanted and not secondary:
        return findings
    view = committed_view(survey)
    files = _latest_base_files(survey, view) if COLUMN_STATS in wanted or PARTITION_STATS in wanted else []
    snapshot = (_snapshot(survey, view, set(secondary.values()))
                if RECORD_INDEX in wanted or secondary else None)
    rules: dict[str, Any] = {COLUMN_STATS: lambda: _column_stats(survey, mdt, files),
                             PARTITION_STATS: lambda: _partition_stats(survey, mdt, files),
                             RECORD_INDEX: lambda: _record_index(survey, mdt, view, snapshot)}
    for index, column in secondary.items():
        assert snapshot is not None
        rules[index] = lambda i=index, c=column, s=snapshot: _secondary_index(survey, mdt, i, c, s)
    for index in [*wanted, *secondary]:
        try:
            findings += rules[index]()
        except CleanlineError:
            continue  # its metadata-table files do not read (metadata-table-drift's finding)
    return findings


def plan(survey: Survey) -> RepairPlan:
    """Every drifted index rebuilt, an index without file groups dropped
    (`timeline/doctor/index_repair.py`)."""
    from timeline.doctor import index_repair  # it builds on this module's rules

    return index_repair.plan(survey)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    from timeline.doctor import index_repair

    return index_repair.run(session, approved)


CHECK = Check(KIND, diagnose, plan, run)
