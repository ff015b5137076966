"""The lake-wide pages: the catalog of tables, the dashboard, the demo lake's build banner."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from django.conf import settings
from django.db.models import Count, F, Max, Min, Q, QuerySet
from django.db.models.functions import Substr
from django.utils import timezone

from console.models import WRITE_ACTIONS, CleanPlan, Instant, Job, JobStatus, Table
from console.models_approvals import ApprovalStatus
from console.selectors.table_services import backlog_of
from timeline import CleanlineError, TableConfig
from timeline.instant import moment_of

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
    """Totals over every table, the tables by what their clean would free, and four charts:
    bytes reclaimed per day by Cleanline's cleans (Hudi's clean metadata records no sizes),
    instants per day by action (by the instant time's day), the ages of savepoints, and the
    merge-on-read tables' compaction backlogs."""
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
                "savepoints": _savepoint_ages(now), "backlog": _backlog(tables)})


def _days(since: datetime, now: datetime) -> list[str]:
    first = since.date()
    return [(first + timedelta(days=n)).isoformat() for n in range((now.date() - first).days + 1)]


def _reclaimed_per_day(since: datetime, now: datetime) -> dict[str, Any]:
    per_day: Counter[str] = Counter()
    for finished, reclaimed in CleanPlan.objects.filter(status=ApprovalStatus.COMPLETED, finished_at__gte=since
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


def _backlog(tables: list[CatalogTable], limit: int = 20) -> dict[str, Any]:
    """The merge-on-read tables with the most log bytes waiting for compaction (at most `limit`),
    as their last syncs kept them (`Table.services`), each with its delta commits since its last
    compaction in the tooltip."""
    found = []
    for table in tables:
        backlog = backlog_of(table)
        if backlog is not None and (backlog.log_bytes or backlog.delta_commits):
            found.append((table.name, backlog.log_bytes or 0, backlog.delta_commits))
    found.sort(key=lambda f: (-f[1], -(f[2] or 0), f[0]))
    found = found[:limit]
    return {"type": "bar", "horizontal": True, "format": "bytes", "labels": [f[0] for f in found],
            "datasets": [{"label": "log bytes", "data": [f[1] for f in found]}],
            "notes": [f"{f[2] if f[2] is not None else '?'} delta commits since the last compaction" for f in found]}


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
