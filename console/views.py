"""Thin views: authorise, validate a form, call one service or selector, render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from console import permissions, selectors, services
from console.forms import RegisterTableForm, TimelineFilterForm
from console.models import SyncStatus
from console.tasks import enqueue_sync


@login_required
@require_GET
def catalog(request: HttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    return render(request, "console/catalog.html", {
        "tables": selectors.catalog(), "form": RegisterTableForm(),
        "can_register": request.user.has_perm(permissions.REGISTER)})


@login_required
@require_POST
def register(request: HttpRequest) -> HttpResponse:
    permissions.require(request.user, permissions.REGISTER)
    form = RegisterTableForm(request.POST)
    if form.is_valid():
        try:
            table = services.table_register(path=form.cleaned_data["path"], user=request.user)  # type: ignore[arg-type]
        except ValidationError as exc:
            form.add_error("path", exc)
        else:
            enqueue_sync(table.pk)
            messages.success(request, f"{table.name} registered; its timeline is being synced.")
            return redirect("console:overview", pk=table.pk)
    return render(request, "console/catalog.html", {"tables": selectors.catalog(), "form": form,
                                                    "can_register": True}, status=400)


@login_required
@require_GET
def overview(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    return render(request, "console/overview.html", {"table": table, "overview": selectors.overview(table)})


@login_required
@require_GET
def timeline(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    form = TimelineFilterForm(request.GET)
    filters = selectors.TimelineFilters(**form.cleaned_data) if form.is_valid() else selectors.TimelineFilters()
    page = selectors.timeline_page(table, filters, request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/timeline.html", {
        "table": table, "form": form, "page": page, "axis": selectors.time_axis(list(page.object_list)),
        "actions": selectors.actions_of(table), "states": selectors.STATES, "query": query.urlencode()})


@login_required
@require_GET
def instant_detail(request: HttpRequest, pk: int, instant_id: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    instant = get_object_or_404(table.instants, pk=instant_id)
    contents = selectors.instant_contents(table, instant)
    latest = contents[0].content if contents else None
    return render(request, "console/instant.html", {
        "table": table, "instant": instant, "contents": contents,
        "write_stats": selectors.write_stats(latest),
        "plan_files": selectors.per_partition_files(
            next((c.content for c in contents if c.state == "REQUESTED" and instant.action == "clean"), None),
            "filePathsToBeDeletedPerPartition"),
        "deleted_files": selectors.per_partition_files(latest, "successDeleteFiles") if instant.action in (
            "clean", "rollback") else [],
        "savepoint_files": selectors.per_partition_files(latest, "savepointDataFile") if instant.action == "savepoint"
        else []})


@login_required
@require_GET
def file_groups(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    partitions, chosen, groups = selectors.file_groups(table, request.GET.get("partition"))
    return render(request, "console/file_groups.html", {
        "table": table, "partitions": partitions, "partition": chosen, "groups": groups})


@login_required
@require_POST
def sync(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.SYNC)
    enqueue_sync(table.pk)
    messages.info(request, f"Sync of {table.name} queued.")
    return redirect("console:overview", pk=table.pk)


@login_required
@require_GET
def sync_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The sync badge; htmx polls it while a sync is queued or running."""
    table = permissions.visible_table(request.user, pk)
    live = table.sync_status in (SyncStatus.QUEUED, SyncStatus.RUNNING)
    return render(request, "console/_sync_status.html", {"table": table, "live": live})
