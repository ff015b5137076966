"""The table doctor's pages (issue 28): a repair's preview, its request, the repair's page with
its approval; the table's indexes with an index's rebuild or drop to request (issue 45). The
Health section of a table's overview and the dashboard's health list are
drawn by `templatetags/health.py`. Thin: authorise, call one service or selector, render."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from console import permissions
from console.forms import DecisionForm
from console.models import Table
from console.models_approvals import ApprovalStatus
from console.permissions import AuthenticatedHttpRequest
from console.selectors import health as selectors
from console.selectors import writer_lock
from console.services import health as services
from console.views import table_action, table_page


@table_page(reads_lake=True)
def repair_preview(request: AuthenticatedHttpRequest, table: Table, kind: str) -> HttpResponse:
    """What the repair of every finding of `kind` would change now (the library's plan: exactly
    those files and instants, with their bytes), or who must act; the request button."""
    plan, why = selectors.repair_preview(table, kind)
    return render(request, "console/repair_preview.html", {
        "table": table, "kind": kind, "plan": plan, "why": why, "open_repair": selectors.open_repair(table, kind),
        "findings": [f for f in selectors.finding_rows(selectors.table_health(table)) if f.kind == kind]})


@table_action(permissions.REQUEST_REPAIR)
def repair_request(request: AuthenticatedHttpRequest, table: Table, kind: str) -> HttpResponse:
    try:
        repair = services.repair_request(table=table, user=request.user, kind=kind)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))  # the service audited the refusal
        return redirect("console:repair_preview", pk=table.pk, kind=kind)
    messages.success(request, f"Repair #{repair.pk} requested: another admin approves it, then a worker runs it.")
    return redirect("console:repair", pk=table.pk, repair_id=repair.pk)


@table_page()
def repair_detail(request: AuthenticatedHttpRequest, table: Table, repair_id: int) -> HttpResponse:
    repair = get_object_or_404(table.repairs, pk=repair_id)
    live = repair.status in (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)
    return render(request, "console/repair.html", {
        "table": table, "repair": repair, "live": live, "decision": DecisionForm(),
        "refusal": services.repair_approval_refusal(request.user, repair),
        "writer_lock": writer_lock(table) if repair.status == ApprovalStatus.DRAFT else None})


@table_page(reads_lake=True)
def indexes(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """The table's index partitions (issue 45): state, size, last verification and findings,
    with a rebuild and a drop to request through the repair approval flow."""
    return render(request, "console/indexes.html", {
        "table": table, "answer": selectors.indexes_json(table),
        "open_repair": selectors.open_repair(table, selectors.INDEX_KIND)})


@table_action(permissions.REQUEST_REPAIR)
def index_repair_request(request: AuthenticatedHttpRequest, table: Table, index: str, action: str) -> HttpResponse:
    try:
        repair = services.repair_request(table=table, user=request.user, kind=selectors.INDEX_KIND, index=index,
                                         action=action)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))  # the service audited the refusal
        return redirect("console:indexes", pk=table.pk)
    messages.success(request, f"Repair #{repair.pk} requested: another admin approves it, then a worker runs it.")
    return redirect("console:repair", pk=table.pk, repair_id=repair.pk)
