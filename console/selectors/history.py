"""History over time, from the syncs' snapshots (`TableSnapshot`): per table and lake-wide, one
point a day (in the signed-in user's time zone) of files, bytes, reclaimable bytes, bytes
reclaimed, the active timeline's length and the compaction backlog (merge-on-read tables' delta
commits since their last compaction and log bytes). A day shows each table's last snapshot up to its
end (a table not synced that day keeps its figures); lake-wide, the tables' figures summed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Max
from django.utils import timezone

from console.models import Table
from console.models_history import TableSnapshot

HISTORY_DAYS = 90  # the charts' default window
FIGURES = TableSnapshot.FIGURES
LABELS = {"files": "files", "bytes": "bytes", "reclaimable_bytes": "reclaimable bytes",
          "reclaimed_bytes": "bytes reclaimed (in all)", "active_instants": "active timeline (instants)",
          "backlog_delta_commits": "delta commits since the last compaction",
          "backlog_log_bytes": "log bytes a snapshot read merges"}


@dataclass(frozen=True, slots=True)
class History:
    """One point a day: `days` (ISO dates) and, per figure, its value that day (None before
    the first snapshot)."""

    days: list[str]
    series: dict[str, list[int | None]]
    snapshots: list[TableSnapshot] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(v is not None for values in self.series.values() for v in values)

    @property
    def charts(self) -> dict[str, dict[str, Any]]:
        """The three charts' specs for console/static/console/charts.js, from the first day with
        a snapshot (a young lake's charts do not start with weeks of nothing)."""
        start = next((n for n in range(len(self.days)) if any(v[n] is not None for v in self.series.values())), 0)

        def spec(fmt: str, figures: tuple[str, ...]) -> dict[str, Any]:
            return {"type": "line", "format": fmt, "labels": self.days[start:],
                    "datasets": [{"label": LABELS[f], "data": self.series[f][start:]} for f in figures]}

        return {"bytes": spec("bytes", ("bytes", "reclaimable_bytes", "reclaimed_bytes")),
                "files": spec("count", ("files",)), "active": spec("count", ("active_instants",)),
                "backlog": spec("count", ("backlog_delta_commits",)), "backlog_bytes": spec("bytes", (
                    "backlog_log_bytes",))}

    @property
    def has_backlog(self) -> bool:
        """Whether any day has a compaction backlog (a merge-on-read table's)."""
        return any(v is not None for f in ("backlog_delta_commits", "backlog_log_bytes") for v in self.series[f])


def _day(moment: datetime) -> date:
    return timezone.localtime(moment).date()


def _rows(tables: list[int] | None, since: datetime) -> list[TableSnapshot]:
    """The snapshots from `since` on, and each table's last one before (what its first day shows)."""
    recent = TableSnapshot.objects.filter(at__gte=since)
    before = TableSnapshot.objects.filter(at__lt=since)
    if tables is not None:
        recent, before = recent.filter(table_id__in=tables), before.filter(table_id__in=tables)
    last_before = before.values("table_id").annotate(last=Max("pk")).values_list("last", flat=True)
    found = list(recent) + list(TableSnapshot.objects.filter(pk__in=list(last_before)))
    return sorted(found, key=lambda s: (s.table_id, s.at, s.pk))


def _history(tables: list[int] | None, days: int, now: datetime | None) -> History:
    now = now or timezone.now()
    first = _day(now) - timedelta(days=days - 1)
    labels = [first + timedelta(days=n) for n in range(days)]
    since = timezone.make_aware(datetime.combine(first, datetime.min.time()), timezone.get_current_timezone())
    rows = _rows(tables, since)
    per_table: dict[int, list[TableSnapshot]] = {}
    for row in rows:
        per_table.setdefault(row.table_id, []).append(row)
    series: dict[str, list[int | None]] = {f: [None] * days for f in FIGURES}
    for snapshots in per_table.values():
        index, current = 0, None
        for n, day in enumerate(labels):
            while index < len(snapshots) and _day(snapshots[index].at) <= day:
                current, index = snapshots[index], index + 1
            if current is None:
                continue
            for name in FIGURES:
                value = getattr(current, name)
                if value is not None:
                    series[name][n] = (series[name][n] or 0) + value
    return History([d.isoformat() for d in labels], series, [r for r in rows if r.at >= since])


def table_history(table: Table, *, days: int = HISTORY_DAYS, now: datetime | None = None) -> History:
    """One table's history over the last `days` days (today included), with its snapshots."""
    return _history([table.pk], days, now)


def lake_history(*, days: int = HISTORY_DAYS, now: datetime | None = None) -> History:
    """Every registered table's figures summed, a point a day over the last `days` days."""
    return _history(None, days, now)
