"""The Table services page and its API (issue 41): a table's pending compactions, log compactions
and clusterings with their plans, its compaction backlog per partition and file group, its
metadata table's compaction, and why nothing compacts, read from the lake now by the library
(`HudiTable.inspect.table_services`, `.why_not_compacting`) with the table's writers' options
(as the doctor's settings give them: `console.selectors.health.doctor_settings`); and the
figures the sync kept (`Table.services`, console/services/compaction.py) for the dashboard, the
metrics and the alert rules. No Hudi rule is decided here but one the library leaves to its
users: whether a heartbeat is alive (`HoodieHeartbeatClient.isHeartbeatExpired`, below)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Page
from django.utils import timezone

from console.lake import open_table
from console.models import Table
from console.models_health import Repair
from console.selectors.health import doctor_settings, open_repair, table_health
from console.selectors.paging import page_of
from timeline import CleanlineError, TableConfig
from timeline.cli_compaction import show_json, why_json
from timeline.instant import moment_of
from timeline.services import CompactionWhy, PendingService, TableServices

# The doctor's finding for a compaction or clustering left inflight by a job that died.
STUCK_KIND = "stuck-table-service"
# HoodieHeartbeatClient: hoodie.client.heartbeat.interval_in_ms (60 s) x
# hoodie.client.heartbeat.tolerable.misses (2), Hudi's defaults.
HEARTBEAT_INTERVAL = ("hoodie.client.heartbeat.interval_in_ms", "60000")
HEARTBEAT_MISSES = ("hoodie.client.heartbeat.tolerable.misses", "2")
GROUPS_PER_PAGE = 50
PARTITIONS_PER_PAGE = 50


def writer_options(table: Table) -> dict[str, str]:
    """The table's writers' options, as the doctor reads them (the table's settings page)."""
    return dict(doctor_settings(table).options)


def heartbeat_expiry_seconds(table: Table) -> float:
    """`HoodieHeartbeatClient.isHeartbeatExpired`: a heartbeat older than interval x tolerable
    misses is expired (the writers' options over hoodie.properties, Hudi's defaults else)."""
    props = {**(table.properties or {}), **writer_options(table)}
    try:
        interval = int(props.get(HEARTBEAT_INTERVAL[0], HEARTBEAT_INTERVAL[1]))
        misses = int(props.get(HEARTBEAT_MISSES[0], HEARTBEAT_MISSES[1]))
    except ValueError:
        interval, misses = int(HEARTBEAT_INTERVAL[1]), int(HEARTBEAT_MISSES[1])
    return interval * misses / 1000


@dataclass(frozen=True, slots=True)
class ServiceRow:
    """A pending table service as the page shows it: the library's value, whether its heartbeat
    is alive ("alive", "expired", or "none": no heartbeat file), its base and log files, and the
    doctor's stuck finding about it (its summary) with the open repair, if any."""

    service: PendingService
    heartbeat: str
    base_files: int
    log_files: int
    stuck: str
    repair: Repair | None


@dataclass(frozen=True, slots=True)
class ServicesPage:
    """Everything the Table services page shows, read now."""

    services: TableServices
    why: CompactionWhy
    rows: list[ServiceRow]
    metadata_rows: list[ServiceRow]
    partitions: Page[Any]
    groups: Page[Any]
    options: dict[str, str]
    read_at: datetime

    @property
    def merge_on_read(self) -> bool:
        return self.services.table_type == "MERGE_ON_READ"

    @property
    def groups_query(self) -> str:
        """The query the file groups' pager keeps (the partitions' page)."""
        return f"partitions_page={self.partitions.number}"


def _rows(table: Table, pending: tuple[PendingService, ...], stuck: dict[str, str],
          repair: Repair | None) -> list[ServiceRow]:
    expiry = heartbeat_expiry_seconds(table)
    rows = []
    for service in pending:
        age = service.heartbeat_age_seconds
        beat = "none" if age is None else "alive" if age <= expiry else "expired"
        time = service.instant.requested_time
        rows.append(ServiceRow(service, beat, sum(1 for s in service.slices if s.base_file),
                               sum(len(s.log_files) for s in service.slices), stuck.get(time, ""),
                               repair if time in stuck else None))
    return rows


def stuck_findings(table: Table) -> dict[str, str]:
    """instant time -> the summary of the doctor's stuck-table-service finding about it, from
    the table's last health check."""
    health = table_health(table)
    found = {}
    for finding in health.findings if health is not None else []:
        if finding.get("kind") == STUCK_KIND:
            instant = str((finding.get("evidence") or {}).get("instant") or "")
            if instant:
                found[instant] = str(finding.get("summary") or "")
    return found


def services_page(table: Table, *, page: str | None = None, partitions_page: str | None = None,
                  now: datetime | None = None) -> ServicesPage:
    """The table's services read now with its writers' options (both only read), the backlog's
    file groups and partitions a page each. CleanlineError when the library cannot read it."""
    lake = open_table(table.path)
    options = writer_options(table)
    moment = now or timezone.now()
    services = lake.inspect.table_services(options, now=moment)
    why = lake.inspect.why_not_compacting(options, now=moment)
    stuck = stuck_findings(table)
    repair = open_repair(table, STUCK_KIND) if stuck else None
    mdt = services.metadata_table
    return ServicesPage(services, why, _rows(table, services.pending, stuck, repair),
                        _rows(table, mdt.pending, {}, None) if mdt is not None else [],
                        page_of(list(services.backlog.partitions), partitions_page, PARTITIONS_PER_PAGE),
                        page_of(list(services.backlog.groups), page, GROUPS_PER_PAGE), options, moment)


def services_json(table: Table, *, now: datetime | None = None) -> dict[str, Any]:
    """The API's answer: the services exactly as `cleanline compaction show --json` prints them
    (with the table's writers' options), each pending one with whether its heartbeat is alive
    and the doctor's stuck finding about it."""
    lake = open_table(table.path)
    moment = now or timezone.now()
    services = lake.inspect.table_services(writer_options(table), now=moment)
    shown = show_json(services)
    stuck = stuck_findings(table)
    for entry, row in zip(shown["pending"], _rows(table, services.pending, stuck, None), strict=True):
        entry["heartbeat"] = row.heartbeat
        entry["stuck"] = row.stuck or None
    return {"table_id": table.pk, "read_at": moment, "services": shown}


def why_json_of(table: Table, *, now: datetime | None = None) -> dict[str, Any]:
    """The API's answer: why no compaction is scheduled, exactly as `cleanline compaction why
    --json` prints it with the table's writers' options."""
    lake = open_table(table.path)
    moment = now or timezone.now()
    answer = lake.inspect.why_not_compacting(writer_options(table), now=moment)
    return {"table_id": table.pk, "read_at": moment, "why": why_json(answer)}


# The figures the sync kept (Table.services) -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Backlog:
    """A merge-on-read table's compaction backlog as its last sync kept it."""

    delta_commits: int | None
    counted_from: str | None
    log_bytes: int | None
    log_files: int | None
    file_groups: int | None
    source: dict[str, Any]


def backlog_of(table: Table) -> Backlog | None:
    """The backlog the last sync kept; None for a copy-on-write table or before any sync kept one."""
    kept = table.services or {}
    if kept.get("table_type") != "MERGE_ON_READ":
        return None
    backlog = kept.get("backlog") or {}

    def number(value: Any) -> int | None:
        return None if value is None else int(value)

    return Backlog(number(kept.get("delta_commits")), kept.get("counted_from"), number(backlog.get("log_bytes")),
                   number(backlog.get("log_files")), number(backlog.get("file_groups")),
                   dict(backlog.get("source") or {}))


@dataclass(frozen=True, slots=True)
class Inflight:
    """A table service inflight at the last sync, and how long since it was requested."""

    instant: str
    action: str
    kind: str
    age_seconds: float


def inflight_services(table: Table, now: datetime | None = None) -> list[Inflight]:
    """The table's compactions, log compactions and clusterings inflight at its last sync, oldest
    first, each with its age (by its instant time, in the table's timeline zone)."""
    zone = TableConfig(table.properties or {}).timezone
    moment = now or timezone.now()
    found = []
    for entry in (table.services or {}).get("pending") or []:
        if entry.get("state") != "inflight":
            continue
        try:
            age = (moment - moment_of(str(entry.get("instant")), zone)).total_seconds()
        except CleanlineError:  # not an instant time
            continue
        found.append(Inflight(str(entry["instant"]), str(entry.get("action")), str(entry.get("kind")), age))
    return sorted(found, key=lambda i: (i.instant, i.kind))
