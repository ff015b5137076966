"""A table's pages: the overview (figures, the writers' lock, the metadata table, the table
lock), file groups, savepoints, restore and failed-write previews, what-if retention."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from console.lake import open_table
from console.models import RetentionEstimate, Table, TableLock
from timeline import CleanConfig, CleanlineError, FailedWrite, LiveWriterUnlocked
from timeline import Instant as LakeInstant
from timeline.storage import FolderIdentity


@dataclass(frozen=True, slots=True)
class Overview:
    clean_config: CleanConfig
    commits_per_day: list[tuple[str, int]]
    bytes_per_partition: list[tuple[str, int]]
    versions_histogram: list[tuple[int, int]]

    @property
    def charts(self) -> dict[str, dict[str, Any]]:
        """The overview's charts as console/charts.js draws them."""
        return {
            "commits": {"type": "bar", "format": "count",
                        "labels": [f"{d[:4]}-{d[4:6]}-{d[6:8]}" for d, _ in self.commits_per_day],
                        "datasets": [{"label": "commits", "data": [n for _, n in self.commits_per_day]}]},
            "partitions": {"type": "bar", "format": "bytes", "horizontal": True,
                           "labels": [p or "(none)" for p, _ in self.bytes_per_partition],
                           "datasets": [{"label": "bytes", "data": [b for _, b in self.bytes_per_partition]}]},
            "versions": {"type": "bar", "format": "count", "labels": [f"{v} version{'s' if v != 1 else ''}"
                                                                       for v, _ in self.versions_histogram],
                         "datasets": [{"label": "file groups", "data": [g for _, g in self.versions_histogram]}]},
        }


@dataclass(frozen=True, slots=True)
class WriterLock:
    """Which lock the table's Hudi writers use and where that came from (the table's settings,
    the root's CLEANLINE_HUDI_OPTIONS, hoodie.properties, a lock file found on storage, or
    none), the writes live now, and whether a change would be refused without the admin's word
    that the writers are stopped (no lock known, a writer live)."""

    provider: str
    source: str
    detail: str
    live: list[str]
    needs_override: bool
    error: str = ""


def writer_lock(table: Table) -> WriterLock:
    """The library's answer for the table's pages (`Inspect.lock`, `Inspect.live_writers`,
    `Maintenance.preflight`); an unreadable table's error is shown, not raised."""
    try:
        lake = open_table(table.path)
        try:  # one read of the timeline and the heartbeats: the preflight's own (a page of a
            # 100,000-instant table read it three times)
            decision = lake.maintenance(options=table.write_options).preflight()
            found, needs_override = decision.discovery, False
            writers = (lake.inspect.live_writers(table.write_options) if decision.locked
                       else list(decision.live_writers))
        except LiveWriterUnlocked as exc:
            found, needs_override, writers = exc.discovery, True, list(exc.writers)
    except CleanlineError as exc:
        return WriterLock("", "", "", [], False, str(exc))
    return WriterLock(found.provider_name, found.source.value, found.detail, [w.describe() for w in writers],
                      needs_override)


def metadata_table(table: Table, *, validate: bool = False) -> tuple[Any, Any, str]:
    """The table's metadata-table state, its validation against storage when asked, and an
    error reading it (a damaged metadata table is shown, not a 500)."""
    try:
        inspect = open_table(table.path).inspect
        state = inspect.metadata_table()
        result = inspect.validate_metadata_table() if validate and state.enabled else None
        return state, result, ""
    except CleanlineError as exc:
        return None, None, str(exc)


def overview(table: Table) -> Overview:
    """The overview's figures, all from the database (the sync computed the layout ones)."""
    days = Counter(t[:8] for t in table.instants.filter(action__in=("commit", "deltacommit", "replacecommit"),
                                                          state="COMPLETED").values_list("requested_time", flat=True))
    layout = table.layout_summary or {}
    return Overview(CleanConfig.from_properties(table.properties), sorted(days.items()),
                    [tuple(p) for p in layout.get("bytes_per_partition", [])],
                    [tuple(v) for v in layout.get("versions", [])])


@dataclass(frozen=True, slots=True)
class LockState:
    """Who holds a table's lock, since when and their last heartbeat; stale once it expired
    (the run stopped heartbeating: another run may take the table over, an admin may break it)."""

    holder: str
    token: str
    acquired_at: datetime
    heartbeat_at: datetime | None
    expires_at: datetime | None
    stale: bool


def table_lock_state(table: Table) -> LockState | None:
    lock = TableLock.objects.filter(table=table).first()
    if lock is None:
        return None
    stale = lock.expires_at is None or lock.expires_at <= timezone.now()
    return LockState(lock.holder, lock.token, lock.acquired_at, lock.heartbeat_at, lock.expires_at, stale)


@dataclass(frozen=True, slots=True)
class SliceRow:
    base_instant: str
    files: tuple[str, ...]
    size: int
    protected: str | None


def file_groups(table: Table, partition: str | None) -> tuple[list[str], str, list[dict[str, Any]]]:
    """Partitions, the chosen one, and its file groups with slices and what protects them."""
    inspect = open_table(table.path).inspect
    view = inspect.file_system_view()
    partitions = view.partitions
    chosen = partition if partition in partitions else (partitions[0] if partitions else "")
    protection = inspect.protection()
    groups = []
    for group in view.all_file_groups(chosen):
        slices = [SliceRow(s.base_instant_time, s.file_names, s.size, inspect.why_protected(group, s, protection))
                  for s in group.slices]
        groups.append({"file_id": group.file_id, "replaced_by": group.replaced_by, "slices": slices,
                       "pending_compaction": group.pending_compaction, "size": sum(s.size for s in slices)})
    return partitions, chosen, groups


def savepoints(table: Table) -> list[Any]:
    """The table's savepoints with what they protect (read from the lake)."""
    return open_table(table.path).inspect.savepoints()


def savepoints_page(table: Table) -> tuple[list[Any], list[LakeInstant]]:
    """The savepoints page from one opening of the table: its savepoints with what they protect,
    and the writes the form offers (newest first, at most 200: those the library does not refuse
    by Hudi's rule; its stricter checks answer when the form is sent)."""
    inspect = open_table(table.path).inspect
    return inspect.savepoints(), inspect.savepoint_candidates()[:200]


def restore_preview(table: Table, savepoint: str) -> Any:
    return open_table(table.path).inspect.restore_preview(savepoint)


def restore_files(preview: Any) -> list[tuple[str, str, str, int]]:
    """Every file a restore deletes, as (instant, partition, path, bytes), newest write first."""
    return [(r.instant.requested_time, partition, path, size) for r in preview.rollbacks
            for partition, path, size in r.files_to_delete]


def failed_write_previews(table: Table) -> list[FailedWrite]:
    return open_table(table.path).inspect.failed_writes(table.write_options)  # the writers' policy


@dataclass(frozen=True, slots=True)
class RollbackWays:
    """The ways forward the page offers for a failed write the library refused to roll back:
    the newer failed writes that may go first, and the newest savepoint before it to restore to
    (a restore rolls back every write after the savepoint). The refusal itself says Hudi's rule."""

    newer: tuple[str, ...]
    restore_to: str | None


def rollback_ways(table: Table, rows: list[FailedWrite], instant: str) -> RollbackWays:
    savepoints = open_table(table.path).timeline.savepoints().completed()
    before = [s.requested_time for s in savepoints if s.requested_time < instant]
    return RollbackWays(tuple(r.instant.requested_time for r in rows
                              if r.instant.requested_time > instant and r.preview is not None),
                        max(before) if before else None)


def instant_count(table: Table) -> int | None:
    """The table's instants on its active and archived timelines at the last sync (None before
    one): the bound of the commits and file versions a person may ask to retain."""
    return table.instants.count() if table.active_instants is not None else None


def retention_estimate(table: Table, estimate_id: int | None = None) -> RetentionEstimate | None:
    """A table's what-if retention estimate (its latest when no id is given)."""
    found = table.retention_estimates.select_related("requested_by")
    return found.filter(pk=estimate_id).first() if estimate_id is not None else found.first()


def retention_chart(estimate: RetentionEstimate) -> dict[str, Any]:
    """The estimate as the page's chart draws it (console/charts.js): a bar per setting with
    the bytes and files it frees, commits settings first, then hours."""
    rows = estimate.result or []
    return {"type": "bar", "format": "bytes",
            "labels": [f"{r['retained']} {r['unit'] if r['retained'] != 1 else r['unit'].rstrip('s')}" for r in rows],
            "datasets": [{"label": "bytes freed", "data": [r["bytes_to_delete"] for r in rows],
                          "colors": ["warn" if r["below_table_setting"] else "" for r in rows]}],
            "notes": [f"{r['files_to_delete']} files" + (", below the table's setting" if r["below_table_setting"]
                                                         else "") for r in rows]}


def replaced_folder(table: Table) -> FolderIdentity | None:
    """The identity of a refused table's folder as it is now, when the usual location check
    passes (no symbolic link on its path, inside CLEANLINE_ALLOWED_ROOTS) and only the folder is
    not the one registered (replaced: restored from a backup, a new inode); None otherwise (no
    refusal, a symbolic link, outside the roots, unreadable, an object store)."""
    if not table.location_error or not table.folder_identity:
        return None
    try:
        lake = open_table(table.path)
        try:
            found = lake.ensure_located(roots=settings.CLEANLINE_ALLOWED_ROOTS)
        finally:
            lake.storage.release()
    except CleanlineError:
        return None
    if found is None or f"{found.device}:{found.inode}" == table.folder_identity:
        return None
    return found
