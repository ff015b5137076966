"""The write job: check the arguments and the table (creating it on first use), plan on the
driver, run one task per file group, publish the instant."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession

from timeline.config import TableType
from timeline.instant import Instant, State
from timeline.metadata.written import by_partition, commit_metadata
from timeline.services.merge import CommittedInstants
from timeline.spark.writer import metadata_table
from timeline.spark.writer.create import TableSpec, check_table, create_table, existing_table, table_spec
from timeline.spark.writer.merge import deduplicated
from timeline.spark.writer.model import META_FIELDS, Operation, WriteError
from timeline.spark.writer.plan import (
    execute,
    located,
    plan_jobs,
    replaced_file_groups,
    target_slices,
    workload_profile,
    workload_stats,
)
from timeline.spark.writer.publish import action, complete, request, start
from timeline.spark.writer.schema import RecordSchema, aligned, keyed_records, record_schema
from timeline.spark.writer.tasks import InstantContext, WriteContext
from timeline.storage import storage_for
from timeline.table import Table
from timeline.transactions import Transactions

DEFAULT_MAX_FILE_SIZE = 120 * 1024 * 1024  # hoodie.parquet.max.file.size
RECORD_SIZE_ESTIMATE = 1024  # hoodie.copyonwrite.record.size.estimate: bytes per record


def write(spark: SparkSession, df: DataFrame, path: str, *, table_name: str, record_key: str,
          precombine_field: str, partition_by: str | None, operation: str | Operation,
          table_type: str | TableType = TableType.COPY_ON_WRITE, table_version: int = 8,
          hive_style_partitioning: bool = False, max_file_size: int = DEFAULT_MAX_FILE_SIZE,
          options: Mapping[str, str] | None = None) -> str:
    """Write `df` to the Hudi table at `path` (created on first use) with `operation` (insert,
    upsert, delete, insert_overwrite, insert_overwrite_table; any case) and return the write's
    instant time.

    `record_key` and `partition_by` name one column each (`partition_by=None`: a non-partitioned
    table; `hive_style_partitioning`: `field=value` folders); `precombine_field` orders the
    records of one key. `table_type` is COPY_ON_WRITE or MERGE_ON_READ (or COW, MOR);
    `table_version` 6 or 8. Meta columns in `df` are ignored. New file groups hold about
    `max_file_size` bytes of records, estimated at 1 KiB each (Hudi's default estimate). An
    existing table must agree on type, version, keys and partitioning, and `df` must have the
    table's columns (deletes too: whole records, as read from the table). Raises WriteError
    before writing anything on bad input, MetadataTableEnabledError on a table whose metadata
    table has partitions besides `files` (the writer keeps only the listing:
    timeline/spark/writer/metadata_table.py). `options` are Hudi writer options over
    `hoodie.properties`: with optimistic concurrency control (`hoodie.write.concurrency.mode`,
    `hoodie.write.lock.*`) the write takes the table's lock to start its instant and to
    complete it, as a Hudi writer does (timeline/transactions.py); `hoodie.metadata.enable=true`
    creates a new table with its metadata table (version 8)."""
    spec = table_spec(table_name, table_type, table_version, record_key, precombine_field, partition_by,
                      hive_style_partitioning)
    try:
        op = Operation(operation.upper())
    except ValueError:
        raise WriteError(f"unknown operation {operation!r} ({', '.join(o.value.lower() for o in Operation)})") from None
    if max_file_size <= 0:
        raise WriteError(f"max_file_size must be positive, not {max_file_size}")
    data = df.drop(*META_FIELDS)
    wanted = [c for c in (record_key, precombine_field, partition_by) if c]
    if missing := [c for c in wanted if c not in data.columns]:
        raise WriteError(f"{path}: the records have no column {', '.join(map(repr, missing))}")
    table = existing_table(path)
    if table is not None:
        check_table(table, spec)
        metadata_table.check_keepable(table)
        data = aligned(data, table)
    elif metadata_table.wanted(options) and spec.version < 8:
        raise WriteError(f"{path}: this writer creates metadata tables on table version 8 only")
    schema = record_schema(data.schema, spec.name)
    if table is None:
        storage, base = storage_for(path)
        create_table(storage, base, spec.properties(schema.data_avro))
        table = Table.load(storage, base)
    records_per_file = max(1, max_file_size // RECORD_SIZE_ESTIMATE)
    create_mdt = metadata_table.wanted(options) and not table.config.metadata_table_enabled and \
        not list(table.timeline.writes().completed())
    return _write(spark, table, spec, schema, op, keyed_records(data, spec, schema), records_per_file, create_mdt,
                  Transactions(table, options, application_id=f"cleanline-writer-{os.getpid()}",
                               live_writer_rule=False))


def _write(spark: SparkSession, table: Table, spec: TableSpec, schema: RecordSchema, operation: Operation,
           keyed: DataFrame, records_per_file: int, create_mdt: bool, transactions: Transactions) -> str:
    requested = Instant(table.new_instant_time(), action(operation, table.config.is_mor), State.REQUESTED)
    instant = requested.requested_time
    ctx = WriteContext(InstantContext(table.uri, instant, spec.version, spec.precombine_field,
                                      CommittedInstants.of(table)), operation, schema)
    view = table.file_system_view()
    keyed = deduplicated(keyed, operation, spec.precombine_field)
    slices = target_slices(keyed, view, operation)
    tagged = located(spark, keyed, operation, ctx.instant, slices).persist()
    try:
        profile = workload_profile(tagged, spec.record_key)
        jobs, routes = plan_jobs(profile, slices, table.config.is_mor, records_per_file)
        with transactions.state_change():  # requested and started under the lock, once the write is planned
            if create_mdt:  # a new table's metadata table, under the same lock as its first instant
                metadata_table.create_metadata_table(table)
            request(table, requested)
            inflight = start(table, requested, commit_metadata(workload_stats(profile, slices), operation.value,
                                                               None))
        stats = execute(spark, tagged, ctx, jobs, routes)
    finally:
        tagged.unpersist()
    content = commit_metadata(by_partition(stats), operation.value, schema.data_avro,
                              replaced=replaced_file_groups(view, profile, operation))
    with transactions.state_change():  # completed under the lock, as Hudi's commit is
        metadata_table.update_for_write(table, instant, content)  # the metadata table first, as Hudi's commit
        complete(table, inflight, content)
    return instant
