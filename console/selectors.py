"""Reads for the pages: database rows for lists, the library for what only the lake knows
(instant contents, file groups). No Hudi rule is decided here."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import Count, Max, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from console.models import AuditEvent, CleanPlan, Instant, Table, TableLock
from timeline import (
    CleanConfig,
    CleanerPlan,
    CleanlineError,
    CleanMetadata,
    CommitMetadata,
    FailedWrite,
    HudiTable,
    Record,
    RollbackMetadata,
    SavepointMetadata,
    State,
    WriteStat,
)
from timeline import Instant as LakeInstant

PAGE_SIZE = 50


def catalog() -> QuerySet[Table]:
    """Every table with its instant counts, last clean and savepoints."""
    return Table.objects.annotate(
        instant_count=Count("instants"),
        pending_count=Count("instants", filter=~Q(instants__state="COMPLETED")),
        savepoint_count=Count("instants", filter=Q(instants__action="savepoint", instants__state="COMPLETED")),
        last_clean=Max("instants__requested_time", filter=Q(instants__action="clean", instants__state="COMPLETED")),
    ).order_by("name")


@dataclass(frozen=True, slots=True)
class TimelineFilters:
    action: str = ""
    state: str = ""
    since: str = ""
    until: str = ""
    search: str = ""


def page_of(rows: Any, page: int | str | None, per_page: int = PAGE_SIZE, *,
            paginator: Paginator | None = None) -> Page:
    """Page `page` (1 when not given) of `rows`; a page that is not a number or lies past the
    end answers 404 rather than silently showing another page."""
    paginator = paginator or Paginator(rows, per_page)
    try:
        return paginator.page(page or 1)
    except (EmptyPage, PageNotAnInteger):
        if str(page) == "1":
            return paginator.page(1)  # an empty list has one (empty) page
        raise Http404(f"There is no page {page} (pages 1 to {paginator.num_pages}).") from None


def timeline_page(table: Table, filters: TimelineFilters, page: int | str | None) -> Page:
    """One page of a table's instants, newest first, filtered."""
    return page_of(timeline_rows(table, filters), page)


def timeline_rows(table: Table, filters: TimelineFilters) -> QuerySet[Instant]:
    """A table's instants, newest first, filtered (the timeline page's and the API's)."""
    rows = table.instants.all()
    if filters.action:
        rows = rows.filter(action=filters.action)
    if filters.state:
        rows = rows.filter(state=filters.state)
    if filters.since:
        rows = rows.filter(requested_time__gte=filters.since)
    if filters.until:
        rows = rows.filter(requested_time__lte=filters.until.ljust(17, "9"))
    if filters.search:
        rows = rows.filter(requested_time__startswith=filters.search)
    return rows.order_by("-requested_time", "action")


def actions_of(table: Table) -> list[str]:
    return sorted(table.instants.order_by().values_list("action", flat=True).distinct())


@dataclass(frozen=True, slots=True)
class StateContent:
    state: str
    file: str
    content: dict[str, Any] | None
    error: str = ""
    record: Record | None = None

    @property
    def raw(self) -> str:
        return json.dumps(self.content, indent=2, default=_json_default)

    def json_content(self) -> Any:
        """The content with only JSON values (bytes as hex), for the API."""
        return None if self.content is None else json.loads(json.dumps(self.content, default=_json_default))


def _json_default(value: Any) -> str:
    return value.hex() if isinstance(value, bytes) else str(value)


def instant_contents(table: Table, instant: Instant) -> list[StateContent]:
    """The decoded content of every state file of an instant (newest state first)."""
    lake = HudiTable.open(table.path)
    wanted = LakeInstant(instant.requested_time, instant.action, State[instant.state], instant.completion_time or None)
    contents = []
    for state, path in sorted(lake.state_files(wanted).items(), reverse=True):
        name = path.rsplit("/", 1)[-1]
        try:
            raw = lake.read_state_file(path)
            record = None if raw is None else lake.record_of(path, raw)
            contents.append(StateContent(state.name, name, raw, record=record))
        except CleanlineError as exc:
            contents.append(StateContent(state.name, name, None, str(exc)))
    return contents


@dataclass(frozen=True, slots=True)
class InstantFiles:
    """What the instant page lists from an instant's records: a commit's write stats, the files
    a clean plans to delete, the files a clean or rollback deleted, the files a savepoint holds."""

    write_stats: list[WriteStat]
    plan_files: list[tuple[str, list[str]]]
    deleted_files: list[tuple[str, list[str]]]
    savepoint_files: list[tuple[str, list[str]]]


def instant_files(contents: list[StateContent]) -> InstantFiles:
    """The lists of the instant page, from the newest state's record and a clean's plan."""
    latest = contents[0].record if contents else None
    plan = next((c.record for c in contents if isinstance(c.record, CleanerPlan)), None)
    deleted: list[tuple[str, list[str]]] = []
    if isinstance(latest, CleanMetadata):
        deleted = [(p, list(m.success_delete_files)) for p, m in latest.partitions.items()]
    elif isinstance(latest, RollbackMetadata):
        deleted = [(p, list(m.success_delete_files)) for p, m in latest.partitions.items()]
    return InstantFiles(
        write_stats=latest.stats() if isinstance(latest, CommitMetadata) else [],
        plan_files=[(p, [i.path for i in infos]) for p, infos in plan.files.items()] if plan is not None else [],
        deleted_files=deleted,
        savepoint_files=[(p, list(n)) for p, n in latest.files.items()] if isinstance(latest, SavepointMetadata)
        else [])


@dataclass(frozen=True, slots=True)
class Overview:
    clean_config: CleanConfig
    commits_per_day: list[tuple[str, int]]
    bytes_per_partition: list[tuple[str, int]]
    versions_histogram: list[tuple[int, int]]


def metadata_table(table: Table, *, validate: bool = False) -> tuple[Any, Any, str]:
    """The table's metadata-table state, its validation against storage when asked, and an
    error reading it (a damaged metadata table is shown, not a 500)."""
    try:
        inspect = HudiTable.open(table.path).inspect
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
class SliceRow:
    base_instant: str
    files: tuple[str, ...]
    size: int
    protected: str | None


def file_groups(table: Table, partition: str | None) -> tuple[list[str], str, list[dict[str, Any]]]:
    """Partitions, the chosen one, and its file groups with slices and what protects them."""
    inspect = HudiTable.open(table.path).inspect
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


STATES = [s.name for s in State]


def plans_of(table: Table) -> QuerySet[CleanPlan]:
    return table.clean_plans.select_related("requested_by", "decided_by").order_by("-requested_at")


class _CountedPaginator(Paginator):
    """A paginator told its count (a plan's totals), sparing a COUNT over a million rows."""

    def __init__(self, rows: QuerySet[Any], per_page: int, count: int) -> None:
        super().__init__(rows, per_page)
        self._known = count

    @property
    def count(self) -> int:  # type: ignore[override]
        return self._known


def plan_files(plan: CleanPlan, *, delete: bool | None, search: str, partition: str, page: int | str | None) -> Page:
    """A page of a plan's files (to delete, kept, or all), optionally in one partition and
    whose names start with `search`; every filter is an index range, so a million-file plan
    pages and searches quickly."""
    rows = plan_file_rows(plan, delete=delete, search=search, partition=partition)
    if not search and not partition and delete is not None:
        known = plan.files_to_delete if delete else plan.files_kept
        return page_of(rows, page, paginator=_CountedPaginator(rows, PAGE_SIZE, known))
    return page_of(rows, page)


def plan_file_rows(plan: CleanPlan, *, delete: bool | None, search: str, partition: str) -> QuerySet[Any]:
    """A plan's files (to delete, kept, or all), in one partition, names starting with `search`."""
    rows = plan.files.all()
    if delete is not None:
        rows = rows.filter(delete=delete)
    if partition:
        rows = rows.filter(partition=partition)
    if search:
        rows = rows.filter(file_name__gte=search, file_name__lt=search + "\U0010ffff")
    return rows.order_by("partition", "file_name").only(
        "partition", "file_name", "size", "delete", "reason", "outcome", "base_instant")


def plan_csv_rows(plan: CleanPlan) -> Iterator[str]:
    """The plan's files as CSV lines, streamed from the database."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["partition", "file", "bytes", "decision", "reason", "outcome", "path"])
    for row in plan.files.order_by("partition", "file_name").values_list(
            "partition", "file_name", "size", "delete", "reason", "outcome", "path").iterator(chunk_size=5000):
        writer.writerow([row[0], row[1], row[2], "delete" if row[3] else "keep", row[4], row[5] or "", row[6]])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def savepoints(table: Table) -> list[Any]:
    """The table's savepoints with what they protect (read from the lake)."""
    return HudiTable.open(table.path).inspect.savepoints()


def restore_preview(table: Table, savepoint: str) -> Any:
    return HudiTable.open(table.path).inspect.restore_preview(savepoint)


def failed_write_previews(table: Table) -> list[FailedWrite]:
    return HudiTable.open(table.path).inspect.failed_writes()


def audit_page(*, action: str, username: str, table_id: str, page: int | str | None) -> Page:
    return page_of(audit_rows(action=action, username=username, table_id=table_id), page)


def audit_rows(*, action: str, username: str, table_id: str) -> QuerySet[AuditEvent]:
    """Audit events newest first: `action` a prefix, `username` exact, `table_id` an id."""
    rows = AuditEvent.objects.select_related("table")
    if action:
        rows = rows.filter(action__startswith=action)
    if username:
        rows = rows.filter(username=username)
    if table_id.isdigit():
        rows = rows.filter(table_id=int(table_id))
    return rows.order_by("-at", "-pk")


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
