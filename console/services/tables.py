"""Registering, syncing and configuring tables: the database mirrors what the library reads."""

from __future__ import annotations

import gc
import hashlib
import logging
import zlib
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console.lake import open_table
from console.models import (
    WRITE_ACTIONS,
    Instant,
    SyncMark,
    SyncStatus,
    Table,
)
from console.models_health import TableHealth
from console.selectors.archival import archival_plan, plan_summary
from console.selectors.tables import replaced_folder
from console.services.audit import audit
from console.services.compaction import services_refresh
from console.services.figures import BACKLOG, plan_figure, table_figures
from console.services.history import snapshot_record
from console.services.queue import SYNC_TABLE, enqueue_on_commit
from console.services.write_stats import Unindexed, WriteStatsIndexer, write_stats_index_forget
from timeline import CleanlineError, HudiTable, Maintenance, OutsideTableError, Timeline
from timeline import Instant as LakeInstant
from timeline.changes import TimelineChanges
from timeline.storage import FolderIdentity, UnsupportedLocationError, parse_location, within_roots

logger = logging.getLogger(__name__)


def is_allowed(path: str) -> bool:
    """Whether `path` lies under one of CLEANLINE_ALLOWED_ROOTS: parsed and matched on whole
    resolved segments (symbolic links followed) before any storage object exists or any
    request is sent. Raises UnsupportedLocationError for a scheme the library does not open."""
    return within_roots(path, settings.CLEANLINE_ALLOWED_ROOTS)


def _resolved_location(path: str) -> str:
    """The path to open: local paths resolved (a symbolic link is registered as its target,
    so that swapping the link later cannot point the table elsewhere); URIs as given."""
    scheme, resolved = parse_location(path)
    return resolved if scheme == "file" else path


def table_register(*, path: str, user: User | None, enqueue: bool = True) -> Table:
    """Register the table at `path` and queue its first sync (on commit). Refused, with nothing
    written and no request sent to a store, when the path is outside the allowed roots or has an
    unknown scheme; refused with nothing written when it is already registered, not a Hudi
    table, or unreadable. An `s3://` table is opened with its root's CLEANLINE_S3_ROOTS
    settings (`console.lake.open_table`). `enqueue=False`: no sync is queued, the caller syncs
    the table itself at once (`table_sync`: `manage.py bootstrap`, the demo lake, tests)."""
    path = path.strip()
    if not path:
        raise ValidationError("Give the table's base path.")
    try:
        allowed = is_allowed(path)
    except UnsupportedLocationError as exc:
        raise ValidationError(str(exc)) from exc
    if not allowed:
        roots = ", ".join(settings.CLEANLINE_ALLOWED_ROOTS)
        raise ValidationError(f"{path} is outside the allowed roots ({roots}); see CLEANLINE_ALLOWED_ROOTS.")
    try:
        lake = open_table(_resolved_location(path))
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    if Table.objects.filter(path=lake.uri).exists():
        raise ValidationError(f"{lake.uri} is already registered.")
    try:  # the folder's device and inode, that every run holds the folder it opens against
        identity = lake.ensure_located(roots=settings.CLEANLINE_ALLOWED_ROOTS)
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    finally:
        lake.storage.release()
    table = Table.objects.create(path=lake.uri, registered_by=user, folder_identity=_identity_text(identity),
                                 **_table_fields(lake))
    audit(user=user, action="table.registered", table=table, parameters={"path": lake.uri})
    if enqueue:
        table_sync_queue(table=table)
    return table


def tables_register(*, paths: list[str], user: User | None) -> tuple[list[Table], list[str]]:
    """Register several tables at once (the Discover tables page): each as `table_register`
    does (its first sync queued on commit, a worker runs it), each refusal audited
    (`table.register.refused`) and returned with its path; the others are registered."""
    registered, refusals = [], []
    for path in dict.fromkeys(p.strip() for p in paths if p.strip()):
        try:
            registered.append(table_register(path=path, user=user))
        except ValidationError as exc:
            reason = "; ".join(exc.messages)
            audit(user=user, action="table.register.refused", parameters={"path": path}, result=reason)
            refusals.append(f"{path}: {reason}")
    return registered, refusals


def table_sync_queue(*, table: Table, full: bool = False) -> None:
    """Queue a sync of `table` on commit; the row says QUEUED (with the task's id) until the
    task claims it. `full`: that sync (or the next, if one runs first) reads the whole timeline
    and lists the table (`Table.sync_full`)."""
    if full:
        Table.objects.filter(pk=table.pk).update(sync_full=True)
    enqueue_on_commit(SYNC_TABLE, table, sync_status=SyncStatus.QUEUED)


def table_sync_after_change(*, table: Table, files: bool) -> None:
    """Cleanline changed the table (a clean, restore or rollback: `files`; a savepoint or an
    archival): the service that completed the run brings its rows and figures up to date now, so
    that the pages show the change at once, not after the next sync, and keeps a history point of
    them; a table without a metadata table to list it through is listed in full when its files
    changed. A sync that fails is
    recorded on the table (FAILED, with the reason) and not raised: the run itself completed."""
    try:
        table_sync(table=table, full=files and not table.metadata_table_enabled)
    except Exception as exc:
        logger.exception("sync of table %s after a change failed", table.pk)
        table_sync_failed(table=table, error=str(exc) if isinstance(exc, CleanlineError)
                          else f"{type(exc).__name__}: {exc}")
        return
    try:  # the change's history point at once (issue 43), not at the next sync
        snapshot_record(table=table, changed=True)
    except Exception:  # a missing point on a chart must not fail the run
        logger.exception("history snapshot of table %s after a change failed", table.pk)


def table_sync_request(*, table: Table, user: User | None, full: bool = False) -> None:
    """A sync someone asked for (the pages, the API): audited, then queued on commit. `full`:
    a full re-sync (the whole timeline read again, the table listed from storage when it has no
    metadata table)."""
    audit(user=user, action="table.sync.requested", table=table, parameters={"full": True} if full else None)
    TableHealth.objects.filter(table=table).update(fingerprint="")  # a sync asked for runs the table doctor again
    table_sync_queue(table=table, full=full)


def tables_sync_request(*, tables: list[Table], user: User | None) -> int:
    """A sync of each of `tables` (the catalog's bulk action, one confirmation): each audited and
    queued as `table_sync_request` does. Returns how many were queued."""
    for table in tables:
        table_sync_request(table=table, user=user)
    return len(tables)


def _table_fields(lake: HudiTable) -> dict[str, Any]:
    config = lake.config
    return {
        "name": config.name, "table_type": config.table_type.value, "table_version": config.version,
        "layout_version": config.layout_version, "partition_fields": list(config.partition_fields),
        "properties": dict(config.props), "metadata_table_enabled": config.metadata_table_enabled,
    }


@dataclass(frozen=True, slots=True)
class SyncResult:
    changed: bool
    created: int
    updated: int
    deleted: int


def fingerprint(lake: HudiTable) -> str:
    """A hash of the active timeline's listing (names, sizes, modification times) and of the
    table config: equal fingerprints mean nothing to sync."""
    digest = hashlib.sha256()
    for (requested, action), states in sorted(lake.timeline.state_files.items()):
        for state, status in sorted(states.items()):
            digest.update(f"{requested}|{action}|{state}|{status.size}|{status.mtime_ms}\n".encode())
    digest.update(repr(sorted(lake.config.props.items())).encode())
    return digest.hexdigest()


def sync_fingerprint(table: Table) -> str:
    """The last sync's hash of the table's timeline (its state-file names) and config: equal
    while neither changed. Read from the row, nothing from the lake."""
    return hashlib.sha256(f"{table.timeline_fingerprint}|{sorted((table.properties or {}).items())!r}"
                          .encode()).hexdigest()


def summary(lake: HudiTable, instant: LakeInstant, timeline: Timeline | None = None,
            table: Table | None = None) -> dict[str, int]:
    """Partitions, files, records and bytes an instant's metadata reports (its state files
    found on `timeline`, default the table's); with `table`, a completed commit file too large
    to show whole has its write stats indexed in the same read (`services/write_stats.py`)."""
    found = lake.inspect.summary(instant, timeline, sink=None if table is None else WriteStatsIndexer(table, instant))
    if found is None:
        return {}
    values = {"partitions": found.partitions, "files": found.files, "records": found.records, "bytes": found.bytes}
    return {k: v for k, v in values.items() if v is not None}


def _rows(lake: HudiTable, instants: Iterable[LakeInstant], archived: bool,
          known: Mapping[tuple[str, str], tuple[str, str, bool]], timeline: Timeline | None = None,
          table: Table | None = None) -> Iterable[tuple[tuple[str, str], dict[str, Any]]]:
    unindexed = Unindexed(table) if table is not None and not archived else None
    for instant in instants:
        key = (instant.requested_time, instant.action)
        values = (instant.completion_time or "", instant.state.name, archived)
        if known.get(key) == values and (unindexed is None or not unindexed(instant, timeline)):
            continue
        yield key, {"completion_time": values[0], "state": values[1], "archived": archived,
                    **({} if archived else summary(lake, instant, timeline, table))}


def table_located(table: Table, lake: HudiTable) -> None:
    """Before every change (and every sync): the table's folder, resolved again, must still be
    where it was registered, the folder registered (its device and inode, `folder_identity`), and
    under CLEANLINE_ALLOWED_ROOTS (a folder swapped for a symbolic link after registration is
    refused; `HudiTable.ensure_located`, which also pins the resolved folder for the change's
    containment checks and holds the folder open: every change of the run goes through it, and a
    swap during the run stops it with TableMovedError, which fails the run with its reason). A
    refusal is marked on the table's page and audited (`table.location.refused`); a table found in
    place again is unmarked."""
    registered = _identity_of(table.folder_identity)
    try:
        found = lake.ensure_located(roots=settings.CLEANLINE_ALLOWED_ROOTS, identity=registered)
    except OutsideTableError as exc:
        Table.objects.filter(pk=table.pk).update(location_error=str(exc)[:2000])
        table.location_error = str(exc)[:2000]
        audit(user=None, action="table.location.refused", table=table, parameters={"path": table.path},
              result=str(exc))
        raise
    if registered is None and found is not None:  # registered before identities were kept: this one from now on
        table.folder_identity = _identity_text(found)
        Table.objects.filter(pk=table.pk, folder_identity="").update(folder_identity=table.folder_identity)
    if table.location_error:
        Table.objects.filter(pk=table.pk).update(location_error="")
        table.location_error = ""


def table_location_rerecord(*, table: Table, user: User | None) -> Table:
    """Record the table's folder again after it was replaced (restored from a backup: a new
    inode, so every run was refused): only when the usual location check passes now (no
    symbolic link on its path, inside CLEANLINE_ALLOWED_ROOTS; `selectors.replaced_folder`) and
    only the folder's identity differs from the one registered; a table refused for a symbolic
    link or a path outside the roots stays refused. Audited (`table.location.rerecorded`)."""
    found = replaced_folder(table)
    if found is None:
        raise ValidationError("Nothing to record again: only a folder that passes the location check (no symbolic "
                              "link on its path, inside the allowed roots) but is not the folder registered is "
                              "recorded again.")
    before, after = table.folder_identity, _identity_text(found)
    Table.objects.filter(pk=table.pk).update(folder_identity=after, location_error="")
    table.folder_identity, table.location_error = after, ""
    audit(user=user, action="table.location.rerecorded", table=table,
          parameters={"path": table.path, "before": before, "after": after})
    return table


def _identity_text(identity: FolderIdentity | None) -> str:
    return "" if identity is None else f"{identity.device}:{identity.inode}"


def _identity_of(text: str) -> FolderIdentity | None:
    device, _, inode = text.partition(":")
    return FolderIdentity(int(device), int(inode)) if inode else None


def table_sync(*, table: Table, full: bool = False) -> SyncResult:
    """Make the table's rows equal to the lake: an idempotent upsert keyed by (table,
    requested time, action), rows of instants no longer there removed. A table whose folder
    moved is not synced.

    Incremental (issue 29): only the instants whose state files came or went since the last
    sync are read (`Inspect.timeline_changes` against the names the last sync kept, `SyncMark`),
    the archived timeline only when its folder changed, and the figures (`services/figures.py`)
    come from the metadata table, or stay as the last full listing left them with the
    reclaimable figure from the last plan. `full` (or `Table.sync_full`, or no sync before)
    reads the whole timeline and lists the table. An unchanged table costs one unsized listing
    of the timeline folder and writes nothing."""
    lake = open_table(table.path)
    table_located(table, lake)
    mark = SyncMark.objects.filter(table=table).first()
    full = full or table.sync_full or mark is None or table.sync_status == SyncStatus.FAILED
    config_digest = hashlib.sha256(repr(sorted(lake.config.props.items())).encode()).hexdigest()
    archive_print = lake.inspect.archive_fingerprint()
    changes = lake.inspect.timeline_changes(None if full or mark is None else _names(table, mark),
                                            lambda times: {t for t, _ in _known(table, times=times)},
                                            None if mark is None else mark.watched)
    if (mark is not None and not changes.changed and mark.config_digest == config_digest
            and mark.archive_fingerprint == archive_print):
        table.refresh_from_db()  # as another sync (the one after a run) left it
        _refresh_failed_writes(table, lake)
        _refresh_archival(table, lake)
        if not table.services:  # synced before they were kept: the timeline's figures now, the backlog later
            services_refresh(table=table, lake=lake, backlog=None)
        return SyncResult(False, 0, 0, 0)
    archive_moved = full or mark is None or mark.archive_fingerprint != archive_print
    archived = lake.inspect.archived_instants() if archive_moved and archive_print else None
    if full:
        known = _known(table)
    else:
        known = _known(table, times=changes.times) if archived is None else _known(table)
    upserts, stale = _instant_changes(lake, changes, archived, known, table)
    relist = _relist_due(mark, changes, full)
    figures = table_figures(table, lake, full=full or relist) if full or changes.changed else None
    # the compaction backlog of this sync's listing, else the one the last listing left
    backlog = figures.pop(BACKLOG) if figures is not None else (table.services or {}).get("backlog")
    layout = plan_figure(table, figures["layout_summary"] if figures else dict(table.layout_summary or {}))
    archival = _archival(table, lake) if full or _archival_due(table, mark, changes, archive_moved) else None
    created = [key for key in upserts if key not in known]
    with transaction.atomic():
        for time, action in stale:
            table.instants.filter(requested_time=time, action=action).delete()
        write_stats_index_forget(table=table, instants=[*stale, *(k for k, v in upserts.items() if v["archived"])])
        rows = [Instant(table=table, requested_time=t, action=a, **v) for (t, a), v in upserts.items()]
        Instant.objects.bulk_create(
            rows, batch_size=2000, update_conflicts=True, unique_fields=["table", "requested_time", "action"],
            update_fields=["completion_time", "state", "archived", "partitions", "files", "records", "bytes"])
        planned = archival is not None
        if archival is None:  # kept, but for the count of instants on the active timeline
            archival = dict(table.archival or {}) | {"active": _active(table, upserts, stale, known)}
        Table.objects.filter(pk=table.pk).update(
            timeline_fingerprint=changes.digest("" if changes.full else table.timeline_fingerprint),
            sync_status=SyncStatus.OK, sync_error="", synced_at=timezone.now(),
            archival=archival, sync_full=False, **((figures or {}) | {"layout_summary": layout}),
            **_table_fields(lake))
        _mark(table, mark, changes, config_digest=config_digest, archive_fingerprint=archive_print,
              **({"archival_at": timezone.now()} if archival is not None and planned else {}),
              **({"writing": _writing(lake, mark, relist)} if mark is None or relist else {}))
    table.refresh_from_db()
    services_refresh(table=table, lake=lake, backlog=backlog)
    _SEEN[table.pk] = (table.timeline_fingerprint, changes.names)
    _SEEN.move_to_end(table.pk)
    while len(_SEEN) > _SEEN_TABLES:
        _SEEN.popitem(last=False)
    if full:
        table.failed_writes = -1  # counted again below
    _refresh_failed_writes(table, lake)
    return SyncResult(True, len(created), len(upserts) - len(created), len(stale))


# The names each of the last few tables synced in this process had, by the digest the sync left
# on the table: a worker syncing a large table again skips decoding them from its mark.
_SEEN: OrderedDict[int, tuple[str, frozenset[str]]] = OrderedDict()
_SEEN_TABLES = 8


# A table first listed while a write was still being written (registered while a build or an
# ingestion job wrote it): that listing missed what the write went on to write, and a later
# incremental sync keeps the listing's figures (total files, bytes, reclaimable) where no
# metadata table gives them. So a sync whose own change check finds one of those writes moved
# (completed, or rolled back) lists the table again, and so on until a listing finds no write
# pending; at most RELISTS times, so that a table some writer is always writing is not listed at
# every sync for ever. A write that died stays pending without moving: it starts no listing.
RELISTS = 20


def _relist_due(mark: SyncMark | None, changes: TimelineChanges, full: bool) -> bool:
    writing = mark.writing if mark is not None else {}
    pending = writing.get("pending") or []
    return bool(not full and changes.changed and int(writing.get("relisted") or 0) < RELISTS
                and any(t in changes.times for t in pending))


def _writing(lake: HudiTable, mark: SyncMark | None, relist: bool) -> dict[str, Any]:
    """The writes pending at this listing (the first, or one `_relist_due` asked for), and how
    many listings the table has had since the first for want of them."""
    relisted = int((mark.writing if mark is not None else {}).get("relisted") or 0) + 1 if relist else 0
    return {"pending": sorted(i.requested_time for i in lake.timeline.writes().pending()), "relisted": relisted}


def _names(table: Table, mark: SyncMark) -> Collection[str]:
    """The timeline folder's names at the last sync: a list as the mark decodes (no set of
    300,000 names built only to be compared once: `timeline_changes` compares a list as it is)."""
    seen = _SEEN.get(table.pk)
    if seen is not None and seen[0] == table.timeline_fingerprint:
        return seen[1]
    text = zlib.decompress(bytes(mark.names)).decode() if mark.names else ""
    base = text.split("\n") if text else []
    if mark.removed:
        gone = frozenset(mark.removed)
        base = [n for n in base if n not in gone]
    return base + mark.added if mark.added else base


def _mark(table: Table, mark: SyncMark | None, changes: TimelineChanges, **fields: Any) -> None:
    """Keep what this sync saw: the names as a delta over the last written ones while the delta
    is small (a sync of 100 new instants writes 300 names, not the table's), else all of them;
    the newest state files' sizes and times."""
    fields["watched"] = {name: list(status) for name, status in changes.watched.items()}
    if mark is not None and not changes.full:
        added = (set(mark.added) - changes.removed) | changes.added
        removed = (set(mark.removed) - changes.added) | changes.removed
        if len(added) + len(removed) <= max(1000, len(changes.names) // 20):
            SyncMark.objects.filter(pk=mark.pk).update(added=sorted(added), removed=sorted(removed), **fields)
            return
    SyncMark.objects.update_or_create(table=table, defaults={
        "names": zlib.compress("\n".join(changes.names).encode(), 1), "added": [], "removed": [], **fields})


Known = dict[tuple[str, str], tuple[str, str, bool]]


def _known(table: Table, times: Iterable[str] | None = None) -> Known:
    """The table's rows, (requested time, action) -> (completion time, state, archived): all of
    them, or those of `times` only."""
    rows = table.instants.values_list("requested_time", "action", "completion_time", "state", "archived")
    if times is None:
        return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}
    wanted, found = sorted(times), {}
    for at in range(0, len(wanted), 500):
        found.update({(r[0], r[1]): (r[2], r[3], r[4]) for r in rows.filter(requested_time__in=wanted[at:at + 500])})
    return found


def _instant_changes(lake: HudiTable, changes: TimelineChanges, archived: Timeline | None, known: Known,
                     table: Table | None = None) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[str, str]]]:
    """The rows to write and the rows to remove. `known` holds every row when the whole
    timeline or the archived one was read, else the rows of the changed instant times; a row
    at an unchanged time stays active (its state files are as they were)."""
    active = {(i.requested_time, i.action) for i in changes.timeline}
    if changes.full:
        present = set(active)
    else:  # the rows of unchanged times are still on the active timeline
        present = {k for k, v in known.items() if k[0] not in changes.times and not v[2]} | active
    upserts: dict[tuple[str, str], dict[str, Any]] = {}
    if archived is not None:
        upserts.update(_rows(lake, (i for i in archived if (i.requested_time, i.action) not in present), True, known))
        present |= {(i.requested_time, i.action) for i in archived}
    else:  # the archived timeline is as it was: its rows stay
        present |= {k for k, v in known.items() if v[2]}
    upserts.update(_rows(lake, changes.timeline, False, known, changes.timeline, table))
    return upserts, [key for key in known if key not in present]


def _active(table: Table, upserts: Mapping[tuple[str, str], Mapping[str, Any]], stale: Iterable[tuple[str, str]],
            known: Known) -> int:
    """Instants on the active timeline after this sync's changes: the last count, moved by the
    rows that came to it or left it (every row it changes is in `known`); counted when no count
    was kept."""
    before = (table.archival or {}).get("active")
    if before is None:
        return int(table.instants.filter(archived=False).count())
    came = sum(1 for k, v in upserts.items() if not v["archived"] and (k not in known or known[k][2]))
    left = sum(1 for k, v in upserts.items() if v["archived"] and k in known and not known[k][2])
    return int(before) + came - left - sum(1 for k in stale if not known[k][2])


def _archival_due(table: Table, mark: SyncMark | None, changes: TimelineChanges, archive_moved: bool) -> bool:
    """Whether a changed sync plans archival again (a walk over the whole active timeline): when
    instants left the active timeline or archival ran, when a savepoint, clean, rollback or
    restore changed (they hold archival back or move its window), or once the summary is
    CLEANLINE_ARCHIVAL_SUMMARY_SECONDS old; otherwise only its count of active instants is
    brought up to date."""
    if archive_moved or not table.archival or mark is None or mark.archival_at is None or changes.removed:
        return True
    if any(i.action in _ARCHIVAL_ACTIONS or not i.is_completed for i in changes.timeline):
        return True
    return (timezone.now() - mark.archival_at).total_seconds() >= settings.CLEANLINE_ARCHIVAL_SUMMARY_SECONDS


_ARCHIVAL_ACTIONS = frozenset({"savepoint", "clean", "rollback", "restore"})


def failed_write_count(lake: HudiTable, options: dict[str, str] | None = None) -> int:
    """Failed writes under the writers' failed-writes policy (`options`, the table's writer
    options): the failed-writes page's list without the writes whose heartbeat is alive (their
    writer is still running them)."""
    return sum(1 for f in lake.inspect.failed_writes(options)
               if not f.live)


def _refresh_failed_writes(table: Table, lake: HudiTable) -> None:
    """An unchanged timeline can still hide a new failed write: a pending write's heartbeat
    expires without any instant file changing. Checked only while the table has a pending
    write (else none can be failed); written only when the count changed."""
    pending = table.instants.filter(action__in=WRITE_ACTIONS, archived=False).exclude(state="COMPLETED").exists()
    count = failed_write_count(lake, table.write_options) if pending else 0
    if count != table.failed_writes:
        Table.objects.filter(pk=table.pk).update(failed_writes=count)
        table.failed_writes = count


def _archival(table: Table, lake: HudiTable) -> dict[str, Any]:
    """What archival would do now (the library's plan with the table's writer options), kept
    for the overview, the metrics and the alert: instants on the active timeline, how many it
    moves, each blocker; the options it was planned with; why not, when the library refuses."""
    options = dict(table.write_options or {})
    try:
        with _collections_paused():
            return plan_summary(archival_plan(table, lake)) | {"options": options}
    except CleanlineError as exc:
        return {"active": len(lake.timeline), "archivable": 0, "blockers": [], "error": str(exc)[:500],
                "options": options}


@contextmanager
def _collections_paused() -> Iterator[None]:
    """The garbage collector paused while the archiver's rules run over a timeline the sync
    holds already: they allocate many short-lived tuples beside the timeline's instants and
    state files, and every full collection walks all of those (on a 100,000-instant table a
    collection-free plan took a third of the time). Anything cyclic it leaves is collected once
    the collector runs again."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _refresh_archival(table: Table, lake: HudiTable) -> None:
    """An unchanged timeline keeps its archival summary, unless the table's writer options
    changed since it was made (they hold the keep counts) or none was made yet."""
    if (table.archival or {}).get("options") != dict(table.write_options or {}):
        table.archival = _archival(table, lake)
        Table.objects.filter(pk=table.pk).update(archival=table.archival)
        SyncMark.objects.filter(table=table).update(archival_at=timezone.now())


def table_sync_failed(*, table: Table, error: str) -> None:
    Table.objects.filter(pk=table.pk).update(sync_status=SyncStatus.FAILED, sync_error=error[:2000])


def table_settings_update(*, table: Table, user: User | None, auto_clean: bool, auto_max_files: int,
                          auto_max_bytes: int, write_options: Mapping[str, str] | None = None) -> Table:
    """Automatic mode's thresholds and the table's Hudi writer options (its concurrency mode
    and lock, which every change then takes). The options are checked by the library first:
    a lock Cleanline cannot take is refused here, by name."""
    options = dict(write_options or {})
    try:
        open_table(table.path).maintenance(options=options).transactions.check()
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    Table.objects.filter(pk=table.pk).update(auto_clean=auto_clean, auto_max_files=auto_max_files,
                                             auto_max_bytes=auto_max_bytes, write_options=options)
    audit(user=user, action="table.settings.changed", table=table,
          parameters={"auto_clean": auto_clean, "auto_max_files": auto_max_files, "auto_max_bytes": auto_max_bytes,
                      "write_options": options})
    table.refresh_from_db()
    _refresh_archival(table, open_table(table.path))  # the options hold archival's keep counts
    return table


def table_services(table: Table, lake: HudiTable | None = None, *, spark: Any = None,
                   writers_stopped: bool = False) -> Maintenance:
    """The library's services for a registered table, with its Hudi writer options (so every
    change takes the lock the table's writers share: found from them, the root's
    CLEANLINE_HUDI_OPTIONS, hoodie.properties and storage), once its location is checked again
    (`table_located`): every change reaches the table through here. With no lock known and a
    writer live every change is refused (LiveWriterUnlocked) unless `writers_stopped`, an
    admin's recorded word that the table's writers are stopped."""
    lake = lake or open_table(table.path)
    table_located(table, lake)
    return lake.maintenance(spark=spark, options=table.write_options, writers_stopped=writers_stopped)
