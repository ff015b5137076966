"""The clean job on Spark: planning fans out over partitions (each task lists and plans its
partitions with the library's planner) and execution fans out over the plan's partitions;
progress flows back to the driver as tasks finish. Both give what the local engine gives for
the same table.

Execution runs in shares (`timeline.clean.sliced`) where it can: the driver hands out byte
ranges of the requested plan, executors check them (job 1: nothing deleted until every share
passed) and then delete them and encode their partitions' clean metadata (job 2); the driver
holds nothing per file. A table with a metadata table, or a plan not in the regular form, runs
as before: the driver reads the plan, ships batches of paths and builds the metadata."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from itertools import chain, groupby, repeat
from operator import attrgetter
from typing import Any

from pyspark import Accumulator, SparkContext, TaskContext
from pyspark.sql import SparkSession

from timeline.clean import sliced
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
from timeline.instant import Instant
from timeline.internal.plan_store import StoredPlan, store_plan
from timeline.internal.plan_store.files import (
    StoredPart,
    clear_folder,
    listing_name,
    open_store,
    store_settings,
    write_part,
)
from timeline.mdt.listing import ListingSource, describe, iter_listing, resolve, statuses_of
from timeline.perf import paused_gc
from timeline.storage import FileStatus, FolderIdentity, Storage, storage_for
from timeline.storage.s3 import S3Settings
from timeline.table import Table

PARTITIONS_PER_TASK = 16
TASKS_PER_CORE = 4
POLL_SECONDS = 0.5


# A slice of partitions as the metadata table lists them, as it travels to an executor (in the
# task's data, or as a JSON listing file in the plan store): (partition, file names, sizes).
Listed = list[tuple[str, list[str], list[int]]]


def _listed_files(base: str, listed: Listed) -> Iterator[tuple[str, tuple[FileStatus, ...]]]:
    for partition, names, sizes in listed:
        yield partition, statuses_of(base, partition, dict(zip(names, sizes, strict=True)))


def _plan_partitions(context: PlanContext, s3: S3Settings | None, partitions: Iterable[str | tuple[str, Any, Any]]
                     ) -> Iterator[tuple[str, list[FileDecision], bool]]:
    """Runs on an executor: list (or take as the metadata table listed them) and plan each
    partition."""
    storage, base = storage_for(context.table_uri, s3=s3)
    for partition, files in _task_listing(storage, base, partitions):
        yield (partition, *plan_partition(context, storage, partition, files))


def _task_listing(storage: Storage, base: str, given: Iterable[str | tuple[str, Any, Any]]
                  ) -> Iterator[tuple[str, tuple[FileStatus, ...]]]:
    """A task's partitions with their files: partition names are listed from storage here;
    (partition, names, sizes) entries come listed by the metadata table."""
    for item in given:
        if isinstance(item, str):
            yield item, list_partition(storage, base, item)
        else:
            yield from _listed_files(base, [item])


def _plan_part(context: PlanContext, s3: S3Settings | None, folder: str, store_s3: S3Settings | None,
               partitions: Iterable[str | int]) -> Iterator[StoredPart]:
    """Runs on an executor: list and plan the task's partitions (or those of the metadata
    table's listing file it is given, by index), write their decisions as the task's part of
    the plan store (named by the task's index: a retry overwrites it) and send back only the
    sums."""
    storage, base = storage_for(context.table_uri, s3=s3)
    task = TaskContext.get()
    index = task.partitionId() if task is not None else 0
    given = list(partitions)
    if given and isinstance(given[0], int):  # one listing file a task: its index names the part too
        index = given[0]
        store, root = open_store(folder, store_s3)
        listed: Listed = [tuple(entry) for entry in json.loads(store.read(Storage.join(root, listing_name(index))))]
        listing: Iterable[tuple[str, tuple[FileStatus, ...]]] = _listed_files(base, listed)
    else:
        listing = ((p, list_partition(storage, base, p)) for p in given if isinstance(p, str))
    results = [(partition, *plan_partition(context, storage, partition, files)) for partition, files in listing]
    yield write_part(folder, index, results, store_s3)


def plan_clean_spark_stored(spark: SparkSession, uri: str, config: CleanConfig, folder: str, *,
                            now: datetime | None = None, source: ListingSource | str = ListingSource.AUTO,
                            table: Table | None = None) -> StoredPlan:
    """`plan_clean_stored` with partitions listed and planned on the executors, each task
    writing its partitions' decisions into the plan store at `folder`; the driver receives
    only per-partition sums (nothing per file). `source` (Hudi's choice by default) is where
    the files are listed from: storage, by each executor for its partitions, or the metadata
    table, read by the driver as a stream (`timeline.mdt.stream`) and written into the store a
    task's slice at a time (`part-N.listing.json`, removed after the job), so the driver holds
    one slice, never the table's listing. `table`: the table as its caller opened it (its
    settings travel to the executors with each task), else opened at `uri` with none."""
    table = table if table is not None else Table.open(uri)
    start = start_plan(table, config, now=now)
    store_s3 = store_settings(folder, table.roots)
    clear_folder(folder, store_s3)
    header = finish_plan(start, ())
    context = start.context
    if context is None:
        return store_plan(folder, header, (), s3=store_s3)
    used = resolve(table, source)
    s3 = table.storage_options
    if used is ListingSource.METADATA:
        header = replace(header, notes=(*header.notes, describe(used)), listing=used.value)
        slices = _write_listings(table, start.partitions, folder, store_s3)
        if not slices:
            return store_plan(folder, header, (), s3=store_s3)
        rdd = spark.sparkContext.parallelize(range(slices), slices)
        try:
            stored = rdd.mapPartitions(lambda part: _plan_part(context, s3, folder, store_s3, part)).collect()
        finally:
            _remove_listings(folder, store_s3, slices)
        return store_plan(folder, header, stored, s3=store_s3)
    partitions = sorted(start.partitions if start.partitions is not None
                        else partition_paths(table.storage, table.base))
    if not partitions:
        return store_plan(folder, header, (), s3=store_s3)
    # contiguous slices of the sorted partitions: part i holds slice i, so parts in index order
    # are the plan in partition order
    slices = max(1, min(len(partitions), -(-len(partitions) // PARTITIONS_PER_TASK)))
    by_name = spark.sparkContext.parallelize(partitions, slices)
    stored = by_name.mapPartitions(lambda part: _plan_part(context, s3, folder, store_s3, part)).collect()
    return store_plan(folder, header, stored, s3=store_s3)


def _write_listings(table: Table, partitions: tuple[str, ...] | None, folder: str,
                    store_s3: S3Settings | None) -> int:
    """The metadata table's listing written into the store in slices of PARTITIONS_PER_TASK
    partitions, in partition order (slice i: `listing_name(i)`); the number of slices."""
    store, root = open_store(folder, store_s3)
    store.makedirs(root)
    written = 0
    for chunk in _chunks(iter_listing(table, ListingSource.METADATA, partitions=partitions)):
        listed = [(p, [f.name for f in files], [f.size for f in files]) for p, files in chunk]
        store.write(Storage.join(root, listing_name(written)), json.dumps(listed).encode(), overwrite=True)
        written += 1
    return written


def _remove_listings(folder: str, store_s3: S3Settings | None, slices: int) -> None:
    store, root = open_store(folder, store_s3)
    for index in range(slices):
        store.delete(Storage.join(root, listing_name(index)))


def _chunks(items: Iterator[tuple[str, tuple[FileStatus, ...]]], size: int = PARTITIONS_PER_TASK
            ) -> Iterator[list[tuple[str, tuple[FileStatus, ...]]]]:
    chunk: list[tuple[str, tuple[FileStatus, ...]]] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def plan_clean_spark(spark: SparkSession, uri: str, config: CleanConfig, *,
                     now: datetime | None = None, source: ListingSource | str = ListingSource.AUTO,
                     table: Table | None = None) -> CleanPlan:
    """The same plan as `plan_clean`, with partitions listed and planned on the executors
    (`source` and `table` as for `plan_clean_spark_stored`; the metadata table's listing travels
    in the tasks' data)."""
    table = table if table is not None else Table.open(uri)
    start = start_plan(table, config, now=now)
    context = start.context
    if context is None:
        return finish_plan(start, ())
    used = resolve(table, source)
    given: list[Any]
    if used is ListingSource.METADATA:
        start = replace(start, notes=(*start.notes, describe(used)))
        given = [(p, [f.name for f in files], [f.size for f in files])
                 for p, files in iter_listing(table, used, partitions=start.partitions)]
    else:
        given = list(start.partitions) if start.partitions is not None else partition_paths(table.storage, table.base)
    if not given:
        plan = finish_plan(start, ())
    else:
        slices = max(1, min(len(given), -(-len(given) // PARTITIONS_PER_TASK)))
        rdd = spark.sparkContext.parallelize(given, slices)
        s3 = table.storage_options
        plan = finish_plan(start, rdd.mapPartitions(lambda part: _plan_partitions(context, s3, part)).collect())
    return replace(plan, listing=used.value) if used is ListingSource.METADATA else plan


# What travels to an executor: one batch of a partition's files (paths, bootstrap flags or None
# when none is one, sizes or None when unknown), and what travels back: per file the bytes
# deleted, the statuses' values (None when every file was deleted) and the errors by position.
# Columns of plain values: a tuple per file, let alone a NamedTuple holding an Enum, pickles
# several times slower, and the driver rebuilds the outcomes with C-level maps.
Batch = tuple[str, list[str], list[bool] | None, list[int | None] | None]
Shipped = tuple[list[int], list[str] | None, dict[int, str]]
BATCH_FILES = 1000
_STATUS = {s.value: s for s in Status}


def batches(targets: list[Target], sizes: Mapping[str, int] | None, size: int = BATCH_FILES) -> list[Batch]:
    """The targets as batches of at most `size` files of one partition, in plan order."""
    found: list[Batch] = []
    for partition, run in groupby(targets, key=attrgetter("partition")):
        files = list(run)
        for first in range(0, len(files), size):
            chunk = files[first:first + size]
            paths = [t.path for t in chunk]
            flags = [t.is_bootstrap_base_file for t in chunk]
            found.append((partition, paths, flags if any(flags) else None,
                          None if sizes is None else [sizes.get(p) for p in paths]))
    return found


def outcomes_of(batch: Batch, shipped: Shipped) -> Iterator[FileOutcome]:
    """The outcomes of one batch from what its executor sent back."""
    partition, paths, flags, _ = batch
    sent, codes, errors = shipped
    statuses = repeat(Status.DELETED) if codes is None else map(_STATUS.__getitem__, codes)
    problems = repeat("") if not errors else (errors.get(i, "") for i in range(len(paths)))
    return map(tuple.__new__, repeat(FileOutcome), zip(repeat(partition), paths, statuses,
                                                      repeat(False) if flags is None else flags, sent, problems))


def _ship(outcomes: list[FileOutcome]) -> Shipped:
    codes = [o.status.value for o in outcomes]
    return ([o.bytes for o in outcomes], None if all(c == "deleted" for c in codes) else codes,
            {i: o.error for i, o in enumerate(outcomes) if o.error})


def _delete_batches(uri: str, s3: S3Settings | None, identity: FolderIdentity | None, part: Iterable[Batch],
                    done: Accumulator[int]) -> Iterator[Shipped]:
    """Runs on an executor: delete a task's batches, one `delete_many` each on a store with a
    batch delete (S3's DeleteObjects, the local unlink loop), sizes not given read from one
    listing per folder, as the local engine does; otherwise file by file. Through the table's
    folder the driver holds (`identity`), when it holds one."""
    storage, _ = storage_for(uri, s3=s3, anchored=identity)
    for partition, paths, flags, sizes in part:
        targets = [Target(partition, path, flag) for path, flag in zip(paths, flags or repeat(False))]
        known = {path: n for path, n in zip(paths, sizes or ()) if n is not None}
        if storage.delete_batch_size > 1:
            if len(known) < len(paths):
                known.update(listed_sizes(storage, [t for t in targets if t.path not in known], storage.io_threads))
            yield _ship(delete_targets(storage, targets, known))
        else:
            yield _ship([delete_target(storage, t, known if t.path in known else None) for t in targets])
        done.add(len(paths))


def run_pending_cleans_spark(spark: SparkSession, uri: str, *, progress: ProgressCallback | None = None,
                             instant: str | None = None,
                             sizes: Mapping[str, int] | None = None, guard: Guard = nullcontext,
                             table: Table | None = None) -> list[CleanResult]:
    """`run_pending_cleans` with the deletes on the executors, in a few tasks per core; the
    driver moves each clean to inflight, reports progress from an accumulator while the job
    runs, and publishes the completed clean. In shares (see the module's docstring) `sizes` is
    not used: the executors read each file's size as they delete it."""
    table = table if table is not None else Table.open(uri)
    context = spark.sparkContext
    results = []
    for clean in pending_cleans(table, instant=instant):
        started = time.monotonic()
        with guard():
            begun = _begin_in_shares(context, table, clean)
            if begun is None:
                plan, targets = begin_clean(table, clean)
        if begun is not None:
            results.append(_run_in_shares(context, table, begun, progress, guard, started))
            continue
        counter = ProgressCounter(clean.requested_time, len(targets), progress)
        outcomes: list[FileOutcome] = []
        if targets:
            done = context.accumulator(0)
            work = batches(targets, sizes)
            rdd = context.parallelize(work, max(1, min(len(work), context.defaultParallelism * TASKS_PER_CORE)))
            # the job finishes within this iteration, before rdd and done are rebound
            s3, identity = table.storage_options, table.folder_identity
            job = _Job(lambda: rdd.mapPartitions(  # noqa: B023
                lambda part: _delete_batches(uri, s3, identity, part, done)).collect())  # noqa: B023
            while not job.finished(POLL_SECONDS):
                counter.set(done.value)
                counter.report()
            shipped = job.result()  # collect() keeps the batches' order
            if len(shipped) != len(work):
                raise RuntimeError(f"clean {clean.requested_time}: {len(work)} batches sent, {len(shipped)} answered")
            with paused_gc():
                outcomes = list(chain.from_iterable(map(outcomes_of, work, shipped)))
            counter.set(len(outcomes), sum(o.bytes for o in outcomes))
            counter.report()
        with guard():
            results.append(finish_clean(table, clean, plan, outcomes, started))
    return results


def _begin_in_shares(context: SparkContext, table: Table, clean: Instant) -> sliced.Begun | None:
    """`timeline.clean.sliced`, steps 1 and 2: the plan dealt out in shares, each checked on an
    executor; None when the clean is to run whole on the driver."""
    prepared = sliced.prepare(table, clean, context.defaultParallelism * TASKS_PER_CORE)
    if prepared is None:
        return None
    data, slices, dealt, protection = prepared
    uri, s3, root = table.uri, table.storage_options, sliced.root_of(table)
    checked = context.parallelize(dealt, len(dealt)).map(
        lambda share: sliced.check_share(uri, s3, root, protection, share)).collect()
    return sliced.begin(table, clean, data, slices, dealt, protection, checked)


def _run_in_shares(context: SparkContext, table: Table, begun: sliced.Begun, progress: ProgressCallback | None,
                   guard: Guard, started: float) -> CleanResult:
    """Step 3: each share deleted on an executor, progress from an accumulator meanwhile, then
    the completed clean joined on the driver."""
    counter = ProgressCounter(begun.clean.requested_time, begun.files, progress)
    done = context.accumulator(0)
    uri, s3, root, plan = table.uri, table.storage_options, begun.root, begun.plan
    identity = table.folder_identity

    def work(part: Iterable[sliced.Share]) -> Iterator[sliced.Cleaned]:
        for share in part:
            for cleaned in sliced.clean_share(uri, s3, root, plan, share, identity=identity):
                done.add(len(cleaned.sizes))
                yield cleaned

    rdd = context.parallelize(begun.shares, len(begun.shares))
    job = _Job(lambda: rdd.mapPartitions(work).collect())
    while not job.finished(POLL_SECONDS):
        counter.set(done.value)
        counter.report()
    cleaned: list[sliced.Cleaned] = job.result()
    expected = sum(len(share.partitions) for share in begun.shares)
    if len(cleaned) != expected:
        raise RuntimeError(f"clean {begun.clean.requested_time}: {expected} partitions sent, {len(cleaned)} answered")
    with guard():
        result = sliced.finish(table, begun, cleaned, started)
    counter.set(len(result.outcomes), result.bytes_deleted)
    counter.report()
    return result


class _Job:
    """A Spark action run on a driver thread, so the caller can report progress meanwhile."""

    def __init__(self, action: Callable[[], list[Any]]) -> None:
        self._result: list[Any] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(action,), name="cleanline-spark-job", daemon=True)
        self._thread.start()

    def _run(self, action: Callable[[], list[Any]]) -> None:
        try:
            self._result = action()
        except BaseException as exc:  # re-raised on the caller's thread
            self._error = exc

    def finished(self, wait: float) -> bool:
        self._thread.join(wait)
        return not self._thread.is_alive()

    def result(self) -> list[Any]:
        if self._error is not None:
            raise self._error
        return self._result
