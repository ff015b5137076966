"""Compacting merge-on-read tables: schedule a compaction plan over the latest file slices with a
base file and log files, then run it with one task per file group, as Hudi's default strategy
does."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from contextlib import suppress
from functools import partial
from typing import Any

from pyspark.sql import SparkSession

from timeline.exceptions import FileExists
from timeline.files import base_file_name
from timeline.fsview import FileSlice
from timeline.instant import COMPACTION, Instant, State
from timeline.metadata.records import CompactionPlan, SliceInfo
from timeline.metadata.written import by_partition, commit_metadata
from timeline.services.merge import CommittedInstants
from timeline.spark.writer import metadata_table
from timeline.spark.writer.create import CREATE_SCHEMA, PRECOMBINE_FIELD
from timeline.spark.writer.files import Files, Task, file_stat, parquet
from timeline.spark.writer.merge import merge_slice
from timeline.spark.writer.model import FILE_NAME, IOType, WriteError
from timeline.spark.writer.publish import complete, publish
from timeline.spark.writer.tasks import InstantContext
from timeline.table import Table
from timeline.transactions import Transactions

_MB = 1024 * 1024


def compact(spark: SparkSession, path: str, *, options: Mapping[str, str] | None = None) -> str | None:
    """Compact a merge-on-read table: run its pending compactions (a crashed one is resumed), or
    else schedule one over every latest file slice with a base file and log files and run it.
    Writes `<t>.compaction.requested` (HoodieCompactionPlan), `<t>.compaction.inflight`, one new
    base file per file group (one task each, base and committed log blocks merged), then the
    completed commit (`compacted: true`, operationType COMPACT). Returns the last compaction's
    instant time, None when there was nothing to compact. `options` are Hudi writer options as
    for `write`: with a lock configured (or another writer's lease found), the plan is scheduled
    and the compaction completed under the table's lock, as Hudi's table service client does
    (`BaseHoodieTableServiceClient.scheduleTableServiceInternal` and `completeCompaction` take
    `txnManager.beginStateChange`)."""
    table = Table.open(path)
    transactions = Transactions(table, options, application_id=f"cleanline-writer-{os.getpid()}",
                                live_writer_rule=False)
    if not table.config.is_mor:
        raise WriteError(f"{table.uri}: only merge-on-read tables are compacted")
    metadata_table.check_keepable(table)
    pending = [i.requested_time for i in table.timeline.pending_compactions()]
    if not pending:
        with transactions.state_change():
            scheduled = _schedule_compaction(table.reload())
        pending = [scheduled] if scheduled else []
    for instant in pending:
        _run_compaction(spark, table.reload(), instant, transactions)
    return pending[-1] if pending else None


def _compaction_operation(slice_: FileSlice) -> dict[str, Any]:
    """A HoodieCompactionOperation (plan version 2: file names relative to the partition) with
    the metrics of Hudi's default strategy."""
    assert slice_.base_file is not None
    logs = sum(log.size for log in slice_.log_files)
    read, written = (slice_.base_file.size + logs) // _MB, slice_.base_file.size // _MB
    info = SliceInfo(slice_.partition, slice_.file_id, slice_.base_instant_time, slice_.base_file.name,
                     tuple(log.name for log in slice_.log_files))
    return info.compaction_operation({
        "TOTAL_LOG_FILES": float(len(slice_.log_files)), "TOTAL_IO_READ_MB": float(read),
        "TOTAL_IO_WRITE_MB": float(written), "TOTAL_IO_MB": float(read + written), "TOTAL_LOG_FILES_SIZE": float(logs)})


def _schedule_compaction(table: Table) -> str | None:
    slices = [s for s in table.file_system_view().latest_slices() if s.log_files and s.base_file]
    if not slices:
        return None
    instant = table.new_instant_time()
    plan = CompactionPlan.build(_compaction_operation(s) for s in slices)
    publish(table, Instant(instant, COMPACTION, State.REQUESTED), plan)
    return instant


def _compact_group(ctx: InstantContext, operation: SliceInfo) -> dict[str, Any]:
    """Runs on an executor: merge one file group's base file and logs into a new base file."""
    started, task = time.monotonic(), Task.current()
    partition, file_id, base = operation.partition, operation.file_id, operation.data_file
    files = Files(ctx.uri, ctx.instant)
    logs = list(operation.log_files)
    merged = merge_slice(files, partition, base, logs, ctx.precombine, ctx.committed)
    assert merged.schema is not None
    name = base_file_name(file_id, task.token, ctx.instant)
    rows = [{**row, FILE_NAME: name} for row in merged.records.values()]
    footer = (merged.schema.metadata or {}).get(b"parquet.avro.schema")
    size = files.create(partition, name, parquet(rows, merged.schema.remove_metadata(),
                                                 footer.decode() if footer else None), IOType.MERGE)
    updated = sum(1 for key, row in merged.records.items() if key in merged.base and row is not merged.base[key])
    extra = {"prev_base_file": base} if ctx.version >= 8 else {}
    return file_stat(partition, file_id, name, size, started, "upsert", prev_commit=operation.base_instant_time,
                     num_writes=len(rows), num_deletes=sum(1 for key in merged.base if key not in merged.records),
                     num_update_writes=updated, num_inserts=len(rows) - updated, total_log_records=merged.log_records,
                     total_log_files_compacted=len(logs), total_log_size_compacted=merged.log_bytes,
                     total_updated_records_compacted=updated, total_log_blocks=merged.log_blocks, **extra)


def _run_compaction(spark: SparkSession, table: Table, instant: str, transactions: Transactions) -> None:
    requested = Instant(instant, COMPACTION, State.REQUESTED)
    operations = list(table.read(requested, CompactionPlan, State.REQUESTED).operations)
    log_only = [f"{op.partition}/{op.file_id}" for op in operations if not op.data_file]
    if log_only:
        raise WriteError(f"{table.uri}: compaction {instant} includes file groups without a base file "
                         f"({', '.join(log_only)}); this writer compacts only file groups with one")
    inflight = requested.at(State.INFLIGHT)
    with transactions.state_change(), suppress(FileExists):  # present when a crashed run is resumed
        publish(table, inflight, None)
    ctx = InstantContext(table.uri, instant, table.version, table.config.get(PRECOMBINE_FIELD) or "",
                         CommittedInstants.of(table))
    stats = spark.sparkContext.parallelize(operations, max(1, len(operations))).map(
        partial(_compact_group, ctx)).collect() if operations else []
    content = commit_metadata(by_partition(stats), "COMPACT", table.config.get(CREATE_SCHEMA), compacted=True)
    with transactions.state_change():  # completed under the lock, as Hudi's completeCompaction
        metadata_table.update_for_write(table, instant, content)  # before the compaction completes, as Hudi's commit
        complete(table, inflight, content)
