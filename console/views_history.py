"""History pages: per table and lake-wide, charts over time of files, bytes, reclaimable bytes,
bytes reclaimed and the active timeline's length, from the syncs' snapshots
(`console.selectors.history`)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from console import permissions, selectors
from console.models import Table
from console.permissions import AuthenticatedHttpRequest
from console.views import table_page

WINDOWS = (7, 30, 90, 365)


def window(request: AuthenticatedHttpRequest) -> int:
    """The days asked for (`?days=`), one of WINDOWS within the snapshots kept; else 90."""
    asked = request.GET.get("days", "")
    days = int(asked) if asked.isdigit() else selectors.HISTORY_DAYS
    return days if days in WINDOWS and days <= max(settings.CLEANLINE_HISTORY_DAYS, 7) else selectors.HISTORY_DAYS


def _render(request: AuthenticatedHttpRequest, table: Table | None, history: selectors.History,
            days: int) -> HttpResponse:
    return render(request, "console/history.html", {
        "table": table, "history": history, "days": days, "charts": history.charts,
        "windows": [w for w in WINDOWS if w <= max(settings.CLEANLINE_HISTORY_DAYS, 7)],
        "kept": settings.CLEANLINE_HISTORY_DAYS})


@login_required
@require_GET
def lake_history(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    selectors.page_number(request.GET.get("page"), pages=1)  # the charts are one page: another is a 404
    days = window(request)
    return _render(request, None, selectors.lake_history(days=days), days)


@table_page()
def table_history(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    selectors.page_number(request.GET.get("page"), pages=1)
    days = window(request)
    return _render(request, table, selectors.table_history(table, days=days), days)
