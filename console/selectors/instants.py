"""A table's timeline page (its instants, filtered) and an instant's page: its state files
decoded up to a size, their write stats paged, the raw file streamed, the files its records list."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from datetime import timezone as dt_timezone
from typing import Any, BinaryIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.core.paginator import Page
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from console.lake import open_table
from console.models import Instant, Table
from console.models_write_stats import WriteStatsIndex
from console.selectors.paging import PAGE_SIZE, page_number, page_of, partition_filter
from timeline import CleanlineError, State, TableConfig
from timeline import Instant as LakeInstant
from timeline.instant import instant_time_of
from timeline.metadata.records import (
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    Record,
    RollbackMetadata,
    SavepointMetadata,
    WriteStat,
)


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
    if filters.search:
        shown = _shown_span(filters.search, filters.zone)
        if shown is not None:  # a time as the pages show it: the instants requested or completed then
            start, end = (_whole_second(instant_time_of(m, zone)) for m in (shown[0], shown[0] + shown[1]))
            rows = rows.filter(Q(requested_time__gte=start, requested_time__lt=end)
                               | Q(completion_time__gte=start, completion_time__lt=end))
        else:  # digits anywhere (separators ignored): 1230 finds 202401051230
            digits = "".join(c for c in filters.search if c.isdigit())
            found = Q(requested_time__contains=digits) | Q(completion_time__contains=digits)
            rows = rows.filter(found) if digits else rows.none()
    return rows.order_by("-requested_time", "action")


# A time as the pages show it: a date, a clock to the minute or second, the zone's label
# ("2024-01-05 12:30:45 UTC+14", "2024-01-05 12:30 IST", "2024-01-05").
_SHOWN = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?))?(?:\s*([A-Za-z]{2,5}"
                    r"(?:[+-]\d{1,4}(?::\d{2})?)?))?\s*$")


def _shown_span(text: str, zone: str) -> tuple[datetime, timedelta] | None:
    """A time typed as the pages show it, as the moment it names and its length (the day,
    minute or second): read in `zone` (the user's), or in the zone its label names when that is
    UTC or an offset ("UTC+14"); another abbreviation ("IST") is the user's zone's own label."""
    match = _SHOWN.match(text)
    if match is None:
        return None
    day, clock, label = match.groups()
    span = _typed_span(f"{day}T{clock}" if clock else day, zone)
    if span is None:
        return None
    labelled = _labelled_zone(label or "")
    return (span[0].replace(tzinfo=labelled), span[1]) if labelled is not None else span


def _labelled_zone(label: str) -> tzinfo | None:
    """The zone a label names by itself: UTC (or GMT) and offsets from it."""
    found = re.fullmatch(r"(?:UTC|GMT)(?:([+-])(\d{1,2}):?(\d{2})?)?", label.upper())
    if found is None:
        return None
    sign, hours, minutes = found.groups()
    if sign is None:
        return UTC
    offset = timedelta(hours=int(hours), minutes=int(minutes or 0))
    return dt_timezone(offset if sign == "+" else -offset)


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


STATES = [s.name for s in State]


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
    lake = open_table(table.path)
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
    file was too large to decode and its stats can be read as a stream; None otherwise.

    A file the sync indexed (`WriteStatsIndex`, a completed commit file above
    CLEANLINE_INSTANT_INLINE_MAX_BYTES) is paged from the database, in time independent of its
    size; another is read as a stream only up to the page's last stat (bounded memory). The
    page number and the filter are checked first (`page_number`, `partition_filter`): a page
    past the last stat the sync counted is a 404 before anything is read."""
    latest = contents[0] if contents else None
    if latest is None or latest.decoded or latest.error or not latest.streams_write_stats:
        return None
    number = page_number(page)
    chosen = partition_filter(partition)
    completed = latest.state == State.COMPLETED.name  # the sync's summary and index are the completed file's
    index = WriteStatsIndex.objects.filter(table=table, file=latest.file, size=latest.size,
                                           complete=True).first() if completed else None
    start = (number - 1) * page_size
    known = index.count if index is not None else instant.files if completed else None
    if number > 1 and known is not None and start >= known:
        raise Http404(f"There is no page {number} of write stats ({known} in all, {page_size} a page).")
    if index is not None:
        found = indexed_write_stats(index, partition=chosen or None, start=start, count=page_size + 1)
    else:
        lake = open_table(table.path)
        found = lake.inspect.write_stats(latest.path, partition=chosen or None, start=start, count=page_size + 1)
    if not found and number > 1:
        raise Http404(f"There is no page {number} of write stats.")
    return WriteStatsPage(found[:page_size], number, page_size, chosen or None, len(found) > page_size,
                          known if not chosen and completed else None)


def indexed_write_stats(index: WriteStatsIndex, *, partition: str | None, start: int, count: int) -> list[WriteStat]:
    """At most `count` write stats of an indexed file from the `start`-th (of `partition` only,
    if given), in the file's order: one range of the index's rows."""
    rows = index.stats.all()
    if partition is None:
        rows = rows.filter(ordinal__gte=start, ordinal__lt=start + count).order_by("ordinal")
    else:
        rows = rows.filter(partition=partition, partition_ordinal__gte=start,
                           partition_ordinal__lt=start + count).order_by("partition_ordinal")
    return [WriteStat(r.partition, r.file_id, r.path, r.prev_commit, r.num_writes, r.num_inserts, r.num_update_writes,
                      r.num_deletes, r.total_write_bytes, r.file_size) for r in rows]


def state_file_reader(table: Table, instant: Instant, state: str) -> tuple[str, BinaryIO]:
    """The name of an instant's state file in `state` and the file open for reading in chunks
    (the raw download); 404 when the instant has no such file."""
    lake = open_table(table.path)
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
