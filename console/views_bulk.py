"""Bulk actions on the catalog's ticked tables: sync them, or plan a clean of each with its own
settings, after one confirmation that lists them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console import permissions, services
from console.models import Table
from console.permissions import AuthenticatedHttpRequest

# The bulk actions: the permission each needs, and how the confirmation names it.
ACTIONS = {"sync": (permissions.SYNC, "Sync"), "plan": (permissions.PLAN, "Plan a clean of")}


@login_required
@require_POST
def bulk(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The ticked tables and the action: first a confirmation page listing them (nothing done),
    then, with `confirm`, the action on each (operators and admins)."""
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        permissions.require_view(request.user)
        return render(request, "console/bulk.html", {"error": f"No such action: {action!r}."}, status=400)
    permission, label = ACTIONS[action]
    permissions.require(request.user, permission)
    ids = [int(i) for i in request.POST.getlist("table") if i.isdigit()]
    tables = list(Table.objects.filter(pk__in=ids).order_by("name", "pk"))
    if not tables:
        messages.error(request, "Tick the tables first.")
        return redirect("console:catalog")
    if request.POST.get("confirm") != "yes":
        return render(request, "console/bulk.html", {"action": action, "label": label, "tables": tables})
    if action == "sync":
        count = services.tables_sync_request(tables=tables, user=request.user)
        messages.success(request, f"A sync of {count} table{'s' if count != 1 else ''} is queued.")
        return redirect("console:catalog")
    plans, refusals = services.plans_request(tables=tables, user=request.user)
    if plans:
        messages.success(request, f"{len(plans)} clean plan{'s' if len(plans) != 1 else ''} requested ("
                                  f"{', '.join(f'#{p.pk} {p.table.name}' for p in plans)}); each is being made "
                                  "by a worker, then waits for an admin's approval.")
    for refusal in refusals:
        messages.error(request, refusal)
    return redirect("console:catalog")
