"""The approvals queue (everything waiting for this user's decision, oldest first) and the one
decide view of every change that waits for approval (a clean plan, an archival, a repair): it
calls the one workflow (`console.services.approvals`), whatever the kind."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from console import permissions, selectors
from console.forms import DecisionForm
from console.models import Table
from console.permissions import AuthenticatedHttpRequest
from console.services import approvals
from console.views import refused, table_action, writers_stopped_ticked


@login_required
@require_GET
def approvals_queue(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    return render(request, "console/approvals.html", {
        "items": selectors.awaiting_decision(request.user), "may_approve": permissions.may(request.user, "approve")})


@dataclass(frozen=True, slots=True)
class DecidePage:
    """Where a kind's decision comes from and goes back to: the table's rows of the kind, its
    page (URL name and the id's name), and what the approver is told."""

    rows: str
    page: str
    id_name: str
    approved: str


PAGES = {
    "clean plan": DecidePage("clean_plans", "console:plan", "plan_id",
                             "Approving: the plan is checked against the table as it is now; if it still holds, its "
                             "clean runs (if the table changed, the plan turns stale and nothing runs)."),
    "archival": DecidePage("archivals", "console:archival_detail", "archival_id",
                           "Approved: a worker archives under the table's lock, once the timeline is checked to still "
                           "give these instants (if it changed, the archival turns stale and nothing is written)."),
    "repair": DecidePage("repairs", "console:repair", "repair_id",
                         "Approved: a worker runs the repair under the table's lock, after the doctor checks the table "
                         "again (if it now needs more than this preview, the repair turns stale and nothing changes)."),
    "version change": DecidePage("version_changes", "console:version_change", "change_id",
                                 "Approved: a worker rehearses the change again on a copy of the table as it is now, "
                                 "under the table's lock; only if that passes does it change the table."),
    "compaction": DecidePage("compactions", "console:compaction", "compaction_id",
                             "Approved: a worker plans the compaction again under the table's lock and, if it still "
                             "compacts these file groups, writes the plan and runs it (if the table changed, the "
                             "compaction turns stale and nothing is written)."),
}


@table_action(permissions.APPROVE)
def decide(request: AuthenticatedHttpRequest, table: Table, change_id: int, kind: str, decision: str) -> HttpResponse:
    """Approve or reject (an archival: decline) a change of `kind` waiting for approval; a refusal
    says why and is audited (by the workflow, and as `<view>.refused`)."""
    page = PAGES[kind]
    change = get_object_or_404(getattr(table, page.rows), pk=change_id)
    form = DecisionForm(request.POST)
    try:
        if decision == "approve":
            approvals.approval_approve(change=change, user=request.user,
                                       writers_stopped=writers_stopped_ticked(request))
            messages.info(request, page.approved)
        else:
            approvals.approval_reject(change=change, user=request.user,
                                      note=form.cleaned_data["note"] if form.is_valid() else "")
            word = approvals.kind_of(change).rejected_word
            messages.info(request, f"{change.kind_name.capitalize()} #{change.pk} {word}.")
    except ValidationError as exc:
        refused(request, exc)
    return redirect(reverse(page.page, kwargs={"pk": table.pk, page.id_name: change.pk}))
