"""Rolling back writes as Hudi's rollback executors do (hudi-format.md §9): a plan
(HoodieRollbackPlan v1) from markers or from a listing, then the deletion of what the write
made, a rollback command block for v6 merge-on-read logs, and HoodieRollbackMetadata v1.
Which pending writes have failed is timeline/failed_writes.py's rule."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from timeline import transition
from timeline.exceptions import CleanlineError, InvalidFileNameError
from timeline.failed_writes import (
    EAGER,
    ROLLBACKABLE,
    failed_writes,
    failed_writes_policy,
    heartbeat_alive,
    keeps_plan,
    live_writes,
    pending_writes,
)
from timeline.files import base_file_of, is_base_file_name, log_file_name, parse_log_file
from timeline.instant import (
    COMPACTION,
    DELTA_COMMIT,
    ROLLBACK,
    Instant,
    State,
)
from timeline.logformat import command_block
from timeline.mdt.reader import MetadataTable, metadata_table
from timeline.mdt.writer import (
    DELTACOMMIT,
    ROLLBACK_SUFFIX,
    check_metadata_rollback,
    check_supported,
    is_v6,
    roll_back_pending,
    rollback_updates_v6,
    write_update,
)
from timeline.metadata.records import (
    CommitMetadata,
    InstantRef,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from timeline.savepoint import savepoint_candidates
from timeline.storage import Storage, TableMovedError
from timeline.storage.base import FileStatus
from timeline.table import Table
from timeline.timeline import WRITE_ACTIONS

ROLLBACK_PLAN_VERSION = 1
ROLLBACK_METADATA_VERSION = 1
UNKNOWN_WRITE_TOKEN = "1-0-1"
MARKER_SUFFIXES = (".marker.CREATE", ".marker.MERGE", ".marker.APPEND")


class RollbackRefused(CleanlineError):
    """Hudi would not roll this instant back; the message says why."""


@dataclass(frozen=True, slots=True)
class RollbackPreview:
    """What a rollback would do, before anything is written."""

    instant: Instant
    plan: RollbackPlan
    files_to_delete: tuple[tuple[str, str, int], ...]  # (partition, path, bytes)
    logs_to_mark: tuple[tuple[str, str, int], ...]     # v6 logs that get a rollback block

    @property
    def bytes_to_delete(self) -> int:
        return sum(size for _, _, size in self.files_to_delete)


# Failed writes

def check_not_running(table: Table, instant: Instant, *, now_ms: int | None = None) -> None:
    """Refuse to roll back a pending write whose heartbeat is alive: its writer is running it."""
    if instant.is_pending and heartbeat_alive(table, instant, now_ms):
        raise RollbackRefused(f"{table.uri}: {instant.action} {instant.requested_time} is still being written (its "
                              "heartbeat is alive); wait until its writer finishes or its heartbeat expires")


# Planning

def _instant_files(table: Table, instant: Instant,
                   listing: Mapping[str, Sequence[FileStatus]]) -> dict[str, list[str]]:
    """Partition -> the data file names a rollback without markers deletes, from one listing of
    the table (`listing`), as ListingBasedRollbackStrategy.getRollbackRequests chooses them
    (fetchFilesFromInstant): a completed copy-on-write write whose commit metadata is read and
    names an operation (checkCommitMetadataCompleted) deletes the files its write stats name that
    still exist and carry its time (fetchFilesFromCommitMetadata: a stray file of the same time
    the stats do not name is kept); any other write, pending or merge-on-read, deletes the files
    carrying its time in every partition (FSUtils.getAllPartitionPaths, fetchFilesFromListFiles):
    base files, and from table version 8 log files, whose names carry their own write's time.
    A version 6 log file named after its slice's base instant (getBaseCommitTimeFromLogPath) is
    kept: Cleanline rolls back a v6 delta commit's appends with command blocks and leaves a log
    that started a slice in the instant to the orphan repair (its slice is never read: its base
    instant is on no timeline once rolled back)."""
    t = instant.requested_time
    metadata = _write_metadata(table, instant)
    named: dict[str, set[str]] | None = None
    if instant.is_completed and not table.config.is_mor and metadata.operation_type not in ("", "UNKNOWN"):
        named = {p: {stat.file_name for stat in stats} for p, stats in metadata.write_stats.items()}
    found: dict[str, list[str]] = {}
    for partition, files in listing.items():
        wanted = named.get(partition, set()) if named is not None else None
        for status in files:
            name = status.name
            if wanted is not None and name not in wanted:
                continue
            try:
                if is_base_file_name(name) and base_file_of(name).instant_time == t:
                    found.setdefault(partition, []).append(name)
                elif name.startswith(".") and table.version >= 8 and parse_log_file(name).instant_time == t:
                    found.setdefault(partition, []).append(name)
            except InvalidFileNameError:
                continue
    return found


def _write_metadata(table: Table, instant: Instant) -> CommitMetadata:
    """The instant's commit metadata, or, pending, its inflight file's content (Hudi's workload
    profile); empty for a requested-only write, or when its file does not decode (Hudi's
    getHoodieCommitMetadata: no metadata, the rollback lists the partitions)."""
    if instant.state is State.REQUESTED:
        return CommitMetadata()
    try:
        return table.read(instant, CommitMetadata)
    except (CleanlineError, TypeError):
        return CommitMetadata()


def _marker_names(table: Table, instant: Instant) -> list[str] | None:
    """Marker entries (`<partition>/<file>.marker.<TYPE>`) of an instant, or None without markers."""
    folder = table.path(".hoodie", ".temp", instant.requested_time)
    if not table.storage.exists(folder):
        return None
    names: list[str] = []
    prefix = len(folder) + 1
    for status in table.storage.list_recursive(folder):
        relative = status.path[prefix:]
        if relative.startswith("MARKERS") and relative != "MARKERS.type":
            names += [line.strip() for line in table.storage.read(status.path).decode().splitlines() if line.strip()]
        elif relative.endswith(MARKER_SUFFIXES):
            names.append(relative)
    return names


def _v6_log_blocks(table: Table, instant: Instant) -> dict[tuple[str, str], tuple[str, str]]:
    """v6 merge-on-read: (partition, file id) -> (base instant, log file name) of the log files
    the delta commit appended to, from its metadata (updates carry their log's path)."""
    updated: dict[tuple[str, str], tuple[str, str]] = {}
    for partition, stats in _write_metadata(table, instant).write_stats.items():
        for stat in stats:
            name = stat.file_name
            if name.startswith(".") and ".log." in name:
                log = parse_log_file(name)
                updated[(partition, log.file_id)] = (log.instant_time, name)
    return updated


def plan_rollback(table: Table, instant: Instant, *, for_restore: bool = False,
                  table_service: bool = False) -> RollbackPreview:
    """The HoodieRollbackPlan for `instant` and what it would delete; writes nothing. Table
    services (compaction, log compaction, clustering) are rolled back by a restore, or, with
    `table_service` and while inflight, as `HoodieTable.rollbackInflightInstant` schedules their
    rollback (`timeline.pending_rollbacks.rollback_table_service`): a compaction's rollback then
    deletes only the base files it wrote, never a log file (`ListingBasedRollbackStrategy`'s
    non-restore COMPACTION case, `listBaseFilesToBeDeleted`; its markers are CREATE markers of
    base files), so the log files of delta commits written after it was scheduled (on table
    version 6 named after the compaction's time as their base instant) stay."""
    service = table_service and instant.is_inflight and instant.action in WRITE_ACTIONS
    if instant.action not in (WRITE_ACTIONS if for_restore else ROLLBACKABLE) and not service:
        raise RollbackRefused(f"{table.uri}: {instant.action} {instant.requested_time} is not a write Cleanline "
                              "rolls back (compaction and clustering plans are kept)")
    base_only = service and not for_restore and instant.action == COMPACTION
    if table.timeline.savepoints().find(instant.requested_time) is not None:
        raise RollbackRefused(f"{table.uri}: could not roll back a savepointed commit {instant.requested_time}")
    existing = pending_rollback_of(table, instant.requested_time)
    if existing is not None:  # what will really run is the pending plan: preview that one
        return preview_of_plan(table, instant, existing[1])
    listing = table.list_partitions().partitions  # once: the plan's files and sizes agree
    sizes = {(p, s.name): s.size for p, files in listing.items() for s in files}
    requests: list[RollbackRequest] = []
    deletes: list[tuple[str, str, int]] = []
    marks: list[tuple[str, str, int]] = []
    markers = _marker_names(table, instant) if instant.is_pending else None
    by_partition: dict[str, list[str]] = {}
    appended: dict[tuple[str, str], tuple[str, str]] = {}
    if markers is not None:
        for marker in markers:
            relative, _, io_type = marker.rpartition(".marker.")
            partition, _, name = relative.rpartition("/")
            if io_type == "APPEND" and table.version < 8:
                log = parse_log_file(name)
                appended[(partition, log.file_id)] = (log.instant_time, name)
            elif (partition, name) in sizes:
                by_partition.setdefault(partition, []).append(name)
    elif instant.is_requested:
        pass  # a requested-only write made no files (Hudi plans no requests)
    else:
        by_partition = _instant_files(table, instant, listing)
        if table.version < 8 and table.config.is_mor and instant.action == DELTA_COMMIT:
            appended = _v6_log_blocks(table, instant)
    if base_only:
        by_partition = {p: kept for p, names in by_partition.items()
                        if (kept := [n for n in names if is_base_file_name(n)])}
        appended = {}
    for partition, names in sorted(by_partition.items()):
        folder = table.path(partition) if partition else table.base
        paths = [Storage.join(folder, n) for n in sorted(names)]
        requests.append(RollbackRequest(partition, files_to_delete=tuple(table.storage.uri(p) for p in paths)))
        deletes += [(partition, p, sizes[(partition, n)]) for p, n in zip(paths, sorted(names))]  # all listed
    for (partition, file_id), (base_instant, name) in sorted(appended.items()):
        if (partition, name) not in sizes:
            continue
        folder = table.path(partition) if partition else table.base
        path = table.storage.uri(Storage.join(folder, name))
        requests.append(RollbackRequest(partition, file_id, base_instant,
                                        log_blocks_to_delete={path: sizes[(partition, name)]}))
        marks.append((partition, path, sizes[(partition, name)]))
    plan = RollbackPlan(instant_to_rollback=InstantRef(instant.requested_time, instant.action),
                        requests=tuple(requests), version=ROLLBACK_PLAN_VERSION).with_raw()
    return RollbackPreview(instant, plan, tuple(deletes), tuple(marks))


def preview_of_plan(table: Table, instant: Instant, plan: RollbackPlan) -> RollbackPreview:
    """What an existing rollback plan (a pending `.rollback.requested`) deletes, every path
    checked by the containment rule first (OutsideTableError names the first bad entry)."""
    containment = table.containment
    deletes: list[tuple[str, str, int]] = []
    marks: list[tuple[str, str, int]] = []
    for request in plan.requests:
        for path in request.files_to_delete:
            deletes.append((request.partition, path, _size_of(table, containment.data_path(path))))
        for path, size in request.log_blocks_to_delete.items():
            containment.data_path(path)
            marks.append((request.partition, path, size))
    return RollbackPreview(instant, plan, tuple(deletes), tuple(marks))


def check_plan_paths(table: Table, plan: RollbackPlan) -> None:
    """The containment rule on every path a rollback plan names (no storage call per file)."""
    containment = table.containment
    for request in plan.requests:
        for path in [*request.files_to_delete, *request.log_blocks_to_delete]:
            containment.data_path(path)


def _size_of(table: Table, path: str) -> int:
    try:
        return table.storage.status(path).size
    except CleanlineError:
        return 0


def check_rollback_sequence(table: Table, instant: Instant, *, newer_go_first: frozenset[str] = frozenset(),
                            options: Mapping[str, str] | None = None) -> None:
    """BaseRollbackActionExecutor.validateRollbackCommitSequence, under the EAGER policy only
    (the writers', `failed_writes_policy` with `options`):
    refused when a completed write follows the instant (unless the instant has a heartbeat
    file: the remnant of an earlier LAZY setting), or when the instant is not the newest
    pending non-clustering write ("please rollback greater commits first")."""
    if failed_writes_policy(table, options) != EAGER:
        return
    t = instant.requested_time
    later = [i.requested_time for i in table.timeline.writes().completed() if i.requested_time > t]
    heartbeat = table.storage.exists(table.path(".hoodie", ".heartbeat", t))
    if later and not heartbeat:
        raise RollbackRefused(f"{table.uri}: found commits after {t} ({', '.join(later[:3])}"
                              f"{', ...' if len(later) > 3 else ''}), so it cannot be rolled back now. "
                              f"{_sequence_rule(table, instant, later)}")
    pending = [i.requested_time for i in pending_writes(table) if i.requested_time not in newer_go_first]
    if pending and pending[0] != t:
        newer = [p for p in pending if p > t]
        if newer:
            raise RollbackRefused(f"{table.uri}: found pending writes after {t} ({', '.join(newer[:3])}"
                                  f"{', ...' if len(newer) > 3 else ''}); roll back the newer ones first. Hudi's "
                                  "rule (validateRollbackCommitSequence, failed-writes policy EAGER): pending "
                                  f"writes are rolled back newest first, so roll back {pending[0]} first, then "
                                  "this one.")
        raise RollbackRefused(f"{table.uri}: found pending writes after {t}: none is newer, but {pending[0]} is "
                              "pending. Hudi's rule (validateRollbackCommitSequence, failed-writes policy EAGER) "
                              "rolls back a completed commit only while no write is pending: roll back the pending "
                              f"write{'s' if len(pending) > 1 else ''} first ({', '.join(pending[:3])}), or restore "
                              "the table to a savepoint.")


def _sequence_rule(table: Table, instant: Instant, later: list[str]) -> str:
    """Hudi's rule behind a refusal for later completed commits, and the way forward this
    table offers. A savepoint before the write to restore to (an existing one, else the newest
    write before it that may be savepointed); savepoints after it must be deleted first (Hudi
    restores to no savepoint with a later one). Rolling the later commits back first works only
    for a completed write: while this write is pending, Hudi's same rule refuses to roll back
    any completed commit."""
    t = instant.requested_time
    savepoints = sorted(i.requested_time for i in table.timeline.savepoints().completed())
    before = [s for s in savepoints if s < t]
    after = [s for s in savepoints if s > t]
    first = (f"first delete the savepoint{'s' if len(after) > 1 else ''} after it ({', '.join(after)}: no restore "
             "passes a later savepoint and no savepointed commit is rolled back); then " if after else "")
    if before:
        restore = f"restore the table to the savepoint {before[-1]}"
    else:
        candidate = next((c.requested_time for c in savepoint_candidates(table) if c.requested_time < t), None)
        restore = (f"create a savepoint of {candidate} (the newest write before it), then restore the table to it"
                   if candidate else "")
    if restore:
        restore += " (a restore rolls back every write after the savepoint, this one included)"
    rule = ("Hudi's rule (BaseRollbackActionExecutor.validateRollbackCommitSequence, failed-writes policy EAGER): "
            "a write is rolled back only when no commit completed after it, newest first.")
    if instant.is_pending:
        way = (f"{first}{restore}. The later commits cannot be rolled back first: while this write is pending "
               "Hudi's same rule refuses to roll back a completed commit." if restore else
               "no savepoint can be restored to (none lies before it, and no write before it can be savepointed), "
               "and while this write is pending Hudi's same rule refuses to roll back the later commits.")
        return f"{rule} The way forward: {way}"
    back = (f"roll back the later commits first, newest first, starting with {max(later)} "
            f"(`cleanline rollback {table.uri} --instant {max(later)}`; what they wrote is lost), then this one")
    return f"{rule} The way forward: {first}{restore + '; or ' if restore else ''}{back}."


# Execution

def execute_rollback_plan(table: Table, rollback_time: str, plan: RollbackPlan,
                          target: Instant, *,
                          before_state_files: Callable[[Mapping[str, RollbackPartitionMetadata]], object] | None = None,
                          keep_requested: bool = False) -> RollbackMetadata:
    """Carry out a rollback plan (idempotently) and return its HoodieRollbackMetadata; the
    caller publishes it. Deletes the rolled-back instant's state files and markers, after
    `before_state_files` (the metadata table's rollback, given the partitions' rollback
    metadata) has run; with `keep_requested` (a pending table service, `keeps_plan`) only its
    inflight file: it reverts to requested."""
    started = time.monotonic()
    check_plan_paths(table, plan)  # every path inside the table, or nothing is deleted
    transition.fence(table)  # the deletes start only while the table's lock (the data table's, on the MDT) is ours
    files = table.timeline.files_of(target)
    if State.COMPLETED in files:  # first, so that a crash leaves a pending write to retry
        table.storage.delete(files[State.COMPLETED].path)
    found: dict[str, tuple[list[str], list[str], dict[str, int], dict[str, int]]] = {}
    for request in plan.requests:
        deleted, failed, blocks, logs = found.setdefault(request.partition, ([], [], {}, {}))
        for path in request.files_to_delete:
            try:
                table.storage.delete(table.containment.data_path(path))
                deleted.append(path)  # gone already counts as deleted (master)
            except TableMovedError:
                raise  # the table's folder was swapped during the run: stop, the rollback stays pending
            except CleanlineError:
                failed.append(path)
        for log_path, size in request.log_blocks_to_delete.items():
            block_path = _append_rollback_block(table, rollback_time, target.requested_time, log_path)
            blocks[block_path] = table.storage.status(table.storage.path_of(block_path)).size
            logs[log_path] = size
    partitions = {p: RollbackPartitionMetadata(p, tuple(d), tuple(f), b, lg) for p, (d, f, b, lg) in found.items()}
    if before_state_files is not None:
        before_state_files(partitions)
    for state in (State.INFLIGHT,) if keep_requested else (State.INFLIGHT, State.REQUESTED):
        if state in files:
            table.storage.delete(files[state].path)
    table.storage.delete_dir(table.path(".hoodie", ".temp", target.requested_time))
    return RollbackMetadata(
        start_rollback_time=rollback_time, time_taken_ms=int((time.monotonic() - started) * 1000),
        commits_rollback=(target.requested_time,), partitions=partitions,
        instants_rollback=(InstantRef(target.requested_time, target.action),), version=ROLLBACK_METADATA_VERSION)


def _append_rollback_block(table: Table, rollback_time: str, target: str, log_uri: str) -> str:
    """A v6 ROLLBACK command block for `target`, written as the next version of the log file
    (what Hudi does on stores that cannot append). Idempotent: a re-run finds its block."""
    storage = table.storage
    log_path = storage.path_of(log_uri)
    folder, _, name = log_path.rpartition("/")
    log = parse_log_file(name)
    siblings = [parse_log_file(s.name) for s in storage.list(folder)
                if s.name.startswith(f".{log.file_id}_{log.instant_time}.log.")]
    block = command_block(rollback_time, target)
    for sibling in siblings:
        path = Storage.join(folder, sibling.name)
        if sibling.version > log.version and storage.read(path) == block:
            return storage.uri(path)
    version = max(s.version for s in siblings) + 1
    path = Storage.join(folder, log_file_name(log.file_id, log.instant_time, version, UNKNOWN_WRITE_TOKEN))
    transition.fence(table)  # a log file like any other: only while the table's lock is ours
    storage.write(path, block)
    return storage.uri(path)


def rollback(table: Table, requested_time: str, *, options: Mapping[str, str] | None = None) -> Instant:
    """Roll back the write at `requested_time` (pending or completed): requested and inflight
    rollback, deletion of what it wrote, completed rollback. A pending rollback of the same
    instant is resumed (`finish_rollback`). `options`: the writers' Hudi options (their
    failed-writes policy decides Hudi's sequence rule)."""
    table.reload()
    target = next((i for i in table.timeline if i.requested_time == requested_time
                   and i.action in ROLLBACKABLE | {"clustering"}), None)
    if target is None:
        raise RollbackRefused(f"{table.uri}: no write {requested_time} on the active timeline")
    table.ensure_intact()
    check_not_running(table, target)
    check_rollback_sequence(table, target, options=options)
    mdt = metadata_table(table)
    if mdt is not None:  # before anything is deleted
        check_metadata_rollback(mdt, requested_time)
    existing = pending_rollback_of(table, requested_time)
    if existing is not None:
        rollback_instant, plan = existing
    else:
        plan = plan_rollback(table, target).plan
        rollback_instant = transition.request(table, ROLLBACK, plan.to_raw())
    return run_rollback(table, rollback_instant, plan, target, mdt)


def run_rollback(table: Table, rollback_instant: Instant, plan: RollbackPlan, target: Instant,
                 mdt: MetadataTable | None) -> Instant:
    """Start a requested rollback, delete what its plan names (the metadata table's rollback
    before the target's state files go, as Hudi's BaseRollbackActionExecutor writes it first) and
    complete it; a pending compaction or clustering keeps its plan (`keeps_plan`)."""
    transition.start(table, rollback_instant)
    rollback_time = rollback_instant.requested_time
    content = execute_rollback_plan(table, rollback_time, plan, target, keep_requested=keeps_plan(table, target),
                                    before_state_files=None if mdt is None else (
        lambda partitions: rollback_in_metadata_table(mdt, target.requested_time, rollback_time, partitions)))
    return transition.complete(table, rollback_instant, content.to_raw())


def pending_rollback_of(table: Table, requested_time: str) -> tuple[Instant, RollbackPlan] | None:
    for pending in table.timeline.rollbacks().pending():
        plan = table.read(pending, RollbackPlan, State.REQUESTED)
        if plan.instant_to_rollback is not None and plan.instant_to_rollback.time == requested_time:
            return pending, plan
    return None


def rollback_failed_write(table: Table, requested_time: str, *, now_ms: int | None = None,
                          options: Mapping[str, str] | None = None) -> Instant:
    """Roll back one write only if it is a failed write now (see `failed_writes`), or resume
    its pending rollback; a completed or still-running write is refused."""
    table.reload()
    if pending_rollback_of(table, requested_time) is None and requested_time not in {
            i.requested_time for i in failed_writes(table, now_ms=now_ms, options=options)}:
        raise RollbackRefused(f"{table.uri}: {requested_time} is not a failed write under the table's failed-writes "
                              "policy (completed writes are undone by a restore to a savepoint)")
    return rollback(table, requested_time, options=options)


def rollback_failed_writes(table: Table, *, now_ms: int | None = None,
                           options: Mapping[str, str] | None = None) -> list[Instant]:
    """Roll back every failed write (see `failed_writes`), newest first, as
    BaseHoodieTableServiceClient.rollbackFailedWrites does."""
    return [rollback(table, i.requested_time, options=options)
            for i in failed_writes(table, now_ms=now_ms, options=options)]


@dataclass(frozen=True, slots=True)
class FailedWrite:
    """A failed write and what rolling it back deletes, or why it cannot be rolled back now
    (a newer failed write first, a plan naming a path outside the table, ...)."""

    instant: Instant
    preview: RollbackPreview | None
    refusal: str
    age_seconds: int
    live: bool = False  # its heartbeat is alive: its writer is still running it (not a failed write yet)


def preview_failed_writes(table: Table, *, now_ms: int | None = None,
                          options: Mapping[str, str] | None = None) -> list[FailedWrite]:
    """Every failed write, newest first, with its rollback preview or the reason it is refused."""
    table.reload()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    rows = [FailedWrite(i, None, f"its heartbeat is alive (touched {age} s ago): its writer is still running it",
                        age, live=True) for i, age in live_writes(table, now_ms=now_ms)]
    for instant in failed_writes(table, now_ms=now_ms, options=options):
        newest = max((s.mtime_ms for s in table.timeline.files_of(instant).values()), default=now)
        try:
            check_rollback_sequence(table, instant, options=options)
            rows.append(FailedWrite(instant, plan_rollback(table, instant), "", max(0, (now - newest) // 1000)))
        except CleanlineError as exc:
            rows.append(FailedWrite(instant, None, str(exc), max(0, (now - newest) // 1000)))
    return sorted(rows, key=lambda r: r.instant.sort_key, reverse=True)


def preview_rollback_failed_writes(table: Table, *, now_ms: int | None = None,
                                   options: Mapping[str, str] | None = None) -> list[RollbackPreview]:
    """What `rollback_failed_writes` deletes, newest first; refused whole (RollbackRefused or
    OutsideTableError) when any of them could not go even after the newer ones."""
    table.reload()
    writes = failed_writes(table, now_ms=now_ms, options=options)
    previews = []
    for index, instant in enumerate(writes):
        check_rollback_sequence(table, instant, newer_go_first=frozenset(i.requested_time for i in writes[:index]),
                                options=options)
        previews.append(plan_rollback(table, instant))
    return previews


def preview_failed_write(table: Table, requested_time: str, *, now_ms: int | None = None,
                         options: Mapping[str, str] | None = None) -> RollbackPreview:
    """What rolling back one failed write would delete (a pending rollback plan of it is what
    runs, so that is what is previewed); refused for anything but a failed write that Hudi's
    sequence rule lets go now, and for a plan naming a path outside the table."""
    table.reload()
    for instant in failed_writes(table, now_ms=now_ms, options=options):
        if instant.requested_time == requested_time:
            check_rollback_sequence(table, instant, options=options)
            return plan_rollback(table, instant)
    raise RollbackRefused(f"{table.uri}: {requested_time} is not a failed write under the table's failed-writes "
                          "policy (completed writes are undone by a restore to a savepoint)")


# The metadata table's part of a rollback: the machinery above, run on the MDT as a table (this
# module stands above timeline/mdt/writer.py, which writes the MDT's records and knows no rollback).

def rollback_in_metadata_table(mdt: MetadataTable, target_time: str, rollback_time: str,
                               partitions: Mapping[str, RollbackPartitionMetadata] | None = None) -> Instant | None:
    """`HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata)`, run before the data
    table's instant files are deleted (`BaseRollbackActionExecutor.finishRollback`): without
    them an MDT deltacommit would count as valid again.

    Table versions 8 and 9: the MDT deltacommit of the rolled-back instant (completed or
    pending) is itself rolled back, at the data-table rollback's time, by a listing-based
    rollback of the MDT (every MDT file written at that time goes, then its state files;
    `R.rollback` on the MDT timeline). No records are written: every MDT partition reverts at
    once. Nothing to do when the MDT never saw the instant; a completed MDT rollback at that
    time (a re-run) is returned as it is.

    Table version 6 (`rollback_in_metadata_table_v6`): a deltacommit at the rollback's time
    lists the log files the rollback leaves, then the completed MDT deltacommit of the
    rolled-back instant is rolled back at `R + "006"` with rollback command blocks."""
    check_supported(mdt)
    if is_v6(mdt):
        return rollback_in_metadata_table_v6(mdt, target_time, rollback_time, partitions or {})
    table = mdt.mdt.reload()
    done = [i for i in table.timeline.rollbacks().completed() if i.requested_time == rollback_time]
    if done:
        return done[0]
    target = next((i for i in table.timeline if i.requested_time == target_time and i.action == DELTACOMMIT), None)
    existing = pending_rollback_of(table, target_time)
    if target is None and existing is None:
        return None
    if target is None:  # a crashed run removed its state files already: finish that rollback
        target = Instant(target_time, DELTACOMMIT, State.INFLIGHT)
    check_metadata_rollback(mdt, target_time)
    if existing is not None:
        rollback_instant, plan = existing
    else:
        plan = plan_rollback(table, target).plan
        rollback_instant = Instant(rollback_time, ROLLBACK, State.REQUESTED)
        transition.write_state(table, rollback_instant, plan.to_raw())
    transition.start(table, rollback_instant)
    content = execute_rollback_plan(table, rollback_instant.requested_time, plan, target)
    return transition.complete(table, rollback_instant, content.to_raw())


def rollback_in_metadata_table_v6(mdt: MetadataTable, target_time: str, rollback_time: str,
                                  partitions: Mapping[str, RollbackPartitionMetadata]) -> Instant | None:
    """0.14/0.15 `update(HoodieRollbackMetadata)`: `validateRollback`; a deltacommit at the
    rollback's time R with `rollback_updates_v6` (written even when empty, as `processAndCommit`
    does); then, when the MDT holds a *completed* deltacommit of the rolled-back instant since
    its last compaction, `rollback(target, R + "006")` on the MDT: a merge-on-read rollback on
    table version 6 appends ROLLBACK command blocks to the file groups it wrote. A pending MDT
    deltacommit of the instant is not rolled back there (Hudi leaves it to the MDT's
    `rollbackFailedWrites`): Cleanline removes it first, as that would. Each step is skipped
    when a re-run finds it done. Returns the MDT rollback, or the deltacommit when there was
    nothing to roll back."""
    check_metadata_rollback(mdt, target_time)
    table = mdt.mdt.reload()
    mdt_rollback_time = rollback_time + ROLLBACK_SUFFIX
    done = [i for i in table.timeline.rollbacks().completed() if i.requested_time == mdt_rollback_time]
    if done:
        return done[0]
    target = next((i for i in table.timeline if i.requested_time == target_time and i.action == DELTACOMMIT), None)
    if target is not None and target.is_pending and pending_rollback_of(table, target_time) is None:
        roll_back_pending(mdt, target_time)
        target = None
    written = write_update(mdt, rollback_time, rollback_updates_v6(partitions))
    table.reload()
    existing = pending_rollback_of(table, target_time)
    if existing is not None:
        rollback_instant, plan = existing
    elif target is not None and target.is_completed:
        plan = plan_rollback(table, target).plan
        rollback_instant = Instant(mdt_rollback_time, ROLLBACK, State.REQUESTED)
        transition.write_state(table, rollback_instant, plan.to_raw())
    else:
        return written
    transition.start(table, rollback_instant)
    if target is None:
        target = Instant(target_time, DELTACOMMIT, State.COMPLETED)
    content = execute_rollback_plan(table, rollback_instant.requested_time, plan, target)
    return transition.complete(table, rollback_instant, content.to_raw())
