"""Scheduling and running cleans as Hudi's CleanActionExecutor does (hudi-format.md §7.7):
requested -> inflight (a copy of the plan) -> parallel deletes -> completed clean with
HoodieCleanMetadata. Idempotent: a re-run finishes a half-done clean from its plan, and a file
already gone counts as deleted."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from timeline import transition
from timeline.clean.config import CleanConfig
from timeline.clean.planner import CleanPlan, protection_conflicts
from timeline.exceptions import CleanlineError, StorageError
from timeline.instant import CLEAN, Instant, State
from timeline.mdt import guard_metadata_table
from timeline.storage import Storage
from timeline.table import HudiTable

log = logging.getLogger(__name__)

CLEAN_METADATA_VERSION = 2
CHUNK = 1000  # files per delete task
PROGRESS_SECONDS = 0.2


class CleanRefused(CleanlineError):
    """Hudi (or Cleanline's safety rules) would not schedule or run this clean now."""


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a running clean is: files done of total, and bytes deleted so far."""

    instant: str
    files_done: int
    files_total: int
    bytes_deleted: int


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one run did: files deleted now, found already gone, failed; bytes reclaimed."""

    instant: Instant
    deleted: int
    already_gone: int
    failed: int
    bytes_deleted: int
    metadata: dict[str, Any]


def needs_cleaning(table: HudiTable, config: CleanConfig) -> bool:
    """The NUM_COMMITS trigger: at least `trigger_max_commits` completed commits since the last
    completed clean's last completed commit."""
    timeline = table.timeline
    last_clean = timeline.cleans().completed().last()
    since = ""
    if last_clean is not None:
        content = table.read_instant(last_clean, fields=("lastCompletedCommitTimestamp",)) or {}
        since = content.get("lastCompletedCommitTimestamp") or ""
    count = sum(1 for i in timeline.commits().completed() if i.requested_time > since)
    return count >= config.trigger_max_commits


def schedule_clean(table: HudiTable, plan: CleanPlan, config: CleanConfig, *,
                   drop_metadata: bool = False, force: bool = False) -> Instant | None:
    """Write `<t>.clean.requested` holding the plan. A plan that deletes nothing writes no
    instant and returns None (CleanPlanActionExecutor.requestClean returns an empty option).
    Refused when another clean is pending and `hoodie.clean.multiple.enabled` is off, when too few
    commits completed since the last clean (unless `force`), or when the metadata table is
    enabled and `drop_metadata` is not given."""
    table.reload()
    table.ensure_intact()
    if plan.is_empty:
        return None
    pending = table.timeline.cleans().pending()
    if pending and not config.multiple_enabled:
        raise CleanRefused(f"{table.uri}: clean {pending.instants[0].requested_time} is still pending; run it "
                           "first (hoodie.clean.multiple.enabled is false)")
    if not force and not needs_cleaning(table, config):
        raise CleanRefused(f"{table.uri}: fewer than {config.trigger_max_commits} commits completed since the "
                           "last clean (hoodie.clean.trigger.max.commits)")
    guard_metadata_table(table, drop=drop_metadata, action="a clean")
    instant = transition.request(table, CLEAN, plan.to_avro())
    table.reload()
    return instant


def pending_cleans(table: HudiTable, *, instant: str | None = None, drop_metadata: bool = False) -> list[Instant]:
    """The pending cleans to run (all, or the one at `instant`), in timeline order, after the
    metadata-table guard."""
    table.reload()
    pending = [i for i in table.timeline.cleans().pending() if instant is None or i.requested_time == instant]
    if instant is not None and not pending:
        raise CleanRefused(f"{table.uri}: no pending clean at {instant}")
    if pending:
        guard_metadata_table(table, drop=drop_metadata, action="a clean")
    return pending


def run_pending_cleans(table: HudiTable, *, progress: ProgressCallback | None = None,
                       parallelism: int | None = None, instant: str | None = None, drop_metadata: bool = False,
                       sizes: Mapping[str, int] | None = None) -> list[CleanResult]:
    """Run every pending clean (or the one at `instant`) in timeline order.

    `sizes` (file path as in the plan -> bytes), when the caller has them from the plan,
    spares a status call per file; without it each file's size is read before it goes, for
    the bytes reclaimed. `parallelism` defaults to what the storage backend handles well.
    `progress` is called on this thread."""
    threads = parallelism or table.storage.io_threads
    results = []
    for clean in pending_cleans(table, instant=instant, drop_metadata=drop_metadata):
        started = time.monotonic()
        plan, targets = begin_clean(table, clean)
        outcomes = _delete_all(table.storage, targets, sizes, progress, clean.requested_time, threads)
        results.append(finish_clean(table, clean, plan, outcomes, started))
    return results


Outcome = tuple[str, str, str, bool, int]  # (path, partition, "deleted" | "gone" | "failed", bootstrap, bytes)


def delete_target(storage: Storage, target: tuple[str, str, bool], sizes: Mapping[str, int] | None) -> Outcome:
    """Delete one planned file. A file already gone counts as deleted (apache/hudi#18035)."""
    partition, uri, bootstrap = target
    path = storage.path_of(uri)
    size = sizes.get(uri, 0) if sizes is not None else _size(storage, path)
    try:
        outcome = "deleted" if storage.delete(path) else "gone"
    except StorageError:
        outcome = "failed"
    return uri, partition, outcome, bootstrap, size if outcome == "deleted" else 0


def delete_targets(storage: Storage, targets: list[tuple[str, str, bool]], sizes: Mapping[str, int] | None
                   ) -> list[Outcome]:
    """Delete planned files with the storage's batch delete (`Storage.delete_many`: one
    request per `delete_batch_size` files on object stores). A file the store reports gone
    counts as deleted; a refused one is logged with the store's reason and counted failed."""
    paths = [storage.path_of(uri) for _, uri, _ in targets]
    answers = storage.delete_many(paths)
    outcomes: list[Outcome] = []
    failures: list[tuple[str, str]] = []
    for (partition, uri, bootstrap), path in zip(targets, paths):
        answer = answers.get(path, "failed: no answer from the store")
        outcome = "failed" if answer.startswith("failed") else answer
        if outcome == "failed":
            failures.append((uri, answer.removeprefix("failed: ")))
        size = (sizes.get(uri, 0) if sizes is not None else 0) if outcome == "deleted" else 0
        outcomes.append((uri, partition, outcome, bootstrap, size))
    if failures:
        log.warning("clean: %d of %d files could not be deleted, first %s: %s", len(failures), len(targets),
                    *failures[0])
    return outcomes


def _listed_sizes(storage: Storage, targets: list[tuple[str, str, bool]], parallelism: int) -> dict[str, int]:
    """Sizes of the targets from one listing of each folder they are in (on an object store
    a listing returns 1,000 sizes a request where a status call returns one)."""
    by_folder: dict[str, list[str]] = {}
    for _, uri, _ in targets:
        path = storage.path_of(uri)
        by_folder.setdefault(path.rsplit("/", 1)[0], []).append(uri)

    def sizes_in(folder: str) -> dict[str, int]:
        try:
            listed = {status.path: status.size for status in storage.list(folder)}
        except StorageError:
            return {}
        return {uri: listed[storage.path_of(uri)] for uri in by_folder[folder] if storage.path_of(uri) in listed}

    found: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(by_folder))),
                            thread_name_prefix="cleanline-sizes") as pool:
        for part in pool.map(sizes_in, by_folder):
            found.update(part)
    return found


def _delete_all(storage: Storage, targets: list[tuple[str, str, bool]], sizes: Mapping[str, int] | None,
                progress: ProgressCallback | None, instant: str, parallelism: int) -> list[Outcome]:
    """Delete every target with a few threads. Workers take whole chunks of at least CHUNK
    files (a task per file costs more than a local unlink) and count what they do; progress is
    reported from the calling thread while they run. On a store with a batch delete (object
    stores), each task is one `delete_many` of `delete_batch_size` files (one request), with
    the sizes read beforehand from one listing per folder when the caller has none."""
    total = len(targets)
    counter = ProgressCounter(instant, total, progress)
    batch = storage.delete_batch_size
    if batch > 1:
        if sizes is None and targets:
            sizes = _listed_sizes(storage, targets, parallelism)
        chunks = [targets[i:i + batch] for i in range(0, total, batch)]
        workers = max(1, min(parallelism, len(chunks)))

        def work(chunk: list[tuple[str, str, bool]]) -> list[Outcome]:
            done = delete_targets(storage, chunk, sizes)
            counter.add(len(done), sum(row[4] for row in done))
            return done
    else:
        workers = max(1, min(parallelism, -(-total // CHUNK)))
        chunks = [targets[i::workers] for i in range(workers)]

        def work(chunk: list[tuple[str, str, bool]]) -> list[Outcome]:
            done = []
            for target in chunk:
                done.append(delete_target(storage, target, sizes))
                counter.add(1, done[-1][4])
            return done

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cleanline-clean") as pool:
        futures = [pool.submit(work, chunk) for chunk in chunks]
        while wait(futures, timeout=PROGRESS_SECONDS).not_done:
            counter.report()
        counter.report()
        return [row for future in futures for row in future.result()]


class ProgressCounter:
    """Files done and bytes deleted, counted from any thread and reported from the caller's
    thread, about a thousand times per clean at most."""

    def __init__(self, instant: str, total: int, progress: ProgressCallback | None) -> None:
        self.instant, self.total, self.progress = instant, total, progress
        self.step = max(1, total // 1000)
        self.files = self.bytes = 0
        self.reported = (-1, -1)
        self.lock = threading.Lock()

    def add(self, files: int, size: int) -> None:
        with self.lock:
            self.files += files
            self.bytes += size

    def set(self, files: int, size: int | None = None) -> None:
        """An absolute count (from a Spark accumulator); bytes only when known."""
        with self.lock:
            self.files = files
            self.bytes = self.bytes if size is None else size

    def report(self) -> None:
        with self.lock:
            files, size = self.files, self.bytes
        last_files = self.reported[0]
        finished = files == self.total and (files, size) != self.reported
        if self.progress is not None and (files // self.step > last_files // self.step or finished):
            self.reported = (files, size)
            self.progress(Progress(self.instant, files, self.total, size))


def _size(storage: Storage, path: str) -> int:
    try:
        return storage.status(path).size
    except StorageError:
        return 0


def begin_clean(table: HudiTable, clean: Instant) -> tuple[dict[str, Any], list[tuple[str, str, bool]]]:
    """Read a pending clean's plan, check it, and move it to inflight (a copy of the plan).

    Immediately before the first delete (the caller holds the table lock), the timeline is
    read again and the plan is refused whole when any path it names lies outside the table
    (`timeline/storage/containment.py`) or any file it deletes is now protected: held by a
    savepoint, read by a pending compaction, log compaction or clustering
    (`planner.protection_conflicts`). A refused clean that is still only requested is
    withdrawn (its requested file removed), so that no Hudi writer runs it either."""
    table.reload()
    table.ensure_intact()
    requested = table.timeline.path_of(clean, State.REQUESTED)
    plan = table.read_instant(clean, State.REQUESTED) or {}
    targets = plan_targets(table, plan)
    containment = table.containment
    for _, uri, _ in targets:
        containment.data_path(uri)
    for partition in _partitions_to_delete(plan):
        containment.partition_path(partition)
    conflicts = protection_conflicts(table, [(partition, uri) for partition, uri, _ in targets])
    if conflicts:
        withdrawn = clean.is_requested and State.INFLIGHT not in table.timeline.files_of(clean)
        if withdrawn:
            table.storage.delete(requested)
            table.reload()
        raise CleanRefused(
            f"{table.uri}: clean {clean.requested_time} refused before any delete: {len(conflicts)} of its files are "
            f"now protected ({'; '.join(conflicts[:5])}{'; ...' if len(conflicts) > 5 else ''}). "
            + ("The requested clean was withdrawn; plan again." if withdrawn else
               "It is inflight and was left as it is; remove the protection or finish it with a Hudi writer."))
    if clean.is_requested:  # the inflight state holds a copy of the plan
        transition.start(table, clean, table.storage.read(requested))
    return plan, targets


def _partitions_to_delete(plan: Mapping[str, Any]) -> list[str]:
    return [p for p in plan.get("partitionsToBeDeleted") or () if p]


def finish_clean(table: HudiTable, clean: Instant, plan: dict[str, Any], outcomes: list[Outcome],
                 started: float) -> CleanResult:
    """Delete the plan's partitions, then publish the completed clean with its metadata."""
    deleted_partitions = _partitions_to_delete(plan)
    containment = table.containment
    for partition in deleted_partitions:
        table.storage.delete_dir(containment.partition_path(partition))
    by_path = {uri: (partition, outcome, bootstrap) for uri, partition, outcome, bootstrap, _ in outcomes}
    content = _clean_metadata(clean, plan, by_path, deleted_partitions, started)
    completed = transition.complete(table, clean, content)
    counts = {kind: sum(1 for o in outcomes if o[2] == kind) for kind in ("deleted", "gone", "failed")}
    return CleanResult(completed, counts["deleted"], counts["gone"], counts["failed"],
                       sum(o[4] for o in outcomes), content)


def plan_targets(table: HudiTable, plan: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(partition, path, is bootstrap) of every file of a plan; v1 plans name files relative
    to their partition (CleanPlanV2MigrationHandler)."""
    targets = []
    for partition, infos in (plan.get("filePathsToBeDeletedPerPartition") or {}).items():
        for info in infos or ():
            targets.append((partition, info["filePath"], bool(info.get("isBootstrapBaseFile"))))
    if not targets:
        for partition, names in (plan.get("filesToBeDeletedPerPartition") or {}).items():
            folder = table.path(partition) if partition else table.base
            targets.extend((partition, table.storage.uri(Storage.join(folder, n)), False) for n in names or ())
    return targets


def _clean_metadata(clean: Instant, plan: dict[str, Any], outcomes: dict[str, tuple[str, str, bool]],
                    deleted_partitions: list[str], started: float) -> dict[str, Any]:
    """CleanerUtils.convertCleanMetadata: per partition the deleted and failed file names;
    bootstrap source files (full paths) in their own map."""
    policy = plan.get("policy") or ""
    regular: dict[str, dict[str, Any]] = {}
    bootstrap: dict[str, dict[str, Any]] = {}
    for path, (partition, outcome, is_bootstrap) in outcomes.items():
        target = bootstrap if is_bootstrap else regular
        name = path if is_bootstrap else path.rsplit("/", 1)[-1]
        entry = target.setdefault(partition, {
            "partitionPath": partition, "policy": policy, "deletePathPatterns": [],
            "successDeleteFiles": [], "failedDeleteFiles": [], "isPartitionDeleted": False})
        entry["deletePathPatterns"].append(name)
        # A file already gone counts as deleted (apache/hudi#18035).
        entry["failedDeleteFiles" if outcome == "failed" else "successDeleteFiles"].append(name)
    for partition in deleted_partitions:
        if partition in regular:
            regular[partition]["isPartitionDeleted"] = True
    ectr = plan.get("earliestInstantToRetain") or {}
    return {
        "startCleanTime": clean.requested_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(e["successDeleteFiles"]) for e in regular.values()),
        "earliestCommitToRetain": ectr.get("timestamp") or "",
        "lastCompletedCommitTimestamp": plan.get("lastCompletedCommitTimestamp") or "",
        "partitionMetadata": regular,
        "version": CLEAN_METADATA_VERSION,
        "bootstrapPartitionMetadata": bootstrap,
        "extraMetadata": plan.get("extraMetadata"),
    }
