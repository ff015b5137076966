"""The clean job on Spark: planning fans out over partitions (each task lists and plans its
partitions with the library's planner) and execution fans out over files; progress flows back
to the driver as tasks finish. Both give what the local engine gives for the same table."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from datetime import datetime
from itertools import islice

from pyspark import Accumulator
from pyspark.sql import SparkSession

from timeline.clean.config import CleanConfig
from timeline.clean.executor import (
    CleanResult,
    FileOutcome,
    Guard,
    ProgressCallback,
    ProgressCounter,
    Status,
    Target,
    begin_clean,
    delete_target,
    delete_targets,
    finish_clean,
    listed_sizes,
    pending_cleans,
)
from timeline.clean.planner import CleanPlan, FileDecision, PlanContext, finish_plan, plan_partition, start_plan
from timeline.fsview import list_partition, partition_paths
from timeline.storage import storage_for
from timeline.storage.s3 import S3Settings, s3_settings_for
from timeline.table import HudiTable

PARTITIONS_PER_TASK = 16
TASKS_PER_CORE = 4
POLL_SECONDS = 0.5


def _s3(uri: str) -> S3Settings | None:
    """The driver's S3 settings for the table (its root's, `configure_s3`), shipped to the
    executors, whose processes have no such registry; None for other stores."""
    return s3_settings_for(uri) if uri.split(":", 1)[0].lower() in ("s3", "s3a", "s3n") else None


def _plan_partitions(context: PlanContext, s3: S3Settings | None, partitions: Iterable[str]
                     ) -> Iterator[tuple[str, list[FileDecision], bool]]:
    """Runs on an executor: list and plan each partition."""
    storage, base = storage_for(context.table_uri, s3=s3)
    for partition in partitions:
        yield (partition, *plan_partition(context, storage, partition, list_partition(storage, base, partition)))


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
    s3 = _s3(table.uri)
    return finish_plan(start, rdd.mapPartitions(lambda part: _plan_partitions(context, s3, part)).collect())


# An outcome as it travels back from an executor: FileOutcome's fields with the status's value
# (a NamedTuple holding an Enum pickles about five times slower, per file).
Shipped = tuple[str, str, str, bool, int, str]
_STATUS = {s.value: s for s in Status}


def _shipped(outcomes: Iterable[FileOutcome]) -> Iterator[Shipped]:
    for o in outcomes:
        yield o.partition, o.path, o.status.value, o.is_bootstrap, o.bytes, o.error


def _delete_chunk(uri: str, s3: S3Settings | None, targets: Iterable[tuple[str, str, bool, int | None]],
                  done: Accumulator[int]) -> Iterator[Shipped]:
    """Runs on an executor: delete a task's files; each target carries its size when known.
    On a store with a batch delete (S3's DeleteObjects, the local unlink loop) the files go
    `delete_batch_size` at a time, sizes not given read from one listing per folder, as the
    local engine does; otherwise one by one."""
    storage, _ = storage_for(uri, s3=s3)
    if storage.delete_batch_size <= 1:
        for partition, path, bootstrap, size in targets:
            yield from _shipped([delete_target(storage, Target(partition, path, bootstrap),
                                               None if size is None else {path: size})])
            done.add(1)
        return
    rows = iter(targets)
    while chunk := list(islice(rows, storage.delete_batch_size)):
        batch = [Target(partition, path, bootstrap) for partition, path, bootstrap, _ in chunk]
        sizes = {path: size for _, path, _, size in chunk if size is not None}
        unknown = [t for t, (_, _, _, size) in zip(batch, chunk) if size is None]
        if unknown:
            sizes.update(listed_sizes(storage, unknown, storage.io_threads))
        yield from _shipped(delete_targets(storage, batch, sizes))
        done.add(len(chunk))


def run_pending_cleans_spark(spark: SparkSession, uri: str, *, progress: ProgressCallback | None = None,
                             instant: str | None = None, drop_metadata: bool = False,
                             sizes: Mapping[str, int] | None = None, guard: Guard = nullcontext,
                             table: HudiTable | None = None) -> list[CleanResult]:
    """`run_pending_cleans` with the deletes on the executors, in one job of a few tasks per
    core; the driver moves each clean to inflight, reports progress from an accumulator while
    the job runs, and publishes the completed clean."""
    table = table if table is not None else HudiTable.open(uri)
    context = spark.sparkContext
    results = []
    for clean in pending_cleans(table, instant=instant, drop_metadata=drop_metadata):
        started = time.monotonic()
        with guard():
            plan, targets = begin_clean(table, clean)
        counter = ProgressCounter(clean.requested_time, len(targets), progress)
        outcomes: list[FileOutcome] = []
        if targets:
            done = context.accumulator(0)
            sized = [(p, path, b, sizes.get(path) if sizes is not None else None) for p, path, b in targets]
            rdd = context.parallelize(sized, max(1, min(len(sized), context.defaultParallelism * TASKS_PER_CORE)))
            # the job finishes within this iteration, before rdd and done are rebound
            s3 = _s3(uri)
            job = _Job(lambda: rdd.mapPartitions(lambda part: _delete_chunk(uri, s3, part, done)).collect())  # noqa: B023
            while not job.finished(POLL_SECONDS):
                counter.set(done.value)
                counter.report()
            outcomes = [FileOutcome(p, path, _STATUS[code], b, n, e) for p, path, code, b, n, e in job.result()]
            counter.set(len(outcomes), sum(o.bytes for o in outcomes))
            counter.report()
        with guard():
            results.append(finish_clean(table, clean, plan, outcomes, started))
    return results


class _Job:
    """A Spark action run on a driver thread, so the caller can report progress meanwhile."""

    def __init__(self, action: Callable[[], list[Shipped]]) -> None:
        self._result: list[Shipped] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(action,), name="cleanline-spark-job", daemon=True)
        self._thread.start()

    def _run(self, action: Callable[[], list[Shipped]]) -> None:
        try:
            self._result = action()
        except BaseException as exc:  # re-raised on the caller's thread
            self._error = exc

    def finished(self, wait: float) -> bool:
        self._thread.join(wait)
        return not self._thread.is_alive()

    def result(self) -> list[Shipped]:
        if self._error is not None:
            raise self._error
        return self._result
