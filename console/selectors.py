"""Reads for the pages: database rows for lists, the library for what only the lake knows
(instant contents, file groups). No Hudi rule is decided here."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, BinaryIO, TypedDict
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.contrib.auth.models import User
from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import Count, F, Max, Min, Q, QuerySet
from django.db.models.functions import Substr
from django.http import Http404
from django.utils import timezone

from console.models import (
    WRITE_ACTIONS,
    AuditEvent,
    CleanPlan,
    GrantStatus,
    Instant,
    Job,
    JobStatus,
    PlanStatus,
    RetentionEstimate,
    RoleGrant,
    Table,
    TableLock,
)
from timeline import CleanConfig, CleanlineError, FailedWrite, HudiTable, LiveWriterUnlocked, State, TableConfig
from timeline import Instant as LakeInstant
from timeline.clean.store import FileRow, StoredPlan
from timeline.instant import instant_time_of, moment_of
from timeline.metadata.records import (
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    Record,
    RollbackMetadata,
    SavepointMetadata,
    WriteStat,
)

PAGE_SIZE = 50


# The catalog's sort keys: the name a link uses -> the field ("-key" sorts descending).
CATALOG_SORTS = {"name": "name", "size": "total_bytes", "files": "total_files", "instants": "instant_count",
                 "pending": "pending_count", "last_clean": "last_clean", "savepoints": "savepoint_count",
                 "version": "table_version"}


class CatalogCounts(TypedDict):
    """What `catalog` annotates each table with."""

    instant_count: int
    pending_count: int
    pending_writes: int
    savepoint_count: int
    last_clean: str | None
    last_commit: str | None
    oldest_savepoint: str | None


if TYPE_CHECKING:  # django-stubs-ext is a tool of the type check, not a dependency of the console
    from django_stubs_ext import WithAnnotations

    CatalogTable = WithAnnotations[Table, CatalogCounts]


def catalog(*, search: str = "", sort: str = "name") -> QuerySet[CatalogTable]:
    """Tables with their instant counts, last commit and clean, pending writes and oldest
    savepoint; those whose name or path contains `search`, sorted by `sort` (a key of
    CATALOG_SORTS, ascending; "-key" descending; tables without a value last), then by name."""
    rows = Table.objects.annotate(
        instant_count=Count("instants"),
        pending_count=Count("instants", filter=~Q(instants__state="COMPLETED")),
        pending_writes=Count("instants", filter=Q(instants__action__in=WRITE_ACTIONS, instants__archived=False)
                             & ~Q(instants__state="COMPLETED")),
        savepoint_count=Count("instants", filter=Q(instants__action="savepoint", instants__state="COMPLETED")),
        last_clean=Max("instants__requested_time", filter=Q(instants__action="clean", instants__state="COMPLETED")),
        last_commit=Max("instants__requested_time", filter=Q(instants__action__in=WRITE_ACTIONS,
                                                              instants__state="COMPLETED")),
        oldest_savepoint=Min("instants__requested_time", filter=Q(instants__action="savepoint",
                                                                   instants__state="COMPLETED",
                                                                   instants__archived=False)),
    )
    if search:
        rows = rows.filter(Q(name__icontains=search) | Q(path__icontains=search))
    field = F(CATALOG_SORTS.get(sort.lstrip("-"), "name"))
    return rows.order_by(field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_last=True), "name")


@dataclass(frozen=True, slots=True)
class Dashboard:
    """The lake at a glance: every table's figures (the catalog's, with what a clean under its
    own settings would free, from its last sync) and the charts' series."""

    tables: list[CatalogTable]
    files: int
    bytes: int
    reclaimable: int
    failed_writes: int
    pending_writes: int
    charts: dict[str, dict[str, Any]]


CHART_DAYS = 30


def dashboard(*, now: datetime | None = None, days: int = CHART_DAYS) -> Dashboard:
    """Totals over every table, the tables by what their clean would free, and three charts:
    bytes reclaimed per day by Cleanline's cleans (Hudi's clean metadata records no sizes),
    instants per day by action (by the instant time's day) and the ages of savepoints."""
    now = now or timezone.now()
    tables = list(catalog())
    tables.sort(key=lambda t: (-(t.reclaimable.get("bytes") or 0), t.name))
    since = now - timedelta(days=days)
    return Dashboard(
        tables=tables, files=sum(t.total_files for t in tables), bytes=sum(t.total_bytes for t in tables),
        reclaimable=sum(t.reclaimable.get("bytes") or 0 for t in tables),
        failed_writes=sum(t.failed_writes for t in tables),
        pending_writes=sum(t.pending_writes for t in tables),
        charts={"reclaimed": _reclaimed_per_day(since, now), "instants": _instants_per_day(since, now),
                "savepoints": _savepoint_ages(now)})


def _days(since: datetime, now: datetime) -> list[str]:
    first = since.date()
    return [(first + timedelta(days=n)).isoformat() for n in range((now.date() - first).days + 1)]


def _reclaimed_per_day(since: datetime, now: datetime) -> dict[str, Any]:
    per_day: Counter[str] = Counter()
    for finished, reclaimed in CleanPlan.objects.filter(status=PlanStatus.COMPLETED, finished_at__gte=since
                                                        ).values_list("finished_at", "progress_bytes"):
        per_day[timezone.localtime(finished).date().isoformat()] += reclaimed or 0
    for finished, result in Job.objects.filter(kind=Job.Kind.CLEAN, status=JobStatus.COMPLETED, finished_at__gte=since
                                               ).values_list("finished_at", "result"):
        per_day[timezone.localtime(finished).date().isoformat()] += int((result or {}).get("bytes") or 0)
    labels = _days(since, now)
    return {"type": "bar", "format": "bytes", "labels": labels,
            "datasets": [{"label": "bytes reclaimed", "data": [per_day[d] for d in labels]}]}


def _instants_per_day(since: datetime, now: datetime) -> dict[str, Any]:
    first = since.strftime("%Y%m%d")
    counts = (Instant.objects.filter(requested_time__gte=first).annotate(day=Substr("requested_time", 1, 8))
              .values("day", "action").annotate(n=Count("id")).order_by())
    by_action: dict[str, Counter[str]] = {}
    for row in counts:
        day = f"{row['day'][:4]}-{row['day'][4:6]}-{row['day'][6:8]}"
        by_action.setdefault(row["action"], Counter())[day] += row["n"]
    labels = _days(since, now)
    return {"type": "bar", "stacked": True, "format": "count", "labels": labels,
            "datasets": [{"label": action, "data": [found[d] for d in labels]}
                         for action, found in sorted(by_action.items())]}


def _savepoint_ages(now: datetime, limit: int = 20) -> dict[str, Any]:
    """The oldest savepoints (at most `limit`), each with its age in days."""
    rows = (Instant.objects.filter(action="savepoint", state="COMPLETED", archived=False)
            .select_related("table").order_by("requested_time")[:limit])
    ages = []
    for row in rows:
        try:
            made = moment_of(row.requested_time, TableConfig(row.table.properties or {}).timezone)
        except CleanlineError:
            continue
        ages.append((f"{row.table.name} {row.requested_time}", round((now - made).total_seconds() / 86400, 1)))
    return {"type": "bar", "horizontal": True, "format": "days", "labels": [a for a, _ in ages],
            "datasets": [{"label": "age (days)", "data": [d for _, d in ages]}]}


@dataclass(frozen=True, slots=True)
class TimelineFilters:
    """`since`/`until`: an instant time's leading digits, or a date or date-time
    (yyyy-mm-dd[Thh:mm[:ss[.SSS]]]) in `zone` (an IANA name; the console's TIME_ZONE when empty
    or unknown); `search`: digits found anywhere in the requested or completion time."""

    action: str = ""
    state: str = ""
    since: str = ""
    until: str = ""
    search: str = ""
    zone: str = ""


def page_of(rows: Any, page: int | str | None, per_page: int = PAGE_SIZE, *,
            paginator: Paginator[Any] | None = None) -> Page[Any]:
    """Page `page` (1 when not given) of `rows`; a page that is not a number or lies past the
    end answers 404 rather than silently showing another page."""
    paginator = paginator or Paginator(rows, per_page)
    try:
        return paginator.page(page or 1)
    except (EmptyPage, PageNotAnInteger):
        if str(page) == "1":
            return paginator.page(1)  # an empty list has one (empty) page
        raise Http404(f"There is no page {page} (pages 1 to {paginator.num_pages}).") from None


def timeline_page(table: Table, filters: TimelineFilters | None, page: int | str | None) -> Page[Any]:
    """One page of a table's instants, newest first, filtered; no instant when the filters
    were refused (None), rather than the whole timeline under an error."""
    return page_of(timeline_rows(table, filters) if filters is not None else table.instants.none(), page)


def timeline_rows(table: Table, filters: TimelineFilters) -> QuerySet[Instant]:
    """A table's instants, newest first, filtered (the timeline page's and the API's). Dates
    become instant times in the table's timeline zone, both ends inclusive: `until` 2024-01-05
    keeps every instant of that day (in `filters.zone`)."""
    rows = table.instants.all()
    if filters.action:
        rows = rows.filter(action=filters.action)
    if filters.state:
        rows = rows.filter(state=filters.state)
    zone = TableConfig(table.properties or {}).timezone
    if filters.since:
        typed = _typed_span(filters.since, filters.zone)
        since = instant_time_of(typed[0], zone) if typed else filters.since
        rows = rows.filter(requested_time__gte=_whole_second(since))
    if filters.until:
        typed = _typed_span(filters.until, filters.zone)
        if typed:  # before the first instant after the day, minute or second typed
            rows = rows.filter(requested_time__lt=_whole_second(instant_time_of(typed[0] + typed[1], zone)))
        else:
            rows = rows.filter(requested_time__lte=filters.until.ljust(17, "9"))
    if filters.search:  # separators typed are ignored: 2024-01-05 12:30 finds 202401051230 anywhere
        digits = "".join(c for c in filters.search if c.isdigit())
        found = Q(requested_time__contains=digits) | Q(completion_time__contains=digits)
        rows = rows.filter(found) if digits else rows.none()
    return rows.order_by("-requested_time", "action")


def _typed_span(text: str, zone: str) -> tuple[datetime, timedelta] | None:
    """A typed date or date-time as an aware moment in `zone` and the length of what it names
    (a day, a minute, a second, a millisecond); None for an instant time's digits or text that
    is not a date (compared as it is, as before dates were taken)."""
    if text.isdigit():
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    clock = text[10:].lstrip("T ")
    length = (timedelta(days=1) if not clock else timedelta(minutes=1) if len(clock) == 5
              else timedelta(seconds=1) if len(clock) == 8 else timedelta(milliseconds=1))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_zone(zone))
    return moment, length


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name) if name else timezone.get_current_timezone()
    except (ZoneInfoNotFoundError, ValueError, OSError):  # not a zone this machine knows
        return timezone.get_current_timezone()


def _whole_second(bound: str) -> str:
    """A bound without a whole second's 000, so that a 14-digit instant time of that second
    compares equal to it (as strings, "20240105000000" < "20240105000000000")."""
    return bound[:14] if len(bound) == 17 and bound.endswith("000") else bound


def actions_of(table: Table) -> list[str]:
    return sorted(table.instants.order_by().values_list("action", flat=True).distinct())


@dataclass(frozen=True, slots=True)
class StateContent:
    """One state file of an instant as a page shows it. A file above
    CLEANLINE_INSTANT_INLINE_MAX_BYTES is not read in the request (`decoded` False, no content):
    the page shows its size and offers it as a download; `streams_write_stats` says whether
    its write stats can be paged (`write_stats_page`)."""

    state: str
    file: str
    content: dict[str, Any] | None
    error: str = ""
    record: Record | None = None
    path: str = ""
    size: int = -1
    decoded: bool = True
    streams_write_stats: bool = False

    @property
    def raw(self) -> str:
        return json.dumps(self.content, indent=2, default=_json_default)

    def json_content(self) -> Any:
        """The content with only JSON values (bytes as hex), for the API."""
        return None if self.content is None else json.loads(json.dumps(self.content, default=_json_default))


def _json_default(value: Any) -> str:
    return value.hex() if isinstance(value, bytes) else str(value)


def _lake_instant(instant: Instant) -> LakeInstant:
    return LakeInstant(instant.requested_time, instant.action, State[instant.state], instant.completion_time or None)


def instant_contents(table: Table, instant: Instant) -> list[StateContent]:
    """The content of every state file of an instant (newest state first), each decoded only
    up to CLEANLINE_INSTANT_INLINE_MAX_BYTES (a 200 MB commit decodes to gigabytes)."""
    lake = HudiTable.open(table.path)
    contents = []
    for state, path in sorted(lake.state_files(_lake_instant(instant)).items(), reverse=True):
        name = path.rsplit("/", 1)[-1]
        try:
            found = lake.inspect.state_file(state, path, decode_up_to=settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES)
            contents.append(StateContent(state.name, name, found.content, record=found.record, path=path,
                                         size=found.size, decoded=found.decoded,
                                         streams_write_stats=found.streams_write_stats))
        except CleanlineError as exc:
            contents.append(StateContent(state.name, name, None, str(exc), path=path))
    return contents


@dataclass(frozen=True, slots=True)
class WriteStatsPage:
    """One page of the write stats of a state file left unread for its size: `count` is the
    number the sync summed (None within one partition or for a pending instant's file),
    `has_next` whether more follow."""

    stats: list[WriteStat]
    number: int
    page_size: int
    partition: str | None
    has_next: bool
    count: int | None

    @property
    def start(self) -> int:
        return (self.number - 1) * self.page_size


def write_stats_page(table: Table, instant: Instant, contents: list[StateContent], *, partition: str | None,
                     page: int | str | None, page_size: int = PAGE_SIZE) -> WriteStatsPage | None:
    """Page `page` of the newest state's write stats (of `partition` only, if given) when that
    file was too large to decode and its stats can be read as a stream; None otherwise. Only
    the file's beginning up to the page's last stat is read (bounded memory)."""
    latest = contents[0] if contents else None
    if latest is None or latest.decoded or latest.error or not latest.streams_write_stats:
        return None
    try:
        number = int(page or 1)
    except ValueError:
        raise Http404(f"There is no page {page}.") from None
    if number < 1:
        raise Http404(f"There is no page {page}.")
    lake = HudiTable.open(table.path)
    found = lake.inspect.write_stats(latest.path, partition=partition or None, start=(number - 1) * page_size,
                                     count=page_size + 1)
    if not found and number > 1:
        raise Http404(f"There is no page {page} of write stats.")
    summed = not partition and latest.state == State.COMPLETED.name  # the sync's summary is the completed file's
    return WriteStatsPage(found[:page_size], number, page_size, partition or None, len(found) > page_size,
                          instant.files if summed else None)


def state_file_reader(table: Table, instant: Instant, state: str) -> tuple[str, BinaryIO]:
    """The name of an instant's state file in `state` and the file open for reading in chunks
    (the raw download); 404 when the instant has no such file."""
    lake = HudiTable.open(table.path)
    chosen = State.__members__.get(state.upper())
    path = lake.state_files(_lake_instant(instant)).get(chosen) if chosen is not None else None
    if path is None:
        raise Http404(f"The instant has no {state} state file.")
    return path.rsplit("/", 1)[-1], lake.inspect.open_state_file(path)


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
        lake = HudiTable.open(table.path)
        found = lake.inspect.lock(table.write_options)
        live = [w.describe() for w in lake.inspect.live_writers(table.write_options)]
        try:
            lake.maintenance(options=table.write_options).preflight()
            needs_override = False
        except LiveWriterUnlocked:
            needs_override = True
    except CleanlineError as exc:
        return WriterLock("", "", "", [], False, str(exc))
    return WriterLock(found.provider_name, found.source.value, found.detail, live, needs_override)


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


def demo_status() -> dict[str, Any] | None:
    """The demo lake's background build (CLEANLINE_DEMO_STATUS), while it runs or if it failed;
    None when there is none, it finished well, or its file cannot be read."""
    if not settings.CLEANLINE_DEMO_STATUS:
        return None
    try:
        with open(settings.CLEANLINE_DEMO_STATUS, encoding="utf-8") as status:
            found = json.load(status)
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or (found.get("finished") and not found.get("failed")):
        return None
    return found


def people_rows() -> QuerySet[User]:
    """Every user, by username, with their groups (for the role badge): the People page."""
    return User.objects.prefetch_related("groups").select_related("profile").order_by("username")


def pending_grants() -> QuerySet[RoleGrant]:
    """Admin roles waiting for a second admin's confirmation, oldest first: the People page."""
    return RoleGrant.objects.filter(status=GrantStatus.PENDING).select_related("user", "requested_by").order_by(
        "requested_at")


def plans_of(table: Table) -> QuerySet[CleanPlan]:
    return table.clean_plans.select_related("requested_by", "decided_by").order_by("-requested_at")


def plan_files(plan: CleanPlan, *, delete: bool | None, search: str, partition: str,
               page: int | str | None) -> Page[Any]:
    """A page of a plan's files (to delete, kept, or all), optionally in one partition and
    whose names contain `search`, read from the plan store a page at a time."""
    return page_of(plan_file_rows(plan, delete=delete, search=search, partition=partition), page)


def stored_plan(plan: CleanPlan) -> StoredPlan | None:
    """The plan's files in the plan store; None before the plan is built."""
    return StoredPlan.open(plan.store) if plan.store else None


def plan_file_rows(plan: CleanPlan, *, delete: bool | None, search: str, partition: str) -> Sequence[FileRow]:
    """A plan's files (to delete, kept, or all), in one partition, names containing `search`:
    a sequence read from the plan store a slice at a time (a Paginator's object list)."""
    stored = stored_plan(plan)
    return [] if stored is None else stored.matches(delete=delete, search=search, partition=partition)


def plan_csv_rows(plan: CleanPlan) -> Iterator[str]:
    """The plan's files as CSV lines, streamed from the plan store a part at a time."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["partition", "file", "bytes", "decision", "reason", "outcome", "path"])
    stored = stored_plan(plan)
    for row in stored.iter_rows() if stored is not None else ():
        writer.writerow([row.partition, row.file_name, row.size, "delete" if row.delete else "keep", row.reason,
                         row.outcome, row.path])
        if buffer.tell() > 65_536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def savepoints(table: Table) -> list[Any]:
    """The table's savepoints with what they protect (read from the lake)."""
    return HudiTable.open(table.path).inspect.savepoints()


def savepoints_page(table: Table) -> tuple[list[Any], list[LakeInstant]]:
    """The savepoints page from one opening of the table: its savepoints with what they protect,
    and the writes the form offers (newest first, at most 200: those the library does not refuse
    by Hudi's rule; its stricter checks answer when the form is sent)."""
    inspect = HudiTable.open(table.path).inspect
    return inspect.savepoints(), inspect.savepoint_candidates()[:200]


def restore_preview(table: Table, savepoint: str) -> Any:
    return HudiTable.open(table.path).inspect.restore_preview(savepoint)


def restore_files(preview: Any) -> list[tuple[str, str, str, int]]:
    """Every file a restore deletes, as (instant, partition, path, bytes), newest write first."""
    return [(r.instant.requested_time, partition, path, size) for r in preview.rollbacks
            for partition, path, size in r.files_to_delete]


def failed_write_previews(table: Table) -> list[FailedWrite]:
    return HudiTable.open(table.path).inspect.failed_writes()


def audit_page(*, action: str, username: str, table_id: str, page: int | str | None) -> Page[Any]:
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
