"""Archival pages: the preview (what Hudi's archiver would move now, what blocks the rest, the
active timeline before and after) with its request, an archival's page with its approval and
outcome, and a savepoint's page, where deleting it is confirmed and what archival that frees is
shown. Thin views over `console.services` and `console.selectors`, as in `console/views.py`."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from console import permissions, selectors, services
from console.forms import DecisionForm
from console.models import Table
from console.models_approvals import ApprovalStatus
from console.permissions import AuthenticatedHttpRequest
from console.views import refused, table_action, table_page
from timeline import CleanlineError

# While an archival is in these states its page polls (htmx) until it settles.
LIVE_ARCHIVAL_STATES = (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


@table_page(reads_lake=True)
def archival(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """The preview, read from the lake now: the instants archival would move, every blocker
    with its instant and since when, the active timeline before and after; the table's
    archivals; "Request archival" for operators and admins."""
    return render(request, "console/archival.html", {
        "table": table, "preview": selectors.archival_preview(table), "open": selectors.open_archival(table),
        "archivals": selectors.archivals_of(table)[:20]})


@table_action(permissions.REQUEST_ARCHIVAL)
def archival_request(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    try:
        found = services.archival_request(table=table, user=request.user)
    except ValidationError as exc:
        refused(request, exc)
        return redirect("console:archival", pk=table.pk)
    return redirect("console:archival_detail", pk=table.pk, archival_id=found.pk)


@table_page()
def archival_detail(request: AuthenticatedHttpRequest, table: Table, archival_id: int) -> HttpResponse:
    """An archival: its plan as requested, the approval (the two-person rule), its run."""
    found = get_object_or_404(selectors.archivals_of(table), pk=archival_id)
    pending = found.status == ApprovalStatus.DRAFT
    context = {"table": table, "archival": found, "live": found.status in LIVE_ARCHIVAL_STATES,
               "decision": DecisionForm(), "writer_lock": selectors.writer_lock(table) if pending else None}
    if request.headers.get("HX-Request"):
        response = render(request, "console/_archival_status.html", context)
        if not context["live"]:
            response["HX-Refresh"] = "true"  # settled: the whole page (result, stale reason)
        return response
    return render(request, "console/archival_detail.html", context)



@table_page(reads_lake=True)
def savepoint(request: AuthenticatedHttpRequest, table: Table, instant: str) -> HttpResponse:
    """A savepoint's page: what it protects, what archival deleting it frees (read-only: the
    archival plan of the timeline without it), and the typed confirmation that deletes it."""
    found = next((s for s in selectors.savepoints(table) if s.instant.requested_time == instant), None)
    if found is None:
        raise Http404(f"{table.name} has no savepoint {instant}.")
    try:
        release, error = selectors.savepoint_release(table, instant), ""
    except LookupError as exc:
        raise Http404(str(exc)) from exc
    except CleanlineError as exc:  # settings Hudi refuses: no plan, the savepoint can still be deleted
        release, error = None, str(exc)
    return render(request, "console/savepoint.html", {
        "table": table, "savepoint": found, "release": release, "error": error,
        "writer_lock": selectors.writer_lock(table)})
