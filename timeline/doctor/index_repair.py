"""Index repair (issue 45): rebuild one index partition of the metadata table from the data, or
drop it, each a `RepairPlan` previewed first and run under the table's lock.

Rebuild: the records Hudi's initialisation computes for the partition from the latest snapshot
(`HoodieBackedTableMetadataWriter.initializeFromFilesystem` and its `initialize*Partition`
methods, the records from `HoodieTableMetadataUtil`'s converters:
`convertFilesToColumnStatsRecords` for column stats, `convertFilesToPartitionStatsRecords` for
partition stats, `readRecordKeysFromBaseFiles` for the record index,
`SecondaryIndexRecordGenerationUtils.readSecondaryKeysFromFileSlices` for a secondary index) are
compared with what the partition holds, and only the difference is written: one metadata-table
deltacommit (`timeline/mdt/writer.py`'s `write_routed_update`) upserting the records that are
missing or wrong and deleting those the data no longer backs, each in the file group that holds
its key (else where Hudi routes it: `mapRecordKeyToFileGroupIndex`, for a secondary index of its
escaped value prefix, `getSecondaryKeyToFileGroupMappingFunction`). The partition's file groups
are kept, so readers that hold the partition's file-group count route as before. The plan
carries the estimate (file groups, records, bytes read, time and memory) before anything
changes; the run diagnoses again under the lock, rolls back a deltacommit a crashed rebuild
left pending (one at a time no data-table instant has), then writes what is still wrong: a
re-run after a crash finishes the work, a re-run after success finds nothing to write.

Drop (`HoodieTableMetadataUtil.deleteMetadataTablePartition`, what `HoodieBackedTableMetadataWriter.
dropMetadataPartitions` / `dropIndex` run): the partition leaves `hoodie.table.metadata.partitions`
first (`HoodieTableConfig.setMetadataPartitionState(..., false)`, so readers stop trusting it),
then its folder under `.hoodie/metadata` goes, and a secondary index's definition leaves
`.index_defs` (`HoodieTableMetaClient.deleteIndexDefinition`). Hudi writers configured to keep
the index rebuild it. The plan names the queries that lose the index.

Only table versions 8 and 9 (Hudi 1.x) are rebuilt; log files' rows are not read (file groups
whose latest slice has log files are left as they are)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from timeline.doctor.check import Check, Session
from timeline.doctor.findings import (
    Change,
    Evidence,
    RepairPlan,
    RepairResult,
    RepairUnavailable,
)
from timeline.doctor.index_drop import (
    DROP,
    IndexState,
    _findings_of,
    index_states,
    plan_drop,
    run_drop,
    serves,
    table_indexes,
)
from timeline.doctor.index_keys import (
    _snapshot,
    diagnose,
    escape_key,
    expected_secondary,
    secondary_indexes,
    split_key,
)
from timeline.doctor.index_logs import judged_logs
from timeline.doctor.indexes import (
    COLUMN_STATS,
    KIND,
    PARTITION_STATS,
    RECORD_INDEX,
    SECONDARY_PREFIX,
    _compare,
    _indexed_columns,
    _latest_base_files,
    _stats_entries,
    committed_view,
)
from timeline.doctor.survey import DoctorSettings, Survey
from timeline.instant import State, moment_of
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import DELTACOMMIT, file_group_index, roll_back_pending, write_routed_update
from timeline.metadata.mdt_payload import (
    MetadataRecord,
    column_stats_key,
    partition_identifier,
    record_location,
)
from timeline.table import Table
from timeline.transactions import Transactions

REBUILD = "index rebuild"
# The estimate's rates, measured on this project's benchmark machine (bench/doctor.py's footer and
# key reads): bytes of Parquet read per second, and the driver's bytes per record held.
READ_BYTES_PER_SECOND = 40 << 20
BYTES_PER_RECORD = 600
TYPE_PARTITION_STATS = 6   # MetadataPartitionType.PARTITION_STATS' record type
TYPE_RECORD_INDEX = 5      # MetadataPartitionType.RECORD_INDEX
TYPE_SECONDARY_INDEX = 7   # MetadataPartitionType.SECONDARY_INDEX
@dataclass(frozen=True, slots=True)
class RebuildEstimate(Evidence):
    """What a rebuild costs, shown before it runs: the data file groups read and their bytes, the
    index's records written (upserts and deletes) across its file groups, the time the reads take
    at `READ_BYTES_PER_SECOND` and the driver's memory at `BYTES_PER_RECORD` per record held."""

    index: str
    data_file_groups: int
    bytes_read: int
    records: int            # the index's records computed from the data
    upserts: int
    deletes: int
    index_file_groups: int  # of the index's file groups, those the deltacommit writes to
    seconds: float
    memory_bytes: int


@dataclass(frozen=True, slots=True)
class _Rebuild:
    groups: dict[str, tuple[list[MetadataRecord], list[str]]]
    estimate: RebuildEstimate
    notes: tuple[str, ...]


def _located(mdt: MetadataTable, partition: str) -> tuple[dict[str, MetadataRecord], dict[str, str]]:
    """The partition's live records, and the file group holding each key."""
    valid = mdt.valid_instants()
    last = mdt.mdt.timeline.completed().last()
    latest = "" if last is None else last.requested_time
    records: dict[str, MetadataRecord] = {}
    where: dict[str, str] = {}
    for file_slice in mdt.merged_slices(partition):
        for key, record in mdt._slice_records(file_slice, valid, latest).items():
            records[key] = record
            where[key] = file_slice.file_id
    return records, where


def _value(raw: Any, normal: Any, decimal: bool) -> dict[str, Any] | None:
    """A footer value as the record's wrapper holds it (`HoodieAvroUtils.wrapValueIntoAvro`): a
    decimal as its unscaled value's `BigInteger.toByteArray` (the shortest two's complement),
    not the footer's fixed width."""
    if raw is None:
        return None
    if decimal and isinstance(normal, int):
        length = max(1, (normal + (normal < 0)).bit_length() // 8 + 1)
        return {"value": normal.to_bytes(length, "big", signed=True)}
    return {"value": raw}


def _stats_entry(template: Mapping[str, Any], name: str, column: str, actual: Mapping[str, Any], *,
                 tight: bool | None = None) -> dict[str, Any]:
    """`HoodieMetadataPayload.createColumnStatsRecord` from a `HoodieColumnRangeMetadata`: the
    template (a record of the same column) gives the value type and fields of the table's schema."""
    entry = dict(template)
    decimal = bool(actual["decimal"])
    entry.update({"fileName": name, "columnName": column,
                  "minValue": _value(actual["rawMin"], actual["minValue"], decimal),
                  "maxValue": _value(actual["rawMax"], actual["maxValue"], decimal), "nullCount": actual["nullCount"],
                  "valueCount": actual["valueCount"], "totalSize": actual["totalSize"],
                  "totalUncompressedSize": actual["totalUncompressedSize"], "isDeleted": False})
    if tight is not None and "isTightBound" in entry:
        entry["isTightBound"] = tight
    return entry


def _templates(records: Mapping[str, MetadataRecord]) -> dict[str, tuple[MetadataRecord, Mapping[str, Any]]]:
    out: dict[str, tuple[MetadataRecord, Mapping[str, Any]]] = {}
    for record in records.values():
        entry = record.raw.get("ColumnStatsMetadata")
        if isinstance(entry, Mapping) and entry.get("minValue") is not None:
            out.setdefault(str(entry.get("columnName")), (record, entry))
    return out


def _column_stats(survey: Survey, mdt: MetadataTable, records: Mapping[str, MetadataRecord]
                  ) -> tuple[list[MetadataRecord], list[str], int, int, list[str]]:
    """`convertFilesToColumnStatsRecords` over the latest base files: one record per file and
    indexed column, written where the index's differs (`_compare`, exact); and the log files the
    index holds records for, from their blocks' statistics (`index_logs.py`)."""
    view = committed_view(survey)
    files = [b for b in _latest_base_files(survey, view) if b.name]
    by_file = _stats_entries(mdt, COLUMN_STATS)
    indexed = _indexed_columns(survey, ((f, c) for f, cols in by_file.items() for c in cols))
    templates = _templates(records)
    upserts: list[MetadataRecord] = []
    notes: list[str] = []
    computed = 0
    for base in files:
        for column in sorted(indexed & set(base.footer)):
            computed += 1
            actual = base.footer[column]
            entry = by_file.get(base.name, {}).get(column)
            if entry is not None and not _compare(base.shown, column, entry, actual, exact=True):
                continue
            if column not in templates:
                notes.append(f"column {column}: no record to take its value type from; left to Hudi's writers")
                continue
            template_record, template = templates[column]
            key = column_stats_key(column, partition_identifier(base.partition), base.name)
            raw = {**template_record.raw, "ColumnStatsMetadata": _stats_entry(template, base.name, column, actual)}
            upserts.append(MetadataRecord(key, template_record.type, None, raw))
    logs = 0
    table = survey.table
    for partition, name, entries, stats in judged_logs(survey.storage, view, table.path, by_file):
        logs += 1
        for column in sorted(indexed & set(entries) & set(stats)):
            computed += 1
            actual = stats[column]
            key = column_stats_key(column, partition_identifier(partition), name)
            known = records.get(key)
            if known is None or not _compare(name, column, entries[column], actual, exact=True):
                continue
            upserts.append(MetadataRecord(key, known.type, None, {**known.raw, "ColumnStatsMetadata": _log_entry(
                entries[column], actual)}))
    return upserts, [], computed, len({(b.partition, b.name) for b in files}) + logs, sorted(set(notes))


def _log_entry(entry: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, Any]:
    """A log file's record with the statistics of its blocks (`collectColumnRangeMetadata` over
    the records the append wrote; sizes kept as Hudi recorded them, 0)."""
    decimal = bool(actual["decimal"])
    return {**entry, "minValue": _value(actual["minValue"], actual["minValue"], decimal),
            "maxValue": _value(actual["maxValue"], actual["maxValue"], decimal), "nullCount": actual["nullCount"],
            "valueCount": actual["valueCount"], "isDeleted": False}


def partition_stats_key(column: str, partition: str) -> str:
    """`HoodieMetadataPayload.getPartitionStatsIndexKey`: ColumnIndexID + PartitionIndexID (the
    column-stats key without its file part)."""
    return column_stats_key(column, partition_identifier(partition), "")[:-24]


def _partition_stats(survey: Survey, mdt: MetadataTable, records: Mapping[str, MetadataRecord]
                     ) -> tuple[list[MetadataRecord], list[str], int, int, list[str]]:
    """`convertFilesToPartitionStatsRecords`: per partition and column the latest base files'
    ranges merged (`FileFormatUtils.getColumnRangeInPartition`), a tight bound; written where the
    index's record does not cover the data. Partitions with log files are left out."""
    view = committed_view(survey)
    files = _latest_base_files(survey, view)
    by_partition = _stats_entries(mdt, PARTITION_STATS)
    indexed = _indexed_columns(survey, ((p, c) for p, cols in by_partition.items() for c in cols))
    templates = _templates(records)
    groups: dict[str, list[Any]] = {}
    for base in files:
        groups.setdefault(base.partition, []).append(base)
    upserts: list[MetadataRecord] = []
    notes: list[str] = []
    computed = 0
    for partition, members in sorted(groups.items()):
        if any(b.unread for b in members):
            notes.append(f"partition {partition or '.'}: has log files or unreadable base files; left as it is")
            continue
        for column in sorted(set.intersection(*(set(b.footer) for b in members)) & indexed):
            computed += 1
            parts = [b.footer[column] for b in members]
            low = min((p for p in parts if p["minValue"] is not None), key=lambda p: p["minValue"], default=None)
            high = max((p for p in parts if p["maxValue"] is not None), key=lambda p: p["maxValue"], default=None)
            actual = {"minValue": None if low is None else low["minValue"],
                      "maxValue": None if high is None else high["maxValue"],
                      "rawMin": None if low is None else low["rawMin"],
                      "rawMax": None if high is None else high["rawMax"],
                      "nullCount": sum(p["nullCount"] for p in parts),
                      "valueCount": sum(p["valueCount"] for p in parts),
                      "totalSize": sum(p["totalSize"] for p in parts),
                      "totalUncompressedSize": sum(p["totalUncompressedSize"] for p in parts),
                      "decimal": parts[0]["decimal"]}
            entry = by_partition.get(partition, {}).get(column)
            if entry is not None and not _compare(partition, column, entry, actual, exact=False):
                continue
            if column not in templates:
                notes.append(f"column {column}: no record to take its value type from; left to Hudi's writers")
                continue
            template_record, template = templates[column]
            name = partition_identifier(partition)
            raw = {**template_record.raw,
                   "ColumnStatsMetadata": _stats_entry(template, name, column, actual, tight=True)}
            upserts.append(MetadataRecord(partition_stats_key(column, partition), TYPE_PARTITION_STATS, None, raw))
    return upserts, [], computed, len(files), sorted(set(notes))


def _location_entry(template: Mapping[str, Any] | None, partition: str, file_id: str, epoch_ms: int
                    ) -> dict[str, Any]:
    """`HoodieMetadataPayload.createRecordIndexUpdate`: a UUID file id ("<uuid>-<n>") as its high
    and low bits with the file index (encoding 0), any other as written (encoding 1)."""
    import uuid

    entry: dict[str, Any] = dict(template or {"position": None})
    head, _, index = file_id.rpartition("-")
    try:
        value = uuid.UUID(head).int if index.isdigit() else None
    except ValueError:
        value = None
    if value is None:
        entry.update(partitionName=partition, fileIdHighBits=0, fileIdLowBits=0, fileIndex=0, fileId=file_id,
                     instantTime=epoch_ms, fileIdEncoding=1)
    else:
        high, low = value >> 64, value & ((1 << 64) - 1)
        entry.update(partitionName=partition, fileIdHighBits=high - (1 << 64) if high >= 1 << 63 else high,
                     fileIdLowBits=low - (1 << 64) if low >= 1 << 63 else low, fileIndex=int(index), fileId="",
                     instantTime=epoch_ms, fileIdEncoding=0)
    return entry


def _record_index(survey: Survey, mdt: MetadataTable, records: Mapping[str, MetadataRecord]
                  ) -> tuple[list[MetadataRecord], list[str], int, int, list[str]]:
    """`readRecordKeysFromBaseFiles` -> `createRecordIndexUpdate` for every key of the read file
    groups; keys mapping to a read group that does not hold them, or to a file group that is no
    longer live, are deleted (`createRecordIndexDelete`)."""
    full = replace(survey.settings, index_full=True)
    snapshot = _snapshot(Survey(survey.table, now=survey.now, settings=full), committed_view(survey))
    held = snapshot.held
    checked = set(snapshot.rows)
    zone = survey.table.config.timezone
    by_group: dict[tuple[str, str], Mapping[str, Any]] = {}
    for record in records.values():
        entry = record.raw.get("recordIndexMetadata")
        if isinstance(entry, Mapping):
            by_group.setdefault(record_location(entry), entry)
    template = next(iter(records.values()), None)
    upserts: list[MetadataRecord] = []
    deletes: list[str] = []
    for key, location in sorted(held.items()):
        known = records.get(key)
        entry = known.raw.get("recordIndexMetadata") if known is not None else None
        if isinstance(entry, Mapping) and record_location(entry) == location:
            continue
        same = by_group.get(location)
        if same is not None:
            new_entry = dict(same)
        else:
            epoch_ms = int(moment_of(snapshot.base_instant[location], zone).timestamp() * 1000)
            base = template.raw.get("recordIndexMetadata") if template is not None else None
            new_entry = _location_entry(base if isinstance(base, Mapping) else None, *location, epoch_ms)
        raw = {**(template.raw if template is not None else {}), "recordIndexMetadata": new_entry}
        upserts.append(MetadataRecord(key, TYPE_RECORD_INDEX, None, raw))
    for key, record in sorted(records.items()):
        entry = record.raw.get("recordIndexMetadata")
        if not isinstance(entry, Mapping) or key in held:
            continue
        location = record_location(entry)
        if location in checked or location not in snapshot.live:
            deletes.append(key)
    notes = [f"{snapshot.skipped} file group(s) with log files or without record keys left as they are"] \
        if snapshot.skipped else []
    return upserts, deletes, len(held), len(checked), notes


def _secondary(survey: Survey, mdt: MetadataTable, records: Mapping[str, MetadataRecord], index: str
               ) -> tuple[list[MetadataRecord], list[str], int, int, list[str]]:
    """`readSecondaryKeysFromFileSlices` -> `HoodieMetadataPayload.createSecondaryIndexRecord` for
    every (value, record key) of the read file groups; pairs whose record key the read groups hold
    with another value are deleted."""
    column = secondary_indexes(survey).get(index)
    if column is None:
        raise RepairUnavailable(f"{survey.table.uri}: {index}: no identity secondary-index definition in .index_defs "
                                "to rebuild it from; drop it so Hudi writers rebuild it")
    full = replace(survey.settings, index_full=True)
    snapshot = _snapshot(Survey(survey.table, now=survey.now, settings=full), committed_view(survey), [column])
    expected, keys = expected_secondary(snapshot, column)
    template = next(iter(records.values()), None)
    base_raw = dict(template.raw) if template is not None else {}
    upserts = [MetadataRecord(key, TYPE_SECONDARY_INDEX, None,
                              {**base_raw, "SecondaryIndexMetadata": {"isDeleted": False}})
               for key in sorted(expected - set(records))]
    deletes = []
    for key in sorted(set(records) - expected):
        parts = split_key(key)
        if parts is None or parts[1] in keys or not snapshot.skipped:
            deletes.append(key)
    notes = [f"{snapshot.skipped} file group(s) with log files left as they are"] if snapshot.skipped else []
    return upserts, deletes, len(expected), len(snapshot.rows), notes


def _route_key(index: str, key: str, groups: int) -> int:
    """Where Hudi puts a new key: `HoodieTableMetadataUtil.getSecondaryKeyToFileGroupMappingFunction`
    (a secondary index: `mapRecordKeyToFileGroupIndex` of its escaped value and `$`), else
    `mapRecordKeyToFileGroupIndex` of the key."""
    if index.startswith(SECONDARY_PREFIX):
        parts = split_key(key)
        if parts is not None:
            return file_group_index(escape_key(None if parts[0] == "\x00" else parts[0]) + "$", groups)
    return file_group_index(key, groups)


def _rebuild(survey: Survey, index: str) -> _Rebuild:
    table = survey.table
    if table.config.version < 8:
        raise RepairUnavailable(f"{table.uri}: table version {table.config.version}: Cleanline rebuilds indexes of "
                                "table versions 8 and 9 only; drop the index so Hudi writers rebuild it")
    if index not in table.config.metadata_partitions:
        raise RepairUnavailable(f"{table.uri}: {index} is not an index partition hoodie.table.metadata.partitions "
                                f"lists complete (it lists: {', '.join(table_indexes(table)) or 'none'})")
    mdt = MetadataTable(table)
    slices = [s.file_id for s in mdt.latest_slices(index)]
    if not slices:
        raise RepairUnavailable(f"{table.uri}: {index} has no file group in the metadata table: drop it (`cleanline "
                                "index drop`) so Hudi writers initialise it")
    records, where = _located(mdt, index)
    if index == COLUMN_STATS:
        upserts, deletes, computed, read, notes = _column_stats(survey, mdt, records)
    elif index == PARTITION_STATS:
        upserts, deletes, computed, read, notes = _partition_stats(survey, mdt, records)
    elif index == RECORD_INDEX:
        upserts, deletes, computed, read, notes = _record_index(survey, mdt, records)
    elif index.startswith(SECONDARY_PREFIX):
        upserts, deletes, computed, read, notes = _secondary(survey, mdt, records, index)
    else:
        raise RepairUnavailable(f"{table.uri}: {index}: Cleanline does not rebuild this kind of index; drop it "
                                "(`cleanline index drop`) so Hudi writers rebuild it")
    groups: dict[str, tuple[list[MetadataRecord], list[str]]] = {}
    for record in upserts:
        file_id = where.get(record.key) or slices[_route_key(index, record.key, len(slices))]
        groups.setdefault(file_id, ([], []))[0].append(record)
    for key in deletes:
        groups.setdefault(where[key], ([], []))[1].append(key)
    bytes_read = _bytes_read(survey)
    estimate = RebuildEstimate(index, read, bytes_read, computed, len(upserts), len(deletes), len(groups),
                               round(bytes_read / READ_BYTES_PER_SECOND, 2),
                               (computed + len(records)) * BYTES_PER_RECORD)
    return _Rebuild(groups, estimate, tuple(notes))


def _bytes_read(survey: Survey) -> int:
    """The bytes of the latest base files the rebuild reads (their listed sizes)."""
    total = 0
    for file_slice in survey.table.file_system_view(listing=survey.sized_listing).latest_slices():
        if file_slice.base_file is not None and not file_slice.log_files:
            total += max(0, file_slice.base_file.size)
    return total


def _changes(rebuild: _Rebuild) -> list[Change]:
    estimate = rebuild.estimate
    found = [Change(REBUILD, estimate.index, estimate.bytes_read,
                    f"{estimate.upserts} record(s) upserted, {estimate.deletes} deleted in "
                    f"{estimate.index_file_groups} file group(s), from {estimate.records} computed over "
                    f"{estimate.data_file_groups} data file group(s); about {estimate.seconds:.1f} s and "
                    f"{estimate.memory_bytes / (1 << 20):.1f} MiB")]
    for file_id, (records, deletes) in sorted(rebuild.groups.items()):
        found.append(Change("metadata write", f"{estimate.index}/{file_id}", 0,
                            f"{len(records)} upsert(s), {len(deletes)} delete(s)"))
    return found


def plan_rebuild(table: Table, index: str, *, settings: DoctorSettings | None = None) -> RepairPlan:
    """The rebuild of `index` before anything changes: its estimate (notes, and the first
    change's detail) and the metadata-table file groups it writes to. RepairUnavailable when it
    cannot be rebuilt here or nothing is wrong with it."""
    survey = Survey(table, settings=settings)
    rebuild = _rebuild(survey, index)
    if not rebuild.groups:
        raise RepairUnavailable(f"{table.uri}: {index} already agrees with the data: nothing to rebuild")
    estimate = rebuild.estimate
    notes = (f"estimate: {estimate.data_file_groups} data file group(s), {estimate.bytes_read} bytes read, "
             f"{estimate.records} record(s) computed, {estimate.upserts} upsert(s) and {estimate.deletes} delete(s) in "
             f"{estimate.index_file_groups} file group(s), about {estimate.seconds:.1f} s and "
             f"{estimate.memory_bytes} bytes of memory",
             "one metadata-table deltacommit at a new time, under the table's lock; re-run after a crash to finish",
             *rebuild.notes)
    return RepairPlan(table.uri, KIND, _findings_of(survey, index), tuple(_changes(rebuild)), notes)


def _leftovers(mdt: MetadataTable) -> list[str]:
    """Pending metadata-table deltacommits at times no data-table instant has: what a rebuild
    (or metadata sync) that crashed left (Hudi's own are at their data-table instant's time)."""
    data = {i.requested_time for i in mdt.table.timeline}
    return sorted({i.requested_time for i in mdt.mdt.timeline
                   if i.action == DELTACOMMIT and i.state is not State.COMPLETED and i.requested_time not in data})


def run_index_repair(table: Table, plan: RepairPlan, *, transactions: Transactions | None = None,
                     settings: DoctorSettings | None = None, dry_run: bool = True) -> RepairResult:
    """Run an approved rebuild or drop plan under the table's lock. A dry run unless told."""
    if dry_run:
        return RepairResult(plan.table, plan.kind, skipped=tuple((c, "dry run: nothing changed") for c in plan.changes),
                            notes=("dry run: nothing changed: pass dry_run=False to repair",))
    session = Session(table, transactions or Transactions(table, settings.options if settings else None),
                      settings or DoctorSettings())
    return run(session, plan)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    """The doctor's `run` of an index repair: each planned rebuild or drop in turn."""
    table = session.table
    done: list[Change] = []
    skipped: list[tuple[Change, str]] = []
    failed: list[tuple[Change, str]] = []
    with session.transactions.state_change():
        for head in approved.changes:
            if head.action == REBUILD:
                _run_rebuild(session, approved, head, done, skipped)
            elif head.action == DROP:
                run_drop(table, approved, head, done, skipped)
    table.reload()
    return RepairResult(table.uri, approved.kind, tuple(done), tuple(skipped), tuple(failed))


def _under(plan: RepairPlan, head: Change) -> list[Change]:
    from timeline.doctor.findings import changes_under
    return changes_under(plan.changes, head, (REBUILD, DROP))


def _run_rebuild(session: Session, approved: RepairPlan, head: Change, done: list[Change],
                 skipped: list[tuple[Change, str]]) -> None:
    table = session.table
    index = head.target
    mdt = MetadataTable(table)
    for leftover in _leftovers(mdt):
        roll_back_pending(mdt, leftover)  # a crashed rebuild's deltacommit, never completed: no reader merged it
    table.reload()
    rebuild = _rebuild(session.survey(), index)
    planned = _under(approved, head)
    if not rebuild.groups:
        skipped += [(c, "already agrees with the data") for c in planned]
        return
    allowed = {c.target for c in planned if c.action == "metadata write"}
    extra = sorted(f"{index}/{f}" for f in rebuild.groups if f"{index}/{f}" not in allowed)
    if extra:
        from timeline.doctor.findings import RepairInvalidated
        raise RepairInvalidated(f"{table.uri}: {index} now needs writes to {extra[0]} the plan did not preview; "
                                "nothing was changed: plan the rebuild again")
    mdt = MetadataTable(table)
    data = mdt.table.timeline
    latest = max((t for i in data for t in (i.requested_time, i.completion_time or "")), default="")
    instant_time = mdt.mdt.new_instant_time(after=latest)
    write_routed_update(mdt, instant_time, index, rebuild.groups)
    written = {f"{index}/{f}" for f in rebuild.groups}
    for change in planned:
        if change.action == REBUILD or change.target in written:
            done.append(change)
        else:
            skipped.append((change, "already agrees with the data"))


def plan(survey: Survey) -> RepairPlan:
    """The doctor's plan for index-drift: every drifted index rebuilt (an index without file
    groups dropped)."""
    from timeline.doctor.check import no_repair

    findings = diagnose(survey)
    fixable = [f for f in findings if f.repairable]
    if not fixable:
        raise no_repair(KIND, findings, survey.table.uri)
    changes: list[Change] = []
    notes: list[str] = []
    for finding in fixable:
        index = getattr(finding.evidence, "index", "")
        if any(c.target == index for c in changes):
            continue
        if finding.repair.startswith("drop"):
            dropped = plan_drop(survey.table, index)
            changes += dropped.changes
            notes += dropped.notes
        else:
            try:
                rebuilt = plan_rebuild(survey.table, index, settings=survey.settings)
            except RepairUnavailable as exc:
                notes.append(str(exc))
                continue
            changes += rebuilt.changes
            notes += rebuilt.notes
    if not changes:
        raise no_repair(KIND, findings, survey.table.uri)
    return RepairPlan(survey.table.uri, KIND, tuple(fixable), tuple(changes), tuple(notes))





CHECK = Check(KIND, diagnose, plan, run)

__all__ = ["CHECK", "DROP", "REBUILD", "IndexState", "RebuildEstimate", "index_states", "plan", "plan_drop",
           "plan_rebuild", "run", "run_index_repair", "serves", "table_indexes"]
