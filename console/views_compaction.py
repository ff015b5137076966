"""Compaction pages (issue 41): "Schedule" on the Table services page (a compaction planned by the
library, waiting for approval) and a compaction's page: its plan file group by file group, the
approval (the two-person rule, through the one decide view), its run. Thin views over
`console.services.compactions`."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from console import permissions, selectors
from console.forms import DecisionForm
from console.models import Table
from console.permissions import AuthenticatedHttpRequest
from console.services import compactions
from console.views import refused, table_action, table_page


@table_action(permissions.REQUEST_COMPACTION)
def compaction_request(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    try:
        found = compactions.compaction_request(table=table, user=request.user)
    except ValidationError as exc:
        refused(request, exc)
        return redirect("console:table_services", pk=table.pk)
    return redirect("console:compaction", pk=table.pk, compaction_id=found.pk)


@table_page()
def compaction(request: AuthenticatedHttpRequest, table: Table, compaction_id: int) -> HttpResponse:
    """A compaction: its plan as requested (file group by file group), the approval, its run."""
    found = get_object_or_404(table.compactions.select_related("requested_by", "decided_by"), pk=compaction_id)
    return render(request, "console/compaction.html", {
        "table": table, "compaction": found, "decision": DecisionForm(),
        "writer_lock": selectors.writer_lock(table) if found.is_waiting else None})
