"""Planning a write on the driver: look up which file group holds each incoming key (a Spark job
over the latest file slices of the partitions written to: Hudi's SIMPLE index, per partition),
count the records per file group (the workload profile), plan one job per file group to write
and route every record to one. Inserts always open new file groups: routing them into small
existing file groups is not done."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeline.fsview import FileSlice, FileSystemView
from timeline.metadata.written import write_stat
from timeline.spark.writer.model import PARTITION_PATH, RECORD_KEY, IOType, Operation, WriteError
from timeline.spark.writer.tasks import (
    FileGroupJob,
    InstantContext,
    WriteContext,
    by_job,
    identity,
    keys_in_slice,
    write_group,
)

_JOB = "_cleanline_job"
_FILE_ID = "_cleanline_file_id"
_KEYS = T.StructType([T.StructField(PARTITION_PATH, T.StringType()), T.StructField(RECORD_KEY, T.StringType()),
                      T.StructField(_FILE_ID, T.StringType())])
_ROUTES = T.StructType([T.StructField("_route_partition", T.StringType()),
                        T.StructField("_route_file_id", T.StringType()),
                        T.StructField("_route_first", T.LongType()), T.StructField("_route_buckets", T.LongType())])

Route = tuple[str, str | None, int, int]


def target_slices(keyed: DataFrame, view: FileSystemView, operation: Operation) -> dict[tuple[str, str], FileSlice]:
    """The latest slices an upsert or delete may touch: those of the partitions written to."""
    latest = view.latest_slices() if operation.looks_up_keys else []
    if not latest:
        return {}
    partitions = {row[0] for row in keyed.select(PARTITION_PATH).distinct().collect()}
    return {(s.partition, s.file_id): s for s in latest if s.partition in partitions}


def located(spark: SparkSession, keyed: DataFrame, operation: Operation, ctx: InstantContext,
            slices: Mapping[tuple[str, str], FileSlice]) -> DataFrame:
    """`keyed` with the file group holding each key, null for new keys (Hudi's SIMPLE index:
    one task per slice reads its keys). Deletes of keys not in the table are dropped."""
    if not operation.looks_up_keys:
        return keyed.withColumn(_FILE_ID, F.lit(None).cast("string"))
    found = spark.sparkContext.parallelize(list(slices.values()), max(1, len(slices)))
    keys = spark.createDataFrame(found.flatMap(partial(keys_in_slice, ctx)), _KEYS)
    return keyed.join(keys, [PARTITION_PATH, RECORD_KEY], "inner" if operation is Operation.DELETE else "left")


@dataclass(frozen=True, slots=True)
class Profile:
    """Hudi's workload profile: records per partition bound for new file groups, and records
    per existing file group."""

    inserts: Mapping[str, int]
    updates: Mapping[tuple[str, str], int]

    @property
    def partitions(self) -> list[str]:
        return sorted({*self.inserts, *(partition for partition, _ in self.updates)})


def workload_profile(tagged: DataFrame, record_key: str) -> Profile:
    missing = F.col(RECORD_KEY).isNull() | (F.col(RECORD_KEY) == "")
    rows = tagged.groupBy(PARTITION_PATH, _FILE_ID).agg(
        F.count(F.lit(1)).alias("records"), F.sum(missing.cast("long")).alias("missing")).collect()
    without_key = sum(row["missing"] or 0 for row in rows)
    if without_key:
        raise WriteError(f"record key field {record_key!r} is null or empty in {without_key} records")
    return Profile(inserts={row[PARTITION_PATH]: row["records"] for row in rows if row[_FILE_ID] is None},
                   updates={(row[PARTITION_PATH], row[_FILE_ID]): row["records"] for row in rows
                            if row[_FILE_ID] is not None})


def _new_file_id() -> str:
    return f"{uuid.uuid4()}-0"


def plan_jobs(profile: Profile, slices: Mapping[tuple[str, str], FileSlice], is_mor: bool,
         records_per_file: int) -> tuple[list[FileGroupJob], list[Route]]:
    """One job per file group to write, and the routes of records to jobs: (partition, file id
    or None for inserts, first job, number of jobs). Inserts of a partition are spread over
    enough new file groups to keep each under the maximum file size."""
    jobs: list[FileGroupJob] = []
    routes: list[Route] = []
    for partition, file_id in sorted(profile.updates):
        routes.append((partition, file_id, len(jobs), 1))
        jobs.append(FileGroupJob(partition, file_id, IOType.APPEND if is_mor else IOType.MERGE,
                                 slices[(partition, file_id)]))
    for partition, count in sorted(profile.inserts.items()):
        buckets = math.ceil(count / records_per_file)
        routes.append((partition, None, len(jobs), buckets))
        jobs += [FileGroupJob(partition, _new_file_id(), IOType.CREATE) for _ in range(buckets)]
    return jobs, routes


def execute(spark: SparkSession, tagged: DataFrame, ctx: WriteContext, jobs: Sequence[FileGroupJob],
            routes: Sequence[Route]) -> list[dict[str, Any]]:
    """Route every record to its job (inserts by hash of the key among their partition's new
    file groups) and run one task per job."""
    if not jobs:
        return []
    table = F.broadcast(spark.createDataFrame(list(routes), _ROUTES))
    on = (tagged[PARTITION_PATH] == table["_route_partition"]) & tagged[_FILE_ID].eqNullSafe(table["_route_file_id"])
    job = F.col("_route_first") + F.pmod(F.xxhash64(RECORD_KEY), F.col("_route_buckets"))
    routed = tagged.join(table, on).select(job.alias(_JOB), *ctx.schema.columns, RECORD_KEY, PARTITION_PATH)
    pairs = routed.rdd.map(by_job).partitionBy(len(jobs), identity)
    return pairs.mapPartitionsWithIndex(partial(write_group, ctx, jobs)).collect()


def replaced_file_groups(view: FileSystemView, profile: Profile, operation: Operation) -> dict[str, list[str]] | None:
    """`partitionToReplaceFileIds` of an overwrite: every live file group of the partitions
    written to, or of the whole table."""
    if not operation.replaces:
        return None
    partitions = view.partitions if operation is Operation.INSERT_OVERWRITE_TABLE else profile.partitions
    replaced = {p: sorted(s.file_id for s in view.latest_slices(p)) for p in partitions}
    return {p: ids for p, ids in replaced.items() if ids}


def workload_stats(profile: Profile, slices: Mapping[tuple[str, str], FileSlice]) -> dict[str, list[dict[str, Any]]]:
    """The inflight content's stats: per partition one insert stat, then one per updated group."""
    stats: dict[str, list[dict[str, Any]]] = {}
    for partition in profile.partitions:
        stats[partition] = [write_stat(num_inserts=profile.inserts.get(partition, 0))]
    for (partition, file_id), count in sorted(profile.updates.items()):
        stats[partition].append(write_stat(file_id=file_id, prev_commit=slices[(partition, file_id)].base_instant_time,
                                           num_update_writes=count))
    return stats
