"""History over time over the API: the lake's and one table's figures a day (files, bytes,
reclaimable bytes, bytes reclaimed, active instants, a merge-on-read table's compaction backlog:
delta commits since its last compaction and log bytes), from the syncs' snapshots, the same the
History pages chart (`console.selectors.history`); a table's answer also lists its snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import field_validator

from console import selectors
from console.api.common import require
from console.api.tables import ERRORS, table_of

router = Router(tags=["history"])


class Window(Schema):
    days: int | None = None  # 90, or every day kept when CLEANLINE_HISTORY_DAYS is shorter

    @field_validator("days")
    @classmethod
    def _days(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= settings.CLEANLINE_HISTORY_DAYS:
            raise ValueError(f"days={value} is not between 1 and {settings.CLEANLINE_HISTORY_DAYS} "
                             "(CLEANLINE_HISTORY_DAYS: how long snapshots are kept)")
        return value

    @property
    def span(self) -> int:
        return self.days or max(1, min(selectors.HISTORY_DAYS, settings.CLEANLINE_HISTORY_DAYS))


class SnapshotOut(Schema):
    at: datetime
    files: int
    bytes: int
    reclaimable_bytes: int
    reclaimed_bytes: int
    active_instants: int | None
    backlog_delta_commits: int | None = None
    backlog_log_bytes: int | None = None


class HistoryOut(Schema):
    days: list[str]
    files: list[int | None]
    bytes: list[int | None]
    reclaimable_bytes: list[int | None]
    reclaimed_bytes: list[int | None]
    active_instants: list[int | None]
    backlog_delta_commits: list[int | None]
    backlog_log_bytes: list[int | None]


class TableHistoryOut(HistoryOut):
    snapshots: list[SnapshotOut]


def history_out(history: selectors.History) -> dict[str, Any]:
    return {"days": history.days, **history.series}


@router.get("/history", response={200: HistoryOut, **ERRORS}, summary="The lake's history")
def lake_history(request: HttpRequest, window: Query[Window]) -> dict[str, Any]:
    """Every table's figures summed, one value a day (the token user's time zone is not known
    here: days are the console's TIME_ZONE's) over the last `days` days, today last; null
    before any snapshot."""
    require(request)
    return history_out(selectors.lake_history(days=window.span))


@router.get("/tables/{table_id}/history", response={200: TableHistoryOut, **ERRORS}, summary="A table's history")
def table_history(request: HttpRequest, table_id: int, window: Query[Window]) -> dict[str, Any]:
    """The table's figures a day over the last `days` days, and its snapshots in them, oldest first."""
    history = selectors.table_history(table_of(request, table_id), days=window.span)
    return history_out(history) | {"snapshots": [s.figures() | {"at": s.at} for s in history.snapshots]}
