"""Table version pages (issue 42): the table's version with what each newer and older version
means and the preflight's blockers of moving there, the rehearsals ("Rehearse": a worker runs the
change on a copy of the table) and "Request" (a version change waiting for approval), and a
version change's page with its plan, the rehearsal it rests on, the approval and the run. Thin
views over `console.services.versions` and `console.selectors.versions`."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from console import permissions, selectors
from console.forms import DecisionForm
from console.models import Table
from console.models_versions import VersionRehearsal
from console.permissions import AuthenticatedHttpRequest
from console.selectors import versions as version_selectors
from console.services import versions
from console.views import refused, table_action, table_page


@table_page(reads_lake=True)
def table_versions(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """The table's version, every other version with who reads it and the preflight's blockers of
    moving there, the newest rehearsal of each move with its report, the table's version changes."""
    overview = version_selectors.version_overview(table)
    rehearsals = list(version_selectors.rehearsals_of(table)[:20])
    latest: dict[int, VersionRehearsal] = {}
    for rehearsal in rehearsals:
        if rehearsal.from_version == overview.current:
            latest.setdefault(rehearsal.target, rehearsal)
    return render(request, "console/versions.html", {
        "table": table, "overview": overview, "targets": [(t, latest.get(t.version)) for t in overview.targets],
        "open": version_selectors.open_version_change(table),
        "changes": version_selectors.version_changes_of(table)[:20]})


def _target(request: AuthenticatedHttpRequest) -> int:
    try:
        return int(request.POST.get("to", ""))
    except ValueError as exc:
        raise ValidationError("Choose the table version to move to.") from exc


@table_action(permissions.REQUEST_VERSION_CHANGE)
def version_rehearse(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    try:
        rehearsal = versions.version_rehearsal_request(table=table, user=request.user, target=_target(request))
        messages.info(request, f"Rehearsal #{rehearsal.pk} of the move to table version {rehearsal.target} "
                               "queued: a worker runs it on a copy of the table (the table is not written).")
    except ValidationError as exc:
        refused(request, exc)
    return redirect("console:versions", pk=table.pk)


@table_action(permissions.REQUEST_VERSION_CHANGE)
def version_request(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    try:
        change = versions.version_change_request(table=table, user=request.user, target=_target(request))
    except ValidationError as exc:
        refused(request, exc)
        return redirect("console:versions", pk=table.pk)
    return redirect("console:version_change", pk=table.pk, change_id=change.pk)


@table_page()
def version_change(request: AuthenticatedHttpRequest, table: Table, change_id: int) -> HttpResponse:
    """A version change: its plan as requested, the rehearsal it rests on (its report), the
    approval (the two-person rule), its run (the rehearsal again under the lock, the steps)."""
    found = get_object_or_404(version_selectors.version_changes_of(table), pk=change_id)
    return render(request, "console/version_change.html", {
        "table": table, "change": found, "decision": DecisionForm(),
        "writer_lock": selectors.writer_lock(table) if found.is_waiting else None})
