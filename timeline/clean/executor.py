"""Scheduling and running cleans as Hudi's CleanActionExecutor does (hudi-format.md §7.7):
requested -> inflight (a copy of the plan) -> parallel deletes -> completed clean with
HoodieCleanMetadata. Idempotent: a re-run finishes a half-done clean from its plan, and a file
already gone counts as deleted."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import Enum
from itertools import groupby
from operator import attrgetter
from typing import NamedTuple

from timeline import transition
from timeline.clean.config import CleanConfig
from timeline.clean.planner import CleanPlan, plan_invalidations
from timeline.clean.protection import protection_conflicts
from timeline.exceptions import CleanlineError, StorageError
from timeline.instant import CLEAN, Instant, State
from timeline.mdt.reader import metadata_table
from timeline.mdt.writer import check_writable, update_for_clean
from timeline.metadata.records import CleanerPlan, CleanFileInfo, CleanMetadata, CleanPartitionMetadata
from timeline.perf import paused_gc
from timeline.storage import Storage
from timeline.table import Table

log = logging.getLogger(__name__)

CLEAN_METADATA_VERSION = 2
CHUNK = 1000  # files per delete task
PROGRESS_SECONDS = 0.2


class CleanRefused(CleanlineError):
    """Hudi (or Cleanline's safety rules) would not schedule or run this clean now."""


class PlanInvalidated(CleanRefused):
    """The timeline, re-read right before the plan would be published, invalidates it: plan again."""

    def __init__(self, uri: str, reasons: list[str]) -> None:
        self.reasons = reasons
        shown = "; ".join(reasons[:5]) + ("; ..." if len(reasons) > 5 else "")
        super().__init__(f"{uri}: the plan is stale, nothing was scheduled: {shown}")


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a running clean is: files done of total, and bytes deleted so far."""

    instant: str
    files_done: int
    files_total: int
    bytes_deleted: int


ProgressCallback = Callable[[Progress], None]
# A context manager factory held around a clean's state changes (the table's lock, or nothing).
Guard = Callable[[], AbstractContextManager[None]]


class Status(Enum):
    """What happened to one planned file."""

    DELETED = "deleted"    # this clean deleted it
    GONE = "gone"          # it was already gone (Hudi's metadata counts it deleted, apache/hudi#18035)
    FAILED = "failed"      # the store refused; `error` says why


FileStatus = Status  # its public name (timeline.FileStatus); not the listing entry timeline.storage.FileStatus


# One file of a clean plan: its partition, its path as the plan names it, and whether it is a
# bootstrap source file (the plan's own records, worked on as they are).
Target = CleanFileInfo


class FileOutcome(NamedTuple):
    """What a clean did to one file. `bytes` counts only what this clean deleted (a NamedTuple:
    a clean makes one per file)."""

    partition: str
    path: str
    status: Status
    is_bootstrap: bool = False
    bytes: int = 0
    error: str = ""

    @property
    def file_name(self) -> str:
        return self.path if self.is_bootstrap else self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one run did: every file's outcome and the published HoodieCleanMetadata."""

    instant: Instant
    outcomes: Sequence[FileOutcome]
    metadata: CleanMetadata
    # files deleted, already gone, failed and bytes deleted, when counted already (a clean run
    # in slices: its outcomes are built only when read)
    totals: tuple[int, int, int, int] | None = None

    def count(self, status: Status) -> int:
        if self.totals is not None:
            return self.totals[(Status.DELETED, Status.GONE, Status.FAILED).index(status)]
        return sum(1 for o in self.outcomes if o.status is status)

    @property
    def deleted(self) -> int:
        return self.count(Status.DELETED)

    @property
    def already_gone(self) -> int:
        return self.count(Status.GONE)

    @property
    def failed(self) -> int:
        return self.count(Status.FAILED)

    @property
    def bytes_deleted(self) -> int:
        """Bytes this clean reclaimed: files already gone count nothing."""
        if self.totals is not None:
            return self.totals[3]
        return sum(o.bytes for o in self.outcomes if o.status is Status.DELETED)

    @classmethod
    def from_report(cls, instant: Instant, metadata: CleanMetadata) -> CleanResult:
        """A completed clean read back from its metadata (a run that died after publishing it):
        files listed deleted count as deleted (Hudi lists files already gone there too), with
        no bytes known."""
        outcomes = [FileOutcome(p, n, Status.DELETED) for p, n in metadata.deleted_files()]
        outcomes += [FileOutcome(p, n, Status.FAILED, error="listed failed by the clean") for p, n in
                     metadata.failed_files()]
        return cls(instant, tuple(outcomes), metadata)


def needs_cleaning(table: Table, config: CleanConfig) -> bool:
    """The NUM_COMMITS trigger: at least `trigger_max_commits` completed commits since the last
    completed clean's last completed commit."""
    timeline = table.timeline
    last_clean = timeline.cleans().completed().last()
    since = ""
    if last_clean is not None:
        since = table.read(last_clean, CleanMetadata, fields=("last_completed_commit",)).last_completed_commit
    count = sum(1 for i in timeline.commits().completed() if i.requested_time > since)
    return count >= config.trigger_max_commits


def schedule_clean(table: Table, plan: CleanPlan, config: CleanConfig, *, force: bool = False,
                   before_write: Callable[[str], None] | None = None) -> Instant | None:
    """Write `<t>.clean.requested` holding the plan. A plan that deletes nothing writes no
    instant and returns None (CleanPlanActionExecutor.requestClean returns an empty option).
    Refused when another clean is pending and `hoodie.clean.multiple.enabled` is off, when too few
    commits completed since the last clean (unless `force`), or when the plan names a path that
    is no longer cleanable (PlanInvalidated). `before_write` is told `t` before the file is
    written (`transition.request`)."""
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
    invalid = plan_invalidations(table, plan)
    if invalid:
        raise PlanInvalidated(table.uri, invalid)
    instant = transition.request(table, CLEAN, plan.to_record().to_raw(), before_write=before_write)
    table.reload()
    return instant


def pending_cleans(table: Table, *, instant: str | None = None) -> list[Instant]:
    """The pending cleans to run (all, or the one at `instant`), in timeline order."""
    table.reload()
    pending = [i for i in table.timeline.cleans().pending() if instant is None or i.requested_time == instant]
    if instant is not None and not pending:
        raise CleanRefused(f"{table.uri}: no pending clean at {instant}")
    return pending


def run_pending_cleans(table: Table, *, progress: ProgressCallback | None = None,
                       parallelism: int | None = None, instant: str | None = None,
                       sizes: Mapping[str, int] | None = None, guard: Guard = nullcontext) -> list[CleanResult]:
    """Run every pending clean (or the one at `instant`) in timeline order.

    `sizes` (file path as in the plan -> bytes), when the caller has them from the plan,
    spares a status call per file; without it each file's size is read before it goes, for
    the bytes reclaimed. `parallelism` defaults to what the storage backend handles well.
    `progress` is called on this thread. `guard` is held while a clean is re-validated and
    moved to inflight, and again while it is completed (the table's lock: see
    timeline/transactions.py); the deletes run without it."""
    threads = parallelism or table.storage.io_threads
    results = []
    for clean in pending_cleans(table, instant=instant):
        started = time.monotonic()
        with guard():
            plan, targets = begin_clean(table, clean)
        outcomes = _delete_all(table.storage, targets, sizes, progress, clean.requested_time, threads)
        with guard():
            results.append(finish_clean(table, clean, plan, outcomes, started))
    return results


def delete_target(storage: Storage, target: Target, sizes: Mapping[str, int] | None) -> FileOutcome:
    """Delete one planned file: deleted, already gone, or failed with the store's error."""
    path = storage.path_of(target.path)
    size = sizes.get(target.path, 0) if sizes is not None else _size(storage, path)
    try:
        status = Status.DELETED if storage.delete(path) else Status.GONE
    except StorageError as exc:
        return FileOutcome(target.partition, target.path, Status.FAILED, target.is_bootstrap_base_file, 0,
                           str(exc))
    return FileOutcome(target.partition, target.path, status, target.is_bootstrap_base_file,
                       size if status is Status.DELETED else 0)


_ANSWERED = {"deleted": Status.DELETED, "gone": Status.GONE}  # `Storage.delete_many`'s answers other than "failed: ..."


def delete_targets(storage: Storage, targets: list[Target], sizes: Mapping[str, int] | None) -> list[FileOutcome]:
    """Delete planned files with the storage's batch delete (`Storage.delete_many`: one
    request per `delete_batch_size` files on object stores). A refused file is logged with the
    store's reason and counted failed."""
    paths = [storage.path_of(t.path) for t in targets]
    answers = storage.delete_many(paths)
    outcomes: list[FileOutcome] = []
    known = sizes if sizes is not None else {}
    for target, path in zip(targets, paths):
        answer = answers.get(path, "failed: no answer from the store")
        status = _ANSWERED.get(answer)
        if status is None:
            outcomes.append(FileOutcome(target.partition, target.path, Status.FAILED,
                                        target.is_bootstrap_base_file, 0,
                                        answer.removeprefix("failed: ")))
            continue
        size = known.get(target.path, 0) if status is Status.DELETED else 0
        outcomes.append(FileOutcome(target.partition, target.path, status, target.is_bootstrap_base_file, size))
    failures = [o for o in outcomes if o.status is Status.FAILED]
    if failures:
        log.warning("clean: %d of %d files could not be deleted, first %s: %s", len(failures), len(targets),
                    failures[0].path, failures[0].error)
    return outcomes


def listed_sizes(storage: Storage, targets: list[Target], parallelism: int) -> dict[str, int]:
    """Sizes of the targets from one listing of each folder they are in (on an object store
    a listing returns 1,000 sizes a request where a status call returns one)."""
    by_folder: dict[str, list[str]] = {}
    for target in targets:
        path = storage.path_of(target.path)
        by_folder.setdefault(path.rsplit("/", 1)[0], []).append(target.path)

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


def _delete_all(storage: Storage, targets: list[Target], sizes: Mapping[str, int] | None,
                progress: ProgressCallback | None, instant: str, parallelism: int) -> list[FileOutcome]:
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
            sizes = listed_sizes(storage, targets, parallelism)
        chunks = [targets[i:i + batch] for i in range(0, total, batch)]
        workers = max(1, min(parallelism, len(chunks)))

        def work(chunk: list[Target]) -> list[FileOutcome]:
            done = delete_targets(storage, chunk, sizes)
            counter.add(len(done), sum(row.bytes for row in done))
            return done
    else:
        workers = max(1, min(parallelism, -(-total // CHUNK)))
        chunks = [targets[i::workers] for i in range(workers)]

        def work(chunk: list[Target]) -> list[FileOutcome]:
            done = []
            for target in chunk:
                done.append(delete_target(storage, target, sizes))
                counter.add(1, done[-1].bytes)
            return done

    with paused_gc(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cleanline-clean") as pool:
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


def begin_clean(table: Table, clean: Instant) -> tuple[CleanerPlan, list[Target]]:
    """Read a pending clean's plan, check it, and move it to inflight (a copy of the plan).

    Immediately before the first delete (the caller holds the table lock), the timeline is
    read again and the plan is refused whole when any path it names lies outside the table
    (`timeline/storage/containment.py`) or any file it deletes is now protected: held by a
    savepoint, read by a pending compaction, log compaction or clustering
    (`protection.protection_conflicts`). A refused clean that is still only requested is
    withdrawn (its requested file removed), so that no Hudi writer runs it either."""
    table.reload()
    requested = table.timeline.path_of(clean, State.REQUESTED)
    with paused_gc():  # a record and a path or two per planned file
        plan = table.read(clean, CleanerPlan, State.REQUESTED)  # first: ensure_intact then skips it
        table.ensure_intact()
        targets = plan_targets(table, plan)
        containment = table.containment
        for _, run in groupby(targets, key=attrgetter("partition")):  # a plan lists its files by partition
            containment.check_data_paths([t.path for t in run])
        for partition in plan.partitions_to_delete:
            containment.partition_path(partition)
        conflicts = protection_conflicts(table, [(t.partition, t.path) for t in targets])
    mdt = metadata_table(table)
    if mdt is not None and not conflicts:
        check_writable(mdt)  # its update must be writable before the first delete
    if conflicts:
        refuse_protected(table, clean, conflicts, len(conflicts))
    if clean.is_requested:  # the inflight state holds a copy of the plan
        transition.start(table, clean, table.storage.read(requested))
    return plan, targets


def refuse_protected(table: Table, clean: Instant, conflicts: Sequence[str], count: int) -> None:
    """Refuse a clean `count` of whose files are protected now (`conflicts` names some): a
    clean still only requested is withdrawn (its requested file removed), so that no Hudi
    writer runs it either; an inflight one is left as it is."""
    withdrawn = clean.is_requested and State.INFLIGHT not in table.timeline.files_of(clean)
    if withdrawn:
        table.storage.delete(table.timeline.path_of(clean, State.REQUESTED))
        table.reload()
    raise CleanRefused(
        f"{table.uri}: clean {clean.requested_time} refused before any delete: {count} of its files are "
        f"now protected ({'; '.join(conflicts[:5])}{'; ...' if count > 5 else ''}). "
        + ("The requested clean was withdrawn; plan again." if withdrawn else
           "It is inflight and was left as it is; remove the protection or finish it with a Hudi writer."))


def finish_clean(table: Table, clean: Instant, plan: CleanerPlan, outcomes: list[FileOutcome],
                 started: float) -> CleanResult:
    """Delete the plan's partitions, then publish the completed clean with its metadata: first
    the metadata table's deltacommit at the clean's time (`timeline.mdt.writer`, when the table
    has one), then the data table's completed clean (CleanActionExecutor.runClean's order)."""
    containment = table.containment
    for partition in plan.partitions_to_delete:
        table.storage.delete_dir(containment.partition_path(partition))
    with paused_gc():
        done = {o.path: o for o in outcomes}  # a file planned twice has one outcome
        content = clean_metadata(clean, plan, list(done.values()), started)
    mdt = metadata_table(table)
    written = update_for_clean(mdt, clean.requested_time, content) if mdt is not None else None
    completed = transition.complete(table, clean, content.to_raw(),
                                    after=(written.completion_time or "") if written is not None else "")
    return CleanResult(completed, tuple(outcomes), content)


def plan_targets(table: Table, plan: CleanerPlan) -> list[Target]:
    """Every file of a plan; v1 plans name files relative to their partition
    (CleanPlanV2MigrationHandler)."""
    targets = [info for infos in plan.files.values() for info in infos]
    if not targets:
        for partition, names in plan.legacy_file_names.items():
            folder = table.path(partition) if partition else table.base
            targets.extend(Target(partition, table.storage.uri(Storage.join(folder, n))) for n in names)
    return targets


def clean_metadata(clean: Instant, plan: CleanerPlan, outcomes: list[FileOutcome], started: float) -> CleanMetadata:
    """CleanerUtils.convertCleanMetadata: per partition the deleted and failed file names;
    bootstrap source files (full paths) in their own map. A file already gone is listed as
    deleted, as Hudi does (apache/hudi#18035); Cleanline's own report keeps them apart."""
    regular: dict[str, dict[str, list[str]]] = {}
    bootstrap: dict[str, dict[str, list[str]]] = {}
    failed = Status.FAILED
    for partition, path, status, is_bootstrap, _, _ in outcomes:  # FileOutcome, unpacked: one per file
        entry = (bootstrap if is_bootstrap else regular).get(partition)
        if entry is None:
            entry = (bootstrap if is_bootstrap else regular)[partition] = {"all": [], "ok": [], "failed": []}
        name = path if is_bootstrap else path.rpartition("/")[2]  # FileOutcome.file_name
        entry["all"].append(name)
        entry["failed" if status is failed else "ok"].append(name)

    def partitions(found: dict[str, dict[str, list[str]]], marks_deleted: bool) -> dict[str, CleanPartitionMetadata]:
        return {p: CleanPartitionMetadata(p, plan.policy, tuple(e["all"]), tuple(e["ok"]), tuple(e["failed"]),
                                          marks_deleted and p in plan.partitions_to_delete)
                for p, e in found.items()}

    ectr = plan.earliest_instant_to_retain
    regular_meta = partitions(regular, True)
    return CleanMetadata(
        start_clean_time=clean.requested_time, time_taken_ms=int((time.monotonic() - started) * 1000),
        total_files_deleted=sum(len(m.success_delete_files) for m in regular_meta.values()),
        earliest_commit_to_retain="" if ectr is None else ectr.time,
        last_completed_commit=plan.last_completed_commit, partitions=regular_meta,
        bootstrap_partitions=partitions(bootstrap, False), extra_metadata=plan.extra_metadata,
        version=CLEAN_METADATA_VERSION)


__all__ = [
    "CHUNK", "CLEAN_METADATA_VERSION", "PROGRESS_SECONDS", "CleanRefused", "CleanResult", "FileOutcome", "FileStatus",
    "Guard", "PlanInvalidated", "Progress", "ProgressCallback", "ProgressCounter", "Status", "Target", "begin_clean",
    "clean_metadata", "delete_target", "delete_targets", "finish_clean", "listed_sizes", "needs_cleaning",
    "pending_cleans", "plan_targets", "refuse_protected", "run_pending_cleans", "schedule_clean"
]
