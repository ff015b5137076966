"""Running a requested compaction with the local engine (pyarrow), as Hudi's compactor runs one
(`BaseHoodieTableServiceClient.compact` -> `RunCompactionActionExecutor` ->
`HoodieCompactor.compact`, one `HoodieMergeHandle` per operation, then `completeCompaction`):

1. a compaction left inflight by a crashed run is rolled back to requested first
   (`BaseHoodieTableServiceClient.compact`: `table.rollbackInflightCompaction`, Cleanline's
   `pending_rollbacks.rollback_table_service`; refused while its heartbeat is alive);
2. under the table's lock the instant moves to inflight
   (`HoodieActiveTimeline.transitionCompactionRequestedToInflight`, an empty file);
3. per operation, a MERGE marker, then a new base file `<fileId>_<token>_<t>.parquet`: the
   slice's records merged (`timeline.services.merge`), meta fields kept but the file name
   (`HoodieMergeHandle` with preserveMetadata), gzip Parquet with the Avro schema and Hudi's
   bloom filter and min/max record keys in the footer (`HoodieAvroParquetWriter`,
   `HoodieBloomFilterWriteSupport`); nothing else changes on the table;
   a heartbeat file (`.hoodie/.heartbeat/<t>`) is kept fresh meanwhile, and removed at the end;
4. under the table's lock, the metadata table's deltacommit at the compaction's time (its
   `files` partition: `convertMetadataToFilesPartitionRecords`; Hudi writes no record-index or
   secondary-index record for a COMPACT commit), then the completed `<t>.commit` with the
   write stats (`compacted: true`, operationType COMPACT; v8/v9 with a completion time), then
   the markers go (`WriteMarkers.quietDeleteMarkerDir`).

A crash anywhere leaves the requested plan (re-run as it is) or an inflight compaction whose
files Hudi's `rollbackInflightCompaction` removes (from the markers) before running the plan
again; a completed metadata-table deltacommit of an inflight compaction is rolled back with it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from timeline import transition
from timeline.config import META_FOLDER
from timeline.files import base_file_name
from timeline.instant import COMPACTION, Instant, State
from timeline.mdt.reader import metadata_table
from timeline.mdt.writer import COLUMN_STATS, check_writable, write_update
from timeline.metadata.raw import file_name_of
from timeline.metadata.records import CommitMetadata, CompactionPlan, SliceInfo
from timeline.metadata.written import by_partition, commit_metadata, runtime_stats, write_stat
from timeline.services.bloom import key_footer
from timeline.services.compaction_mdt import compaction_updates, file_column_stats
from timeline.services.merge import RECORD_KEY, CommittedInstants, Deleted, LogMergeError, SliceMerger, last_schema
from timeline.services.refusals import CompactionRefused, MergeRules, check_reproducible
from timeline.storage import Storage
from timeline.table import Table

if TYPE_CHECKING:
    from timeline.logformat import LogBlock
    from timeline.transactions import Transactions

FILE_NAME = "_hoodie_file_name"
COMPACT = "COMPACT"   # WriteOperationType.COMPACT
AVRO_SCHEMA_FOOTER = "parquet.avro.schema"


@dataclass(frozen=True, slots=True)
class CompactedFile:
    """One new base file of a compaction: its path in the table, its records and bytes, and the
    log files and records merged into it."""

    partition: str
    file_id: str
    path: str
    records: int
    bytes: int
    log_files: int
    log_records: int


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """A compaction run: its completed instant, every new base file, and the rollback of a crashed
    earlier run of it (None when it was requested)."""

    instant: Instant
    new_files: tuple[CompactedFile, ...]
    rolled_back: Instant | None = None

    @property
    def files(self) -> list[str]:
        return [f.path for f in self.new_files]


def pending_compaction(table: Table, instant_time: str | None) -> Instant:
    """The pending compaction at `instant_time`, or the earliest pending one
    (`HoodieTimeline.filterPendingCompactionTimeline().firstInstant`)."""
    pending = list(table.reload().timeline.pending_compactions())
    if instant_time is not None:
        pending = [i for i in pending if i.requested_time == instant_time]
    if not pending:
        which = f" at {instant_time}" if instant_time else ""
        raise CompactionRefused(table.uri, f"no pending compaction{which} on the active timeline")
    return pending[0]


def _token(index: int) -> str:
    """A Hudi write token (`FSUtils.makeWriteToken`: partition id, stage id, task attempt id)."""
    return f"{index}-0-{index}"


def _avro_schema(base_footer: Mapping[bytes, bytes], queue: list[LogBlock]) -> str | None:
    found = base_footer.get(AVRO_SCHEMA_FOOTER.encode())
    if found:
        return found.decode()
    return last_schema(queue)


def _rows(schema: pa.Schema, records: list[dict[str, Any]]) -> pa.Table:
    names = schema.names
    return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in records], schema=schema)


def parquet_bytes(table: pa.Table, avro_schema: str | None) -> bytes:
    """A base file as `HoodieAvroParquetWriter` leaves one: gzip Parquet (`hoodie.parquet.
    compression.codec`'s default) with the Avro schema and the record keys' bloom filter and
    range in its footer (no Arrow schema)."""
    footer = {"writer.model.name": "avro"}
    if avro_schema:
        footer[AVRO_SCHEMA_FOOTER] = avro_schema
    footer |= key_footer(table.column(RECORD_KEY).to_pylist() if table.num_rows else [])
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema.remove_metadata(), compression="gzip", store_schema=False) as writer:
        writer.write_table(table.replace_schema_metadata(None))
        writer.add_key_value_metadata(footer)  # store_schema=False leaves the schema's own metadata out
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _arrow_type(avro: Any) -> pa.DataType:
    """The Arrow type of an Avro field type (a log-only file group has no base file to copy)."""
    if isinstance(avro, list):
        types = [t for t in avro if t != "null"]
        if len(types) != 1:
            raise LogMergeError(f"the Avro union {avro} has no single Parquet type")
        return _arrow_type(types[0])
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "decimal":
            return pa.decimal128(int(avro["precision"]), int(avro.get("scale", 0)))
        if logical == "timestamp-micros":
            return pa.timestamp("us", tz="UTC")
        if logical == "timestamp-millis":
            return pa.timestamp("ms", tz="UTC")
        if logical == "date":
            return pa.date32()
        return _arrow_type(avro["type"])
    simple = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "double": pa.float64(),
              "float": pa.float32(), "boolean": pa.bool_(), "bytes": pa.binary()}
    if avro not in simple:
        raise LogMergeError(f"the Avro type {avro} of a log-only file group is not one Cleanline writes")
    return simple[avro]


def _schema_of_avro(avro_schema: str) -> pa.Schema:
    fields = json.loads(avro_schema)["fields"]
    return pa.schema([pa.field(f["name"], _arrow_type(f["type"])) for f in fields])


def compact_operation(table: Table, instant: str, index: int, operation: SliceInfo, rules: MergeRules,
                      committed: CommittedInstants, *, column_stats: bool = False
                      ) -> tuple[dict[str, Any], CompactedFile, dict[str, dict[str, Any]], pa.Schema]:
    """Merge one file group's slice into a new base file (marker first); its write stat, what
    it holds, and the column stats of its columns and its schema (for the metadata table: only
    these small values are kept, not the footer, which holds the bloom filter)."""
    started = time.monotonic()
    storage, partition = table.storage, operation.partition
    folder = Storage.join(table.base, partition) if partition else table.base
    merger = SliceMerger(rules, committed.__contains__)
    base: pa.Table | None = None
    footer: Mapping[bytes, bytes] = {}
    if operation.data_file:
        base = pq.read_table(pa.BufferReader(storage.read(Storage.join(folder, file_name_of(operation.data_file)))))
        footer = base.schema.metadata or {}
    log: dict[str, dict[str, Any] | Deleted] = {}
    queue: list[LogBlock] = []
    log_bytes = 0
    for name in operation.log_files:
        path = Storage.join(folder, file_name_of(name))
        data = storage.read(path)
        log_bytes += len(data)
        merger.read_log(data, path, log, queue)
    merger.apply(queue, folder, log)
    avro = _avro_schema(footer, queue)
    if base is not None:
        schema = base.schema.remove_metadata()
    elif avro is not None:
        schema = _schema_of_avro(avro)
    else:
        raise LogMergeError(f"{folder}/{operation.file_id}: no base file and no data block to take a schema from")
    evolved = sorted(merger.fields - set(schema.names))
    if evolved:  # HoodieMergeHandle writes with the latest table schema; Cleanline keeps the base file's
        raise LogMergeError(f"{folder}/{operation.file_id}: the log records carry columns the base file has not "
                            f"({', '.join(evolved)}); Cleanline does not evolve a base file's schema")
    name = base_file_name(operation.file_id, _token(index), instant)
    # Only the base records the log touches go through Python; the others stay Arrow rows
    kept = pa.Table.from_pylist([], schema=schema)
    base_records: dict[str, dict[str, Any]] = {}
    if base is not None:
        touched = pc.is_in(base.column(RECORD_KEY), value_set=pa.array(list(log), pa.string()))
        base_records = {row[RECORD_KEY]: row for row in base.filter(touched).to_pylist()}
        kept = base.filter(pc.invert(touched)).replace_schema_metadata(None)
    merged = merger.merge_with_base(base_records, log)
    index_of = schema.get_field_index(FILE_NAME)
    kept = kept.set_column(index_of, schema.field(index_of), pa.array([name] * kept.num_rows, pa.string()))
    fresh = _rows(schema, [{**row, FILE_NAME: name} for row in merged.values()])
    records = pa.concat_tables([kept, fresh.cast(kept.schema)])
    data = parquet_bytes(records, avro)
    marker = Storage.join(table.base, META_FOLDER, ".temp", instant, partition, f"{name}.marker.MERGE") if partition \
        else Storage.join(table.base, META_FOLDER, ".temp", instant, f"{name}.marker.MERGE")
    storage.write(marker, b"", overwrite=True)
    storage.write(Storage.join(folder, name), data)
    updated = sum(1 for key, row in merged.items() if key in base_records and row is not base_records[key])
    inserted = sum(1 for key in merged if key not in base_records)
    extra = {"prev_base_file": file_name_of(operation.data_file)} if table.version >= 8 and operation.data_file else {}
    elapsed = int((time.monotonic() - started) * 1000)
    written = pq.ParquetFile(pa.BufferReader(data))
    stats = file_column_stats(written.metadata, written.schema_arrow, name, written.schema_arrow.names,
                              table.version, {}, strict=False) if column_stats else {}
    relative = f"{partition}/{name}" if partition else name
    compacted = CompactedFile(partition, operation.file_id, relative, records.num_rows, len(data),
                              len(operation.log_files), merger.log_records)
    return write_stat(file_id=operation.file_id, path=relative,
                      prev_commit=operation.base_instant_time or "null", num_writes=records.num_rows,
                      num_deletes=sum(1 for key in base_records if key not in merged),
                      num_update_writes=updated, num_inserts=inserted, total_write_bytes=len(data),
                      partition_path=partition, total_log_records=merger.log_records,
                      total_log_files_compacted=len(operation.log_files), total_log_size_compacted=log_bytes,
                      total_updated_records_compacted=updated, total_log_blocks=merger.log_blocks,
                      total_corrupt_log_block=merger.corrupt_blocks, total_rollback_blocks=merger.rollback_blocks,
                      file_size_in_bytes=len(data), runtime_stats=runtime_stats(upsert_ms=elapsed),
                      **extra), compacted, stats, written.schema_arrow.remove_metadata()


def run_compaction(table: Table, transactions: Transactions, instant_time: str | None = None, *,
                   options: Mapping[str, str] | None = None,
                   after_file: Callable[[str], None] | None = None) -> CompactionResult:
    """Run the pending compaction at `instant_time` (or the earliest pending one) as the
    module's docstring says. CompactionRefused (before anything is written) for a table whose
    merge Cleanline cannot reproduce or with no such compaction; RollbackRefused for an inflight
    one whose heartbeat is alive. `after_file` is told each new base file's path once written
    (a caller's progress; tests stop a run there)."""
    rules = check_reproducible(table, options)
    target = pending_compaction(table, instant_time)
    transactions.own_instants.add(target.requested_time)  # the compaction run here is no other live writer
    try:
        return _run(table, transactions, target, rules, options, after_file)
    finally:
        transactions.own_instants.discard(target.requested_time)


def _run(table: Table, transactions: Transactions, target: Instant, rules: MergeRules,
         options: Mapping[str, str] | None, after_file: Callable[[str], None] | None) -> CompactionResult:
    from timeline.pending_rollbacks import rollback_table_service

    rolled_back = None
    if target.is_inflight:
        with transactions.state_change():
            rolled_back = rollback_table_service(table, target.requested_time, options=options)
        target = pending_compaction(table, target.requested_time)
    instant = target.requested_time
    plan = table.read(Instant(instant, COMPACTION, State.REQUESTED), CompactionPlan, State.REQUESTED)
    mdt = metadata_table(table)
    if mdt is not None:
        check_writable(mdt)
    with transactions.state_change():
        inflight = transition.start(table, Instant(instant, COMPACTION, State.REQUESTED), None)
    _beat(table, instant)
    try:
        return _compact(table, transactions, inflight, plan, rules, rolled_back, after_file)
    finally:
        table.storage.delete(_heartbeat(table, instant))  # HoodieHeartbeatClient.stop


def _heartbeat(table: Table, instant: str) -> str:
    return table.path(".hoodie", ".heartbeat", instant)


def _beat(table: Table, instant: str) -> None:
    """`HoodieHeartbeatClient`'s heartbeat file for the running compaction, touched after every
    new base file: another run (Cleanline's, which checks it before rolling an inflight
    compaction back) leaves a live one alone."""
    table.storage.write(_heartbeat(table, instant), b"", overwrite=True)


def _compact(table: Table, transactions: Transactions, inflight: Instant, plan: CompactionPlan, rules: MergeRules,
             rolled_back: Instant | None, after_file: Callable[[str], None] | None) -> CompactionResult:
    instant = inflight.requested_time
    committed = CommittedInstants.of(table.reload())
    stats = []
    files = []
    footers: dict[tuple[str, str], tuple[dict[str, dict[str, Any]], pa.Schema]] = {}
    config = table.config
    indexed = config.metadata_table_enabled and COLUMN_STATS in {*config.metadata_partitions,
                                                                 *config.metadata_partitions_inflight}
    for index, operation in enumerate(plan.operations):
        stat, compacted, footer, schema = compact_operation(table, instant, index, operation, rules, committed,
                                                            column_stats=indexed)
        stats.append(stat)
        files.append(compacted)
        footers[(operation.partition, file_name_of(compacted.path))] = (footer, schema)
        _beat(table, instant)
        if after_file is not None:
            after_file(table.path(compacted.path))
    content = commit_metadata(by_partition(stats), COMPACT, _commit_schema(table), compacted=True)
    with transactions.state_change():
        mdt = metadata_table(table)
        written = None
        if mdt is not None:
            updates = compaction_updates(mdt, CommitMetadata.from_raw(content), footers,
                                         _latest_files(table, plan, footers))
            written = write_update(mdt, instant, updates)
        done = transition.complete(table, inflight, content,
                                   after=(written.completion_time or "") if written is not None else "")
    table.storage.delete_dir(Storage.join(table.base, META_FOLDER, ".temp", instant))
    return CompactionResult(done, tuple(files), rolled_back)


def _latest_files(table: Table, plan: CompactionPlan, footers: Mapping[tuple[str, str], Any]) -> dict[str, set[str]]:
    """Partition -> the file names of its latest slices with the compaction's new base files
    (`HoodieTableMetadataUtil.getPartitionLatestFileSlicesIncludingInflight`), for the touched
    partitions."""
    compacted = {(op.partition, op.file_id) for op in plan.operations}
    out: dict[str, set[str]] = {p: set() for p, _ in footers}
    for partition, name in footers:
        out[partition].add(name)
    view = table.reload().file_system_view()
    for partition in out:
        for slice_ in view.latest_slices(partition):
            if (partition, slice_.file_id) in compacted:
                continue
            out[partition] |= set(slice_.file_names)
    return out


def _commit_schema(table: Table) -> str | None:
    """The writer schema the latest completed write recorded (`extraMetadata.schema`), which
    Hudi's compaction commit carries on."""
    for instant in reversed(list(table.timeline.writes().completed())):
        try:
            metadata = table.read(instant, CommitMetadata)
        except Exception:  # an unreadable commit: look further back  # noqa: BLE001
            continue
        schema = metadata.extra_metadata.get("schema")
        if schema:
            return str(schema)
    return table.config.get("hoodie.table.create.schema")


__all__ = ["CompactedFile", "CompactionResult", "compact_operation", "parquet_bytes", "pending_compaction",
           "run_compaction"]
