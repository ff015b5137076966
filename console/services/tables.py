"""Registering, syncing and configuring tables: the database mirrors what the library reads."""

from __future__ import annotations

import gc
import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.signals import setting_changed
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from console.models import (
    WRITE_ACTIONS,
    Instant,
    SyncStatus,
    Table,
)
from console.models_health import TableHealth
from console.selectors.archival import archival_plan, plan_summary
from console.services.audit import audit
from console.services.queue import SYNC_TABLE, enqueue_on_commit
from timeline import CleanlineError, FileSystemView, HudiTable, Maintenance, OutsideTableError
from timeline import Instant as LakeInstant
from timeline.clean.whatif import reclaimable
from timeline.fsview import TableListing
from timeline.locks.discovery import configure_hudi_options
from timeline.storage import UnsupportedLocationError, configure_s3, parse_location, within_roots


@receiver(setting_changed)
def s3_roots_changed(*, setting: str, value: Any, **_: Any) -> None:
    """A changed CLEANLINE_S3_ROOTS (a test's settings override) reaches the library's
    per-root registry, as console/settings.py set it at start-up."""
    if setting == "CLEANLINE_S3_ROOTS":
        configure_s3(value or {})
    elif setting == "CLEANLINE_HUDI_OPTIONS":
        configure_hudi_options(value or {})


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
    settings (the library's registry). `enqueue=False`: no sync is queued, the caller syncs
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
        lake = HudiTable.open(_resolved_location(path))
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    if Table.objects.filter(path=lake.uri).exists():
        raise ValidationError(f"{lake.uri} is already registered.")
    table = Table.objects.create(path=lake.uri, registered_by=user, **_table_fields(lake))
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


def table_sync_queue(*, table: Table) -> None:
    """Queue a sync of `table` on commit; the row says QUEUED (with the task's id) until the
    task claims it."""
    enqueue_on_commit(SYNC_TABLE, table, sync_status=SyncStatus.QUEUED)


def table_sync_request(*, table: Table, user: User | None) -> None:
    """A sync someone asked for (the pages, the API): audited, then queued on commit."""
    audit(user=user, action="table.sync.requested", table=table)
    TableHealth.objects.filter(table=table).update(fingerprint="")  # a sync asked for runs the table doctor again
    table_sync_queue(table=table)


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


def summary(lake: HudiTable, instant: LakeInstant) -> dict[str, int]:
    """Partitions, files, records and bytes an instant's metadata reports."""
    found = lake.inspect.summary(instant)
    if found is None:
        return {}
    values = {"partitions": found.partitions, "files": found.files, "records": found.records, "bytes": found.bytes}
    return {k: v for k, v in values.items() if v is not None}


def _rows(lake: HudiTable, instants: Iterable[LakeInstant], archived: bool,
          known: Mapping[tuple[str, str], tuple[str, str, bool]]) -> Iterable[tuple[tuple[str, str], dict[str, Any]]]:
    for instant in instants:
        key = (instant.requested_time, instant.action)
        values = (instant.completion_time or "", instant.state.name, archived)
        if known.get(key) == values:
            continue
        yield key, {"completion_time": values[0], "state": values[1], "archived": archived,
                    **({} if archived else summary(lake, instant))}


def table_located(table: Table, lake: HudiTable) -> None:
    """Before every change (and every sync): the table's folder, resolved again, must still be
    where it was registered and under CLEANLINE_ALLOWED_ROOTS (a folder swapped for a symbolic
    link after registration is refused; `HudiTable.ensure_located`, which also pins the resolved
    folder for the change's containment checks). A refusal is marked on the table's page and
    audited (`table.location.refused`); a table found in place again is unmarked."""
    try:
        lake.ensure_located(roots=settings.CLEANLINE_ALLOWED_ROOTS)
    except OutsideTableError as exc:
        Table.objects.filter(pk=table.pk).update(location_error=str(exc)[:2000])
        table.location_error = str(exc)[:2000]
        audit(user=None, action="table.location.refused", table=table, parameters={"path": table.path},
              result=str(exc))
        raise
    if table.location_error:
        Table.objects.filter(pk=table.pk).update(location_error="")
        table.location_error = ""


def table_sync(*, table: Table) -> SyncResult:
    """Make the table's rows equal to the lake: an idempotent upsert keyed by (table,
    requested time, action), rows of instants no longer there removed. An unchanged table
    costs one timeline listing and no writes. A table whose folder moved is not synced."""
    lake = HudiTable.open(table.path)
    table_located(table, lake)
    print_ = fingerprint(lake)
    # unchanged since a sync that succeeded (queued or running now): it was intact then
    if print_ == table.timeline_fingerprint and table.sync_status != SyncStatus.FAILED:
        _refresh_failed_writes(table, lake)
        _refresh_archival(table, lake)
        return SyncResult(False, 0, 0, 0)
    lake.ensure_intact()  # a corrupt instant fails the sync, as it stops planning and mutations
    failed = failed_write_count(lake)
    known = {(r[0], r[1]): (r[2], r[3], r[4]) for r in table.instants.values_list(
        "requested_time", "action", "completion_time", "state", "archived")}
    archived = lake.inspect.archived_instants() if _has_archive(lake) else ()
    active_keys = {(i.requested_time, i.action) for i in lake.timeline}
    changes = dict(_rows(lake, (i for i in archived if (i.requested_time, i.action) not in active_keys), True, known))
    changes.update(_rows(lake, lake.timeline, False, known))
    present = active_keys | {(i.requested_time, i.action) for i in archived}
    listing = lake.list_partitions()
    sizes = [s.size for files in listing.partitions.values() for s in files]
    layout = _layout_summary(lake.file_system_view(listing=listing))
    layout["reclaimable"] = _reclaimable(lake, listing)
    archival = _archival(table, lake)
    stale = [key for key in known if key not in present]
    created = [key for key in changes if key not in known]
    with transaction.atomic():
        if stale:
            for time, action in stale:
                table.instants.filter(requested_time=time, action=action).delete()
        rows = [Instant(table=table, requested_time=t, action=a, **v) for (t, a), v in changes.items()]
        Instant.objects.bulk_create(
            rows, batch_size=2000, update_conflicts=True, unique_fields=["table", "requested_time", "action"],
            update_fields=["completion_time", "state", "archived", "partitions", "files", "records", "bytes"])
        Table.objects.filter(pk=table.pk).update(
            timeline_fingerprint=print_, sync_status=SyncStatus.OK, sync_error="", synced_at=timezone.now(),
            total_bytes=sum(sizes), total_files=len(sizes), layout_summary=layout, failed_writes=failed,
            archival=archival, **_table_fields(lake))
    table.refresh_from_db()
    return SyncResult(True, len(created), len(changes) - len(created), len(stale))


def failed_write_count(lake: HudiTable) -> int:
    """Failed writes under the table's failed-writes policy: the failed-writes page's list
    without the writes whose heartbeat is alive (their writer is still running them)."""
    return sum(1 for f in lake.inspect.failed_writes()
               if not f.live)


def _refresh_failed_writes(table: Table, lake: HudiTable) -> None:
    """An unchanged timeline can still hide a new failed write: a pending write's heartbeat
    expires without any instant file changing. Checked only while the table has a pending
    write (else none can be failed); written only when the count changed."""
    pending = table.instants.filter(action__in=WRITE_ACTIONS, archived=False).exclude(state="COMPLETED").exists()
    count = failed_write_count(lake) if pending else 0
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


def _layout_summary(view: FileSystemView) -> dict[str, Any]:
    """For the overview's charts, from the sync's listing: bytes of committed slices per
    partition (largest 30) and how many file groups have how many versions."""
    per_partition: Counter[str] = Counter()
    versions: Counter[int] = Counter()
    for group in view.all_file_groups():
        versions[len(group.slices)] += 1
        for piece in group.slices:
            per_partition[group.partition or "(none)"] += piece.size
    return {"bytes_per_partition": per_partition.most_common(30), "versions": sorted(versions.items())}


def _reclaimable(lake: HudiTable, listing: TableListing) -> dict[str, Any]:
    """What a clean with the table's own settings would free now (the library's planner over
    the sync's listing), for the dashboard; why not, when the planner refuses."""
    try:
        cost = reclaimable(lake, listing=listing)
    except CleanlineError as exc:
        return {"error": str(exc)[:500]}
    return {"files": cost.files_to_delete, "bytes": cost.bytes_to_delete, "policy": cost.policy.value,
            "retained": cost.retained, "unit": cost.unit, "why_nothing": cost.why_nothing}


def _has_archive(lake: HudiTable) -> bool:
    return lake.storage.exists(lake.path(lake.config.archive_folder))


def table_sync_failed(*, table: Table, error: str) -> None:
    Table.objects.filter(pk=table.pk).update(sync_status=SyncStatus.FAILED, sync_error=error[:2000])


def table_settings_update(*, table: Table, user: User | None, auto_clean: bool, auto_max_files: int,
                          auto_max_bytes: int, write_options: Mapping[str, str] | None = None) -> Table:
    """Automatic mode's thresholds and the table's Hudi writer options (its concurrency mode
    and lock, which every change then takes). The options are checked by the library first:
    a lock Cleanline cannot take is refused here, by name."""
    options = dict(write_options or {})
    try:
        HudiTable.open(table.path).maintenance(options=options).transactions.check()
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    Table.objects.filter(pk=table.pk).update(auto_clean=auto_clean, auto_max_files=auto_max_files,
                                             auto_max_bytes=auto_max_bytes, write_options=options)
    audit(user=user, action="table.settings.changed", table=table,
          parameters={"auto_clean": auto_clean, "auto_max_files": auto_max_files, "auto_max_bytes": auto_max_bytes,
                      "write_options": options})
    table.refresh_from_db()
    _refresh_archival(table, HudiTable.open(table.path))  # the options hold archival's keep counts
    return table


def table_services(table: Table, lake: HudiTable | None = None, *, spark: Any = None,
                   writers_stopped: bool = False) -> Maintenance:
    """The library's services for a registered table, with its Hudi writer options (so every
    change takes the lock the table's writers share: found from them, the root's
    CLEANLINE_HUDI_OPTIONS, hoodie.properties and storage), once its location is checked again
    (`table_located`): every change reaches the table through here. With no lock known and a
    writer live every change is refused (LiveWriterUnlocked) unless `writers_stopped`, an
    admin's recorded word that the table's writers are stopped."""
    lake = lake or HudiTable.open(table.path)
    table_located(table, lake)
    return lake.maintenance(spark=spark, options=table.write_options, writers_stopped=writers_stopped)
