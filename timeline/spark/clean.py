"""The clean job on Spark: planning fans out over partitions (each task lists and plans its
partitions with the library's planner) and execution fans out over files; progress flows back
to the driver as tasks finish. Both give what the local engine gives for the same table."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime

from pyspark.sql import SparkSession

from timeline.clean.config import CleanConfig
from timeline.clean.executor import (
    CHUNK, CleanResult, Outcome, ProgressCallback, ProgressCounter, begin_clean, delete_target, finish_clean,
    pending_cleans,
)
from timeline.clean.planner import CleanPlan, FileDecision, PlanContext, finish_plan, plan_partition, start_plan
from timeline.fsview import partition_paths
from timeline.storage import Storage, storage_for
from timeline.table import HudiTable

PARTITIONS_PER_TASK = 16


def _plan_partitions(context: PlanContext, partitions: Iterable[str]) -> Iterator[tuple[str, list[FileDecision], bool]]:
    """Runs on an executor: list and plan each partition."""
    storage, base = storage_for(context.table_uri)
    for partition in partitions:
        folder = Storage.join(base, partition) if partition else base
        files = tuple(s for s in storage.list(folder) if not s.is_dir) if storage.exists(folder) else ()
        yield (partition, *plan_partition(context, storage, partition, files))


def plan_clean_spark(spark: SparkSession, uri: str, config: CleanConfig, *,
                     now: datetime | None = None) -> CleanPlan:
    """The same plan as `plan_clean`, with partitions listed and planned on the executors."""
    table = HudiTable.open(uri)
    start = start_plan(table, config, now=now)
    context = start.context
    if context is None:
        return finish_plan(start, ())
    partitions = list(start.partitions) if start.partitions is not None else partition_paths(table.storage, table.base)
    if not partitions:
        return finish_plan(start, ())
    slices = max(1, min(len(partitions), -(-len(partitions) // PARTITIONS_PER_TASK)))
    rdd = spark.sparkContext.parallelize(partitions, slices)
    return finish_plan(start, rdd.mapPartitions(lambda part: _plan_partitions(context, part)).collect())


def _delete_chunk(uri: str, targets: Iterable[tuple[str, str, bool]],
                  sizes: Mapping[str, int] | None) -> Iterator[list[Outcome]]:
    """Runs on an executor: delete a task's files, yielding its outcomes as one batch."""
    storage, _ = storage_for(uri)
    yield [delete_target(storage, target, sizes) for target in targets]


def run_pending_cleans_spark(spark: SparkSession, uri: str, *, progress: ProgressCallback | None = None,
                             instant: str | None = None, drop_metadata: bool = False,
                             sizes: Mapping[str, int] | None = None) -> list[CleanResult]:
    """`run_pending_cleans` with the deletes on the executors; the driver moves each clean to
    inflight, reports progress as tasks finish, and publishes the completed clean."""
    table = HudiTable.open(uri)
    results = []
    for clean in pending_cleans(table, instant=instant, drop_metadata=drop_metadata):
        started = time.monotonic()
        plan, targets = begin_clean(table, clean)
        counter = ProgressCounter(clean.requested_time, len(targets), progress)
        outcomes: list[Outcome] = []
        if targets:
            rdd = spark.sparkContext.parallelize(targets, max(1, -(-len(targets) // CHUNK)))
            for batch in rdd.mapPartitions(lambda part: _delete_chunk(uri, part, sizes)).toLocalIterator():
                outcomes.extend(batch)
                counter.add(len(batch), sum(o[4] for o in batch))
        results.append(finish_clean(table, clean, plan, outcomes, started))
    return results
