"""Savepoints as Hudi's SavepointActionExecutor and SavepointHelpers make and delete them
(hudi-format.md §8.1-8.2), with a stricter check that no file a savepoint would name is gone."""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass

from timeline import transition
from timeline.archive.plan import plan_archival
from timeline.archive.rules import BlockerKind
from timeline.archive.settings import ArchivalConfigError
from timeline.clean.executor import plan_targets
from timeline.exceptions import CleanlineError, InvalidFileNameError
from timeline.files import base_file_of, is_base_file_name, parse_log_file
from timeline.fsview import FileSlice
from timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, SAVEPOINT, Instant, State
from timeline.metadata.records import CleanerPlan, CleanMetadata, SavepointMetadata
from timeline.table import Table

SAVEPOINT_METADATA_VERSION = 1
SAVEPOINTABLE = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})


class SavepointRefused(CleanlineError):
    """The savepoint cannot be made or removed; the message says why."""


@dataclass(frozen=True, slots=True)
class SavepointInfo:
    """One completed savepoint and what it protects."""

    instant: Instant
    savepointed_by: str
    savepointed_at_ms: int
    comments: str
    files: int
    bytes: int
    missing_files: int
    holds_back_archival: bool


def _slices_as_of(table: Table, time_: str) -> dict[str, list[FileSlice]]:
    view = table.file_system_view(as_of=time_)
    by_partition: dict[str, list[FileSlice]] = {p: [] for p in view.partitions}
    for piece in view.latest_slices():
        by_partition[piece.partition].append(piece)
    return by_partition


def _cleaned_groups(table: Table) -> dict[tuple[str, str], set[str]]:
    """(partition, file id) -> base instants of base files that completed cleans deleted."""
    cleaned: dict[tuple[str, str], set[str]] = {}
    for clean in table.timeline.cleans().completed():
        for partition, name in table.read(clean, CleanMetadata).deleted_files():
            name = name.rsplit("/", 1)[-1]
            try:
                if is_base_file_name(name):
                    base = base_file_of(name)
                    cleaned.setdefault((partition, base.file_id), set()).add(base.instant_time)
                else:
                    log = parse_log_file(name)
                    cleaned.setdefault((partition, log.file_id), set()).add(log.instant_time)
            except InvalidFileNameError:
                continue
    return cleaned


def _check_not_cleaned(table: Table, instant: Instant, slices: dict[str, list[FileSlice]]) -> None:
    """Refuse when a clean deleted a file of a slice the savepoint would hold: for some file
    group, a cleaned file's instant is later than the slice the view still shows as of the
    savepoint (or the group has no slice left), yet not later than the savepoint. A group
    replaced at or before the savepoint is not read as of it, whatever was cleaned of it."""
    t = instant.requested_time
    shown = {(p, s.file_id): s.base_instant_time for p, pieces in slices.items() for s in pieces}
    replaced = table.replaced_file_groups(table.timeline)
    for (partition, file_id), instants in _cleaned_groups(table).items():
        if replaced.get((partition, file_id), "~") <= t:
            continue  # replaced by then (clustering, overwrite): no slice of it is read as of t
        newest = max((i for i in instants if i <= t), default=None)
        if newest is not None and newest > shown.get((partition, file_id), ""):
            raise SavepointRefused(
                f"{table.uri}: cannot savepoint {t}: file group {file_id} in partition {partition or '(none)'} "
                f"lost its slice {newest} to a clean; the table can no longer be read as of {t}")


def _last_clean_retained(table: Table) -> str:
    """The earliest commit the last clean (completed, or pending: its plan) retained; "" when
    there is no clean or it names none."""
    last = table.timeline.cleans().last()
    if last is None:
        return ""
    if last.is_completed:
        return table.read(last, CleanMetadata, fields=("earliest_commit_to_retain",)).earliest_commit_to_retain or ""
    ectr = table.read(last, CleanerPlan, State.REQUESTED).earliest_instant_to_retain
    return "" if ectr is None else ectr.time


def savepoint_candidates(table: Table) -> list[Instant]:
    """The writes a savepoint may be asked for, newest first: completed commits, deltacommits
    and replacecommits of the active timeline, not savepointed yet, not older than the last
    clean's earliest retained commit (Hudi's rule, `_check_hudi_rule`). `create_savepoint`
    still makes its stricter checks (no slice of it cleaned, no pending clean deleting its
    files), which need the file-system view as of each write."""
    timeline = table.timeline
    retained = _last_clean_retained(table)
    taken = {i.requested_time for i in timeline.savepoints()}
    return sorted((i for i in timeline.completed() if i.action in SAVEPOINTABLE and i.requested_time not in taken
                   and i.requested_time >= retained), key=lambda i: i.requested_time, reverse=True)


def _check_hudi_rule(table: Table, instant: Instant) -> None:
    """SavepointActionExecutor: not older than the last clean's earliest commit to retain."""
    retained = _last_clean_retained(table)
    if retained and instant.requested_time < retained:
        raise SavepointRefused(
            f"{table.uri}: cannot savepoint {instant.requested_time}: it is older than the last clean's "
            f"earliest retained commit {retained}, so its files may be gone")


def _check_no_pending_clean_deletes(table: Table, instant: Instant, slices: dict[str, list[FileSlice]]) -> None:
    """Cleanline's own rule: refuse while a requested or inflight clean (an approved plan on
    the timeline) would delete a file this savepoint would hold; Hudi's executor does not look
    again, so the savepoint would lose it. Run or withdraw the clean first."""
    held = {(p, name) for p, pieces in slices.items() for piece in pieces for name in piece.file_names}
    for clean in table.timeline.cleans().pending():
        plan = table.read(clean, CleanerPlan, State.REQUESTED)
        doomed = sorted({(t.partition, t.path.rsplit("/", 1)[-1]) for t in plan_targets(table, plan)} & held)
        if doomed:
            partition, name = doomed[0]
            raise SavepointRefused(
                f"{table.uri}: cannot savepoint {instant.requested_time}: pending clean {clean.requested_time} would "
                f"delete {len(doomed)} of its files (e.g. {partition + '/' if partition else ''}{name}); run the "
                "clean first, or wait until it is done")


def create_savepoint(table: Table, requested_time: str, *, user: str | None = None,
                     comment: str = "") -> Instant:
    """Savepoint the completed write at `requested_time`: `<t>.savepoint.inflight`, then the
    completed savepoint holding the file names of the latest slices as of `t`."""
    table.reload()
    timeline = table.timeline
    instant = next((i for i in timeline.completed() if i.requested_time == requested_time
                    and i.action in SAVEPOINTABLE), None)
    if instant is None:
        raise SavepointRefused(f"{table.uri}: {requested_time} is not a completed commit, deltacommit or "
                               "replacecommit on the active timeline")
    if timeline.savepoints().find(requested_time) is not None:
        raise SavepointRefused(f"{table.uri}: {requested_time} is already savepointed")
    table.ensure_intact()
    _check_hudi_rule(table, instant)
    slices = _slices_as_of(table, requested_time)
    _check_not_cleaned(table, instant, slices)
    _check_no_pending_clean_deletes(table, instant, slices)
    content = SavepointMetadata(
        savepointed_by=user or getpass.getuser(), savepointed_at_ms=int(time.time() * 1000), comments=comment,
        files={partition: tuple(name for piece in pieces for name in piece.file_names)
               for partition, pieces in slices.items()},
        version=SAVEPOINT_METADATA_VERSION)
    # A savepoint has no requested state: it starts inflight, at the savepointed commit's time.
    savepoint = transition.start(table, Instant(requested_time, SAVEPOINT, State.REQUESTED))
    return transition.complete(table, savepoint, content.to_raw())


def delete_savepoint(table: Table, requested_time: str) -> None:
    """SavepointHelpers.deleteSavepoint: revert to inflight, then delete the inflight file."""
    table.reload()
    savepoint = table.timeline.savepoints().find(requested_time)
    if savepoint is None or not savepoint.is_completed:
        raise SavepointRefused(f"{table.uri}: there is no completed savepoint {requested_time}")
    files = table.timeline.files_of(savepoint)
    inflight = transition.start(table, savepoint)
    table.storage.delete(files[State.COMPLETED].path)
    table.storage.delete(transition.state_path(table, inflight))
    table.reload()


def list_savepoints(table: Table) -> list[SavepointInfo]:
    """Completed savepoints, oldest first, with the files and bytes they protect (files that
    no longer exist are counted apart) and whether they hold back archival now: the archival
    plan names them as a blocker (`timeline.archive.plan`, with the table's settings)."""
    timeline = table.timeline
    listing = table.list_partitions()
    sizes = {(p, s.name): s.size for p, statuses in listing.partitions.items() for s in statuses}
    blocking = _blocking_savepoints(table)
    result = []
    for savepoint in timeline.savepoints().completed():
        content = table.read(savepoint, SavepointMetadata)
        names = content.file_names()
        present = [sizes[key] for key in names if key in sizes]
        result.append(SavepointInfo(
            savepoint, content.savepointed_by, content.savepointed_at_ms,
            content.comments, len(names), sum(present), len(names) - len(present),
            holds_back_archival=savepoint.requested_time in blocking))
    return result


def _blocking_savepoints(table: Table) -> set[str]:
    """The savepoints Hudi's archiver stops at (or skips) now. Settings Hudi refuses stop any
    writer, and so any archival: no savepoint holds anything back then."""
    try:
        plan = plan_archival(table)
    except ArchivalConfigError:
        return set()
    return {b.instant.requested_time for b in plan.blockers if b.kind is BlockerKind.SAVEPOINT and b.instant}
